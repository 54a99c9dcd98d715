"""RLlib callbacks (new API stack): per-UE, fairness and network metrics of mobile-env episodes,
and the arena's per-agent counts."""

from __future__ import annotations

from ray.rllib.callbacks.callbacks import RLlibCallback

from mobrl.envs.factory import find_core, find_env
from mobrl.netstats import EpisodeTracker, core_step_snapshot

_TRACKER = "mobrl_tracker"


class MobileMetricsCallback(RLlibCallback):
    """Track every mobile-env episode and log its metrics when it ends.

    Values are logged with `reduce="mean"`, so Tune's results (and TensorBoard) show the mean
    over the episodes of an iteration under `env_runners/<tag>`.
    """

    def on_episode_start(self, *, episode, env=None, env_index: int = 0, **kwargs) -> None:
        core = find_core(env, env_index)
        if core is not None:  # the env (and its core) stays the same for the whole episode
            episode.custom_data[_TRACKER] = (core, EpisodeTracker(core.NUM_STATIONS))

    def on_episode_step(self, *, episode, **kwargs) -> None:
        tracked = episode.custom_data.get(_TRACKER)
        if tracked is not None:
            core, tracker = tracked
            tracker.record_step(*core_step_snapshot(core))

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        tracked = episode.custom_data.pop(_TRACKER, None)
        if tracked is None or metrics_logger is None:
            return
        _, tracker = tracked
        log_episode_summary(metrics_logger, tracker.summary())


#: mobrl's UE and network metrics are means over this many of the last episodes
EPISODE_METRICS_WINDOW = 100


def log_episode_summary(metrics_logger, summary: dict[str, float]) -> None:
    """Log one episode's `EpisodeTracker.summary()`; Tune then shows each metric's mean over
    the last episodes under `env_runners/<tag>`."""
    for tag, value in summary.items():
        if value == value:  # NaN (e.g. no serving link all episode) would poison the mean
            metrics_logger.log_value(tag, value, reduce="mean", window=EPISODE_METRICS_WINDOW)


_STATS = "mobrl_episode_stats"


class ArenaMetricsCallback(RLlibCallback):
    """Log the arena's per-episode counts (cells discovered, collisions) when it ends.

    The counts are read after every step: when RLlib calls `on_episode_end` the env may
    already have started the next episode."""

    def on_episode_step(self, *, episode, env=None, env_index: int = 0, **kwargs) -> None:
        arena = find_env(env, lambda node: hasattr(node, "episode_stats"), env_index)
        if arena is not None:
            episode.custom_data[_STATS] = arena.episode_stats()

    def on_episode_end(self, *, episode, metrics_logger=None, **kwargs) -> None:
        stats = episode.custom_data.pop(_STATS, None)
        if stats and metrics_logger is not None:
            for key, value in stats.items():
                metrics_logger.log_value(key, float(value), reduce="mean", window=100)
