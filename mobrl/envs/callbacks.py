"""RLlib callbacks (new API stack): the measures of every training episode (per-UE, fairness
and network metrics of mobile-env, an env's own counts such as the arena's) as Tune results,
and each episode's return for the training return (`training.return_window`)."""

from __future__ import annotations

from ray.rllib.callbacks.callbacks import RLlibCallback

from mobrl.core.metrics import EPISODE_RETURNS
from mobrl.envs.netstats import EpisodeRecorder

_RECORDER = "mobrl_recorder"
#: at most this many episodes per env runner and iteration enter mobrl's episode metrics (RLlib
#: averages a logged mean over the episodes that ended in the iteration)
EPISODE_METRICS_WINDOW = 100


class EpisodeMetricsCallback(RLlibCallback):
    """Record every episode (`netstats.EpisodeRecorder`) and log its measures when it ends.

    Values are logged with `reduce="mean"`, so Tune's results (and TensorBoard) show the mean
    over the last episodes under `env_runners/<tag>`. mobrl's lean env runner records the
    same episodes itself (`records_in_lean_loop`), with the same recorder at the same steps.
    """

    #: `lean_runner.LeanEnvRunner` does this callback's work in its loop on arrays
    records_in_lean_loop = True

    def on_episode_start(self, *, episode, env=None, env_index: int = 0, **kwargs) -> None:
        # the env (and its core) stays the same for the whole episode
        episode.custom_data[_RECORDER] = EpisodeRecorder(env, env_index)

    def on_episode_step(self, *, episode, **kwargs) -> None:
        recorder = episode.custom_data.get(_RECORDER)
        if recorder is not None:
            recorder.step()

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        recorder = episode.custom_data.pop(_RECORDER, None)
        if recorder is not None and metrics_logger is not None:
            log_episode_summary(metrics_logger, recorder.summary())


def log_episode_summary(metrics_logger, summary: dict[str, float]) -> None:
    """Log one episode's measures; Tune then shows each metric's mean over the last episodes
    under `env_runners/<tag>`."""
    for tag, value in summary.items():
        if value == value:  # NaN (e.g. no serving link all episode) would poison the mean
            metrics_logger.log_value(tag, value, reduce="mean", window=EPISODE_METRICS_WINDOW)


def log_episode_return(
    *, episode, metrics_logger=None, env_runner=None, prev_episode_chunks=(), **kwargs
) -> None:
    """`on_episode_end` of every env runner: the episode's return (all agents' rewards), one
    item per episode, which the algorithm folds into a training return that spans iterations
    (RLlib's own mean covers only the episodes of one iteration). Runners whose episodes are
    not RLlib's (UE slots: a slot's episode is one UE's) log their own."""
    if metrics_logger is not None and not getattr(env_runner, "logs_episode_returns", False):
        # an episode longer than a rollout fragment arrives in chunks: its return sums them all,
        # as RLlib's own episode metrics do
        total = episode.get_return() + sum(chunk.get_return() for chunk in prev_episode_chunks)
        metrics_logger.log_value(EPISODE_RETURNS, float(total), reduce="item_series")


# an env runner that logs each episode's return itself may skip its per-episode hooks
log_episode_return.lean_safe = True  # type: ignore[attr-defined]
