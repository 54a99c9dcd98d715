"""Metric keys: the names of results in Tune, progress.csv and TensorBoard, defined once."""

#: mean episode return over the last episodes sampled (RLlib new API stack)
RETURN_MEAN = "env_runners/episode_return_mean"
EPISODE_LEN_MEAN = "env_runners/episode_len_mean"
#: per-agent mean return: f"{AGENT_RETURN_MEAN}/{agent_id}"
AGENT_RETURN_MEAN = "env_runners/agent_episode_returns_mean"
ENV_STEPS = "num_env_steps_sampled_lifetime"
ITERATION = "training_iteration"
TIME_TOTAL = "time_total_s"

#: Tune's TensorBoard logger writes every result key under this prefix
TENSORBOARD_PREFIX = "ray/tune/"


def tensorboard_tag(key: str) -> str:
    """The TensorBoard tag under which Tune logs result `key`."""
    return TENSORBOARD_PREFIX + key
