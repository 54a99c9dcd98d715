"""The training return: the mean of the last episodes across iterations, not of one iteration."""

from __future__ import annotations

import math
from types import SimpleNamespace

from mobrl.core import metrics
from mobrl.envs.callbacks import log_episode_return
from mobrl.training.return_window import fold_returns


def _iteration(algo: object, returns: object, rllib_mean: float = 0.0) -> dict:
    runners = {"episode_return_mean": rllib_mean}
    if returns is not None:
        runners[metrics.EPISODE_RETURNS] = returns
    result = {"env_runners": runners}
    fold_returns(algorithm=algo, result=result, metrics_logger=None)
    return result["env_runners"]


def test_the_training_return_spans_iterations_up_to_the_window() -> None:
    algo = SimpleNamespace()
    first = _iteration(algo, [10.0] * 15)
    assert first["episode_return_mean"] == 10.0 and first["episode_return_episodes"] == 15
    assert metrics.EPISODE_RETURNS not in first  # folded in, not a column of progress.csv
    # one lucky episode ends: RLlib would report 500 alone; the window holds the last 20
    lucky = _iteration(algo, 500.0, rllib_mean=500.0)  # a lone item may come unwrapped
    assert lucky["episode_return_mean"] == (15 * 10.0 + 500.0) / 16
    none = _iteration(algo, None, rllib_mean=math.nan)  # no episode ended this iteration
    assert none["episode_return_mean"] == lucky["episode_return_mean"]
    full = _iteration(algo, [20.0] * 10)
    assert full["episode_return_episodes"] == metrics.RETURN_WINDOW
    assert full["episode_return_mean"] == (9 * 10.0 + 500.0 + 10 * 20.0) / 20
    # another algorithm (another trial) starts its own window
    assert math.isnan(_iteration(SimpleNamespace(), None)["episode_return_mean"])


class _Logger:
    def __init__(self) -> None:
        self.logged: list[tuple[str, object, dict]] = []

    def log_value(self, key: str, value: object, **kwargs: object) -> None:
        self.logged.append((key, value, kwargs))


def test_the_window_goes_into_checkpoints_and_a_restored_trial_carries_it_on() -> None:
    from mobrl.training.return_window import SAVED

    algo, logger = SimpleNamespace(), _Logger()
    result = {"env_runners": {metrics.EPISODE_RETURNS: [float(r) for r in range(25)]}}
    fold_returns(algorithm=algo, result=result, metrics_logger=logger)
    # kept in the algorithm's MetricsLogger until the next iteration (RLlib saves its state
    # in every checkpoint), as an item that the next reduce hands back
    (key, saved, kwargs) = logger.logged[-1]
    assert key == SAVED and saved == [float(r) for r in range(5, 25)]
    assert kwargs == {"reduce": "item"}
    # a trial restored from that checkpoint (a new algorithm object, or PBT's exploit of an
    # existing one) carries on the saved window, and the item is no column of its files
    for restored in (SimpleNamespace(), algo):
        result = {SAVED: list(saved), "env_runners": {metrics.EPISODE_RETURNS: [100.0]}}
        fold_returns(algorithm=restored, result=result, metrics_logger=_Logger())
        assert SAVED not in result
        assert result["env_runners"]["episode_return_episodes"] == metrics.RETURN_WINDOW
        assert result["env_runners"]["episode_return_mean"] == (sum(range(6, 25)) + 100) / 20


def _chunk(ret: float) -> SimpleNamespace:
    return SimpleNamespace(get_return=lambda: ret)


def test_an_episode_in_chunks_logs_its_whole_return() -> None:
    logger = _Logger()
    log_episode_return(
        episode=_chunk(30.0),
        metrics_logger=logger,
        prev_episode_chunks=[_chunk(100.0), _chunk(70.0)],
    )
    assert logger.logged == [(metrics.EPISODE_RETURNS, 200.0, {"reduce": "item_series"})]
    # a runner that logs its own episodes (UE slots) is left alone
    slots = SimpleNamespace(logs_episode_returns=True)
    log_episode_return(episode=_chunk(1.0), metrics_logger=logger, env_runner=slots)
    assert len(logger.logged) == 1
