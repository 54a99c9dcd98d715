"""Metric math on hand-made episodes with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mobrl.core import metrics as keys
from mobrl.envs.netstats import EpisodeTracker, jain_index, percentile, utility_to_unit


def test_jain_index_known_values() -> None:
    assert jain_index([1, 1, 1, 1]) == pytest.approx(1.0)
    assert jain_index([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([2, 2]) == pytest.approx(1.0)
    # (1+3)^2 / (2 * (1+9)) = 16/20
    assert jain_index([1, 3]) == pytest.approx(0.8)
    assert jain_index([0, 0, 0]) == 1.0
    assert math.isnan(jain_index([]))
    with pytest.raises(ValueError):
        jain_index([-1, 1])


def test_percentile_interpolates() -> None:
    values = list(range(21))  # 0..20: the 5th percentile is 1.0
    assert percentile(values, 5) == pytest.approx(1.0)
    assert percentile([3.0], 5) == 3.0
    assert math.isnan(percentile([], 5))


def test_utility_mapping() -> None:
    assert utility_to_unit(-1) == 0 and utility_to_unit(1) == 1 and utility_to_unit(0) == 0.5


def _links(num_stations: int, n: int, served: dict[int, int]) -> np.ndarray:
    links = np.zeros((num_stations, n), dtype=bool)
    for ue, bs in served.items():
        links[bs, ue] = True
    return links


def test_two_ues_two_steps() -> None:
    t = EpisodeTracker(num_stations=2, ue_ids=[0, 1])
    snr = np.array([[10.0, 0.0], [20.0, 4.0]])
    # step 1: UE 0 served by BS 0 (SNR 10 dB), UE 1 unserved
    t.record(np.array([0.5, -1.0]), np.array([20.0, 0.0]), _links(2, 2, {0: 0}), snr)
    # step 2: UE 0 hands over to BS 1 (-> 2 connection changes), UE 1 joins BS 1
    t.record(np.array([0.7, 0.1]), np.array([10.0, 10.0]), _links(2, 2, {0: 1, 1: 1}), snr)
    per_ue = t.per_ue()
    assert per_ue[0][keys.UE_UTILITY] == pytest.approx(0.6)
    assert per_ue[0][keys.UE_RATE] == pytest.approx(15.0)
    assert per_ue[0][keys.UE_SNR] == pytest.approx(15.0)
    assert per_ue[0][keys.UE_CONNECTED] == 1.0
    assert per_ue[0][keys.UE_CHANGES] == 3  # connect to 0, then drop 0 and add 1
    assert per_ue[1][keys.UE_CONNECTED] == 0.5
    assert per_ue[1][keys.UE_SNR] == pytest.approx(4.0)
    assert per_ue[1][keys.UE_CONNECTIONS] == 0.5

    s = t.summary()
    assert s[keys.UTILITY_MEAN] == pytest.approx((0.6 + -0.45) / 2)
    assert s[keys.UTILITY_MIN] == pytest.approx(-0.45)
    assert s[keys.UTILITY_MAX] == pytest.approx(0.6)
    # two values: p5 interpolates 5 % of the way from min to max
    assert s[keys.UTILITY_P5] == pytest.approx(-0.45 + 0.05 * 1.05)
    assert s[keys.JAIN_RATE] == pytest.approx(jain_index([15.0, 5.0]))
    assert s[keys.JAIN_UTILITY] == pytest.approx(jain_index([0.8, 0.275]))
    assert s[keys.NET_CONNECTED] == pytest.approx((0.5 + 1.0) / 2)
    assert s[keys.NET_CONNECTIONS_PER_BS] == pytest.approx((1 / 2 + 2 / 2) / 2)
    assert s[keys.NET_BS_BUSY] == pytest.approx((1 / 2 + 1 / 2) / 2)
    assert s[keys.NET_UTILITY] == pytest.approx(((0.5 - 1.0) / 2 + (0.7 + 0.1) / 2) / 2)
    assert s[keys.ue_tag(1, keys.UE_UTILITY)] == pytest.approx(-0.45)


def test_ue_that_leaves_counts_only_while_active() -> None:
    t = EpisodeTracker(num_stations=1, ue_ids=[0, 1])
    snr = np.zeros((1, 2))
    t.record(np.array([1.0, 0.0]), np.array([5.0, 5.0]), _links(1, 2, {0: 0, 1: 0}), snr)
    for _ in range(2):  # UE 1 departed: not active (NaN), its old link no longer counts
        t.record(np.array([1.0, np.nan]), np.array([10.0, 0.0]), _links(1, 2, {0: 0, 1: 0}), snr)
    per_ue = t.per_ue()
    assert per_ue[1][keys.UE_UTILITY] == 0.0  # one active step, not diluted by absent steps
    assert per_ue[1][keys.UE_CONNECTED] == 1.0
    assert per_ue[0][keys.UE_RATE] == pytest.approx(25 / 3)
    assert t.summary()[keys.NET_CONNECTED] == 1.0


def test_empty_steps_are_ignored() -> None:
    t = EpisodeTracker(num_stations=3, ue_ids=[0])
    t.record(np.array([np.nan]), np.zeros(1), np.zeros((3, 1), dtype=bool), np.zeros((3, 1)))
    assert t.summary() == {}


@pytest.mark.parametrize("scenario", ["small", "dense_urban"])  # dense_urban: UEs come and go
def test_both_engines_give_the_same_episode_measures(scenario: str) -> None:
    """Stock mobile-env read through its objects and the fast engine's own arrays: one
    tracker, the same numbers."""
    from mobrl.envs.netstats import step_arrays
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    stock, fast = make_mobile_core(scenario, "ma", "stock"), make_mobile_core(scenario, "ma")
    rng = np.random.default_rng(3)
    for _ in range(2):  # two episodes, so the second starts from a used env
        stock.reset()
        fast.reset()
        ids = sorted(stock.users)
        trackers = [EpisodeTracker(core.NUM_STATIONS, ids) for core in (stock, fast)]
        done = False
        while not done:
            actions = {
                ue.ue_id: int(rng.integers(0, stock.NUM_STATIONS + 1)) for ue in stock.active
            }
            for core, tracker in zip((stock, fast), trackers):
                *_, done, _ = core.step(actions)
                tracker.record(*step_arrays(core, ids))
        expected, got = (tracker.summary() for tracker in trackers)
        assert sorted(got) == sorted(expected)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12, nan_ok=True), key
