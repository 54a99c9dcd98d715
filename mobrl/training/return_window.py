"""The training return: the mean return of the last `metrics.RETURN_WINDOW` episodes, across
iterations.

RLlib (2.60, new API stack) reports `env_runners/episode_return_mean` as the mean of only the
episodes that ended during the iteration, whatever `metrics_num_episodes_for_smoothing` says:
an iteration in which one lucky episode ends reports that episode alone, and stop criteria,
checkpoint scores and trial ranks then act on it. Env runners log each episode's return
(`envs.callbacks.log_episode_return`); here, after each iteration, the algorithm keeps the last
`RETURN_WINDOW` of them and writes their mean under RLlib's key, with how many it averages
(`metrics.RETURN_EPISODES`; fewer early in a run).

Between iterations the window also waits in the algorithm's MetricsLogger, whose state RLlib
writes into every checkpoint: a trial restored from a checkpoint (`--resume`, a retried trial,
PBT's exploit) carries on the window it had, so a `run.stop.return_mean` rule never acts on
the few episodes of the first iteration after the restore."""

from __future__ import annotations

from collections import deque
from typing import Any

from mobrl.core import metrics

NAN = float("nan")

#: the window lives on the algorithm: one per trial, whatever copies of the config exist
_ATTR = "_mobrl_return_window"
#: the window as saved in the algorithm's MetricsLogger (an `item`: kept until the next
#: iteration's reduce, which hands it back at the top of that iteration's result)
SAVED = "mobrl_return_window"


def fold_returns(
    *, algorithm: Any, result: dict[str, Any], metrics_logger: Any = None, **kwargs: Any
) -> None:
    """`on_train_result`: this iteration's episode returns into the window; the window's
    mean as the training return (NaN until an episode has ended)."""
    saved = result.pop(SAVED, None)  # not a column of the trial's files
    window = getattr(algorithm, _ATTR, None)
    if isinstance(saved, list) or window is None:
        # the window as the last iteration, or the checkpoint just restored, left it
        window = deque(saved if isinstance(saved, list) else (), maxlen=metrics.RETURN_WINDOW)
        setattr(algorithm, _ATTR, window)
    runners = result.get("env_runners")
    if not isinstance(runners, dict):
        _save(metrics_logger, window)
        return
    returns = runners.pop(metrics.EPISODE_RETURNS, None)
    if returns is not None:
        # a list of the iteration's returns (a lone item may come unwrapped)
        window.extend(float(r) for r in (returns if isinstance(returns, list) else [returns]))
    runners[_in_runners(metrics.RETURN_MEAN)] = sum(window) / len(window) if window else NAN
    runners[_in_runners(metrics.RETURN_EPISODES)] = len(window)
    _save(metrics_logger, window)


def _save(metrics_logger: Any, window: deque) -> None:
    """The window into the algorithm's MetricsLogger, and so into the next checkpoint."""
    if metrics_logger is not None:
        metrics_logger.log_value(SAVED, list(window), reduce="item")


def _in_runners(key: str) -> str:
    """A key of the `env_runners` section, without the section."""
    return key.removeprefix("env_runners/")
