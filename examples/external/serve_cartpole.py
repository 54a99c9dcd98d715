"""Gymnasium's CartPole behind mobrl.external: each client gets its own env.

    python examples/external/serve_cartpole.py               # 127.0.0.1:5555
    python examples/external/serve_cartpole.py 127.0.0.1:0   # any free port (printed)

then `mobrl.external.connect("127.0.0.1:5555")` is a CartPole stepping in this process.
"""

import sys

import gymnasium as gym

from mobrl.external import serve_env

if __name__ == "__main__":
    address = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:5555"
    serve_env(lambda: gym.make("CartPole-v1"), address, name="CartPole-v1")
