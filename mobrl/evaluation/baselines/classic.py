"""mobrl's first baselines: random actions, no change, one link to the strongest station
(greedy, by SINR; greedy_rsrp, by received power), every station in range (full), and
CartPole's pole-angle controller."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.evaluation.baselines.base import (
    Baseline,
    PerUEBaseline,
    first,
    link_arrays,
    ue_link_state,
)


class RandomPolicy(Baseline):
    """Uniformly random actions from each agent's action space (seeded per episode)."""

    name = "random"
    reads_observation = False

    def act(self, observation: Any, env: Any = None) -> Any:
        if isinstance(observation, dict):
            return {a: _sample(env.action_spaces[a], self.rng) for a in observation}
        return _sample(env.action_space, self.rng)


def _sample(space: Any, rng: np.random.Generator) -> Any:
    space.seed(int(rng.integers(2**31)))
    return space.sample()


class NoopPolicy(PerUEBaseline):
    """Never changes a connection (UEs stay unconnected)."""

    name = "noop"

    def ue_action(self, core: Any, ue: Any) -> int:
        return 0

    def station_actions(self, core: Any) -> np.ndarray:
        return np.zeros(len(core.users), dtype=int)


class GreedyPolicy(PerUEBaseline):
    """Each UE keeps exactly one connection, to its strongest-SNR base station (the SINR under
    interference): connect to it, then release any other connection (an action toggles one
    connection per step)."""

    name = "greedy"
    frees_slots = True
    measure = "sinr"

    def ue_action(self, core: Any, ue: Any) -> int:
        reachable, connected, snrs = ue_link_state(core, ue, self.measure)
        if not reachable:
            return 0
        best = max(reachable, key=lambda bs: snrs[bs])
        if best not in connected:
            return best.bs_id + 1
        others = sorted(connected - {best}, key=lambda bs: bs.bs_id)
        return others[0].bs_id + 1 if others else 0

    def station_actions(self, core: Any) -> np.ndarray:
        from mobrl.network.service import greedy_moves

        return greedy_moves(*link_arrays(core, self.measure))


class GreedyRsrpPolicy(GreedyPolicy):
    """`greedy` by received power (3GPP's RSRP-based cell selection): each UE keeps one
    connection, to the station it receives strongest, whatever the interference there (the
    same decisions as `greedy` in mobile-env's model, which has none)."""

    name = "greedy_rsrp"
    measure = "rsrp"


class FullPolicy(PerUEBaseline):
    """Each UE connects to every base station it can reach."""

    name = "full"

    def ue_action(self, core: Any, ue: Any) -> int:
        reachable, connected, _ = ue_link_state(core, ue)
        missing = [bs for bs in reachable if bs not in connected]
        return missing[0].bs_id + 1 if missing else 0

    def station_actions(self, core: Any) -> np.ndarray:
        _, reach, linked = link_arrays(core)
        return first(reach & ~linked)


class PoleAnglePolicy(Baseline):
    """CartPole: push the cart towards the side the pole is falling to (angle + angular
    velocity), the classic hand-written controller."""

    name = "pole_angle"

    def act(self, observation: Any, env: Any = None) -> Any:
        angle, angular_velocity = float(observation[2]), float(observation[3])
        return int(angle + angular_velocity > 0)


RULES = (RandomPolicy, NoopPolicy, GreedyPolicy, GreedyRsrpPolicy, FullPolicy, PoleAnglePolicy)
