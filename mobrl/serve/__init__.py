"""`mobrl serve`: a trained policy answering a network controller over HTTP, in one process
without Ray. The policy as `mobrl evaluate` loads it and what a request must hold
(`policy.py`), the API (`app.py`: FastAPI), measurements turned into the policy's observations
with the engine's own code (`decide.py`), the token, body limits and metrics around every
request (`guard.py`, `metrics.py`), and the command: bind, print, run uvicorn, stop on SIGTERM
or Ctrl-C (`server.py`). FastAPI, uvicorn and prometheus-client come with the `serve` extra."""
