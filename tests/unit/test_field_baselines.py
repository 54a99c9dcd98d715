"""The field's rules (mobrl.evaluation.baselines: greedy_fill, DeepCoMP's dynamic selection and
static clusters, 3GPP A3) do what their sources say, on tiny hand-made states, and their array
code acts as their per-UE definitions."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.evaluation.baselines.deepcomp import static_clusters
from mobrl.evaluation.policies import BASELINES


class _Station:
    def __init__(self, bs_id: int, x: float, y: float):
        self.bs_id, self.x, self.y = bs_id, x, y


class _UE:
    def __init__(self, ue_id: int):
        self.ue_id, self.snr_threshold = ue_id, 1.0


class _Channel:
    def __init__(self, core: _Core):
        self.core = core

    def snr(self, bs: _Station, ue: _UE) -> float:
        return float(self.core.snr[bs.bs_id, ue.ue_id])


class _Core:
    """What the rules read of a mobile-env core: stations, UEs, SNRs (threshold 1), links, the
    active UEs and the time. `links` holds (station, UE) pairs."""

    def __init__(self, snr: list[list[float]], links=(), xs: list[float] | None = None):
        self.snr = np.asarray(snr, dtype=float)
        n_bs, n_ue = self.snr.shape
        xs = xs if xs is not None else [100.0 * b for b in range(n_bs)]
        self.stations = {b: _Station(b, xs[b], 0.0) for b in range(n_bs)}
        self.users = {u: _UE(u) for u in range(n_ue)}
        self.channel = _Channel(self)
        self.active = list(self.users.values())
        self.time = 0
        self.connections: dict[_Station, set[_UE]] = {bs: set() for bs in self.stations.values()}
        for b, u in links:
            self.link(b, u)

    def link(self, b: int, u: int) -> None:
        self.connections[self.stations[b]].add(self.users[u])

    def unlink(self, b: int, u: int) -> None:
        self.connections[self.stations[b]].discard(self.users[u])

    def apply(self, actions: list[int]) -> None:
        """Each UE's station action (b + 1 toggles station b), then one time step on."""
        for u, action in enumerate(actions):
            if action:
                bs, ue = self.stations[action - 1], self.users[u]
                (self.unlink if ue in self.connections[bs] else self.link)(action - 1, u)
        self.time += 1


def _acts(policy, core: _Core) -> list[int]:
    """The rule's actions for every UE, checked equal between its per-UE definition and its
    array code."""
    per_ue = [policy.ue_action(core, ue) for _, ue in sorted(core.users.items())]
    assert policy.station_actions(core).tolist() == per_ue
    return per_ue


def _policy(name: str):
    policy = BASELINES[name]()
    policy.reset(0)
    return policy


def test_greedy_fill_links_an_idle_station_to_its_strongest_ue() -> None:
    # both UEs are strongest at station 0; station 1 is idle under greedy and reaches UE 1 best
    core = _Core([[50.0, 40.0], [2.0, 8.0]], links=[(0, 0), (0, 1)])
    assert _acts(_policy("greedy"), core) == [0, 0]
    assert _acts(_policy("greedy_fill"), core) == [0, 2]
    core.link(1, 1)
    assert _acts(_policy("greedy_fill"), core) == [0, 0]  # it keeps both
    # a station that is some UE's strongest is not idle: a UE linked there too releases it
    core = _Core([[50.0, 2.0], [40.0, 8.0]], links=[(0, 0), (1, 0), (1, 1)])
    assert _acts(_policy("greedy_fill"), core) == [2, 0]
    # the strongest station comes first: an unlinked UE connects there before anything else
    core = _Core([[50.0, 40.0], [2.0, 8.0]])
    assert _acts(_policy("greedy_fill"), core) == [1, 1]


def test_greedy_fill_leaves_out_ues_that_are_not_active() -> None:
    core = _Core([[50.0, 40.0], [2.0, 8.0]], links=[(0, 0)])
    core.active = [core.users[0]]  # UE 1 is gone: station 1 fills UE 0
    actions = _policy("greedy_fill").station_actions(core).tolist()
    assert actions[0] == 2 == _policy("greedy_fill").ue_action(core, core.users[0])


def test_dynamic_selection_takes_stations_within_epsilon_of_the_strongest() -> None:
    # SNRs 10, 5 and 4.9 (linear): with ε = 0.5 the threshold is 5, so station 2 is left out
    snr = [[10.0], [5.0], [4.9], [0.5]]  # station 3 is out of range
    policy = _policy("deepcomp_dynamic")
    assert policy.epsilon == 0.5
    core = _Core(snr)
    chosen = []
    for _ in range(4):
        (action,) = _acts(policy, core)
        chosen.append(action)
        core.apply([action])
    assert chosen == [1, 2, 0, 0]  # the strongest first, then the next within ε, then keep
    # a link outside the set is released before any missing one is connected
    core = _Core(snr, links=[(2, 0)])
    assert _acts(policy, core) == [3]
    # ε = 0.8: the strongest alone (5 < 8)
    core = _Core(snr, links=[(0, 0), (1, 0)])
    assert _acts(_policy("deepcomp_dynamic_eps08"), core) == [2]
    assert _acts(policy, core) == [0]


def test_static_clusters_group_each_station_with_its_nearest() -> None:
    pairs = np.array([[0.0, 0.0], [10.0, 0.0], [200.0, 0.0], [210.0, 0.0]])
    for seed in range(5):  # wherever a group starts, its nearest station joins it
        groups = static_clusters(pairs, 2, seed)
        assert groups[0] == groups[1] != groups[2] == groups[3]
    line = np.array([[100.0 * i, 0.0] for i in range(5)])
    for size, sizes in ((1, [1] * 5), (2, [1, 2, 2]), (3, [2, 3])):
        assert sorted(np.bincount(static_clusters(line, size, 0)).tolist()) == sizes


def test_static_clusters_serve_a_ue_from_its_strongest_stations_group() -> None:
    policy = _policy("deepcomp_static")
    assert policy.cluster_size == 2
    xs = [0.0, 10.0, 200.0, 210.0]  # groups {0, 1} and {2, 3}
    snr = [[3.0], [9.0], [8.0], [2.0]]  # strongest: station 1, so stations 0 and 1
    core = _Core(snr, links=[(2, 0)], xs=xs)
    assert _acts(policy, core) == [3]  # station 2 is outside the group: released first
    core.apply([3])
    assert _acts(policy, core) == [2]  # then the group, strongest first
    core.apply([2])
    assert _acts(policy, core) == [1]
    core.apply([1])
    assert _acts(policy, core) == [0]


def _a3_run(snr_of_station_1: list[float], name: str = "a3_ttt2") -> list[int]:
    """UE 0, served by station 0 (SNR 10), sees station 1 at the given SNRs, one a step; the
    A3 rule's actions, per-UE and array code each keeping their own counts."""
    per_ue, arrays = _policy(name), _policy(name)
    core = _Core([[10.0], [0.0]], links=[(0, 0)])
    actions = []
    for value in snr_of_station_1:
        core.snr[1, 0] = value
        (action,) = [per_ue.ue_action(core, ue) for _, ue in sorted(core.users.items())]
        assert arrays.station_actions(core).tolist() == [action]
        actions.append(action)
        core.apply([action])
    return actions


def test_a3_hands_over_only_after_ttt_steps_above_the_hysteresis() -> None:
    assert (_policy("a3").hysteresis_db, _policy("a3").ttt) == (3.0, 1)
    assert (_policy("a3_ttt2").hysteresis_db, _policy("a3_ttt2").ttt) == (3.0, 2)
    above, below = 25.0, 19.0  # 3 dB above 10 is 19.95
    # TTT 2: the condition on one step only is no handover; on two in a row, handover on the
    # second; a step below restarts the count
    assert _a3_run([above, below, above, below]) == [0, 0, 0, 0]
    assert _a3_run([above, above]) == [0, 2]
    assert _a3_run([above, below, above, above]) == [0, 0, 0, 2]
    # TTT 1: at the first step above the hysteresis
    assert _a3_run([below, above], "a3") == [0, 2]
    # 2.8 dB better for ever is not enough
    assert _a3_run([below] * 6) == [0] * 6
    assert _a3_run([below] * 6, "a3") == [0] * 6
    # after the handover (connect station 1), the old link is released the next step
    assert _a3_run([above, above, above, above]) == [0, 2, 1, 0]


def test_a3_connects_an_unconnected_ue_to_its_strongest_station() -> None:
    core = _Core([[3.0, 0.5], [7.0, 0.2]])  # UE 1 reaches no station
    assert _acts(_policy("a3"), core) == [2, 0]


@pytest.mark.parametrize("layout", ["medium", "dense_urban"])
def test_a3_counts_the_same_in_both_codes_over_an_episode(layout: str) -> None:
    """The per-UE definition and the array code, each keeping its own counts, pick the same
    actions over a whole episode played by the array code."""
    from mobrl.envs.factory import env_config_from, make_env
    from mobrl.envs.wrappers import find_core
    from mobrl.training.checks import validate_command_line

    config = env_config_from(validate_command_line([f"scenario={layout}", "env=central"]))
    env = make_env(config)
    arrays, per_ue = _policy("a3_ttt2"), _policy("a3_ttt2")
    obs, _ = env.reset(seed=5)
    handovers = 0
    for _ in range(100):
        action = arrays.act(obs, env)
        core = find_core(env)
        active = set(core.active)
        expected = [
            per_ue.ue_action(core, ue) if ue in active else 0
            for _, ue in sorted(core.users.items())
        ]
        assert action.tolist() == expected
        handovers += int(np.count_nonzero(action))
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    assert handovers > 0


def test_greedy_fill_under_interference_keeps_only_fill_links_that_serve_better() -> None:
    # umi_dense (active interference, proportional fair): a fill link lights an idle station
    # that interferes with every UE near it; greedy_fill keeps it only where it raises the
    # step's summed utility over greedy's links, each fill scored alone with the env's own
    # arithmetic
    from mobrl import scenarios
    from mobrl.evaluation.baselines import fill
    from mobrl.network.service import greedy_links, link_state, toward
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core(scenarios.load(scenarios.path_of("umi_dense")), "ma")
    core.reset(seed=1)
    kept = dropped = 0
    for _ in range(40):
        state = link_state(core)
        snr, reach, _ = fill.link_arrays(core)
        target = fill._targets(snr, reach & fill.active_mask(core)[None, :])
        worth = fill._worth_filling(core, target, snr)
        best = np.argmax(np.where(target, snr, -np.inf), axis=0)
        greedy = np.zeros_like(target)
        has = np.flatnonzero(target.any(axis=0))
        greedy[best[has], has] = True
        base = float(state.utility_sum(greedy))
        for b, u in np.argwhere(target & ~greedy):
            alone = greedy.copy()
            alone[b, u] = True
            gain = float(state.utility_sum(alone)) - base
            assert worth[b, u] == (gain > 1e-12), (b, u, gain)
            kept += bool(worth[b, u])
            dropped += not worth[b, u]
        core.step_arrays(toward(state, greedy_links(state)))
    assert kept and dropped  # both happen on this layout
