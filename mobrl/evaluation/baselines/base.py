"""What every heuristic baseline shares: the `Baseline` interface, per-UE rules played for all
UEs at once (`PerUEBaseline`), and the step's link arrays they read."""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.core.protocols import SnrArrays, implements
from mobrl.network.association import strongest  # noqa: F401 (the rules import it here)


class Baseline:
    """A heuristic policy; `reset(seed)` starts an episode, `act` reads the env's state."""

    name = "baseline"
    #: False: `act` reads only the env's state and the agents' names, never the values of the
    #: observation (the episode is then played without computing observations)
    reads_observation = True
    #: a rule not in a scenario kind's default set applies wherever this baseline does
    #: (None: only where the kind lists it)
    applies_like: str | None = None

    @classmethod
    def check_plays(cls, env_config: dict[str, Any], flag: str = "--baselines") -> None:
        """A one-line error if this baseline cannot play `env_config`, an env it applies to
        (`mobrl.evaluation.policies.check_baselines`); by default it plays every one."""

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: Any, env: Any = None) -> Any:
        raise NotImplementedError


class PerUEBaseline(Baseline):
    """A rule applied to each active UE of a mobile-env scenario, in `ma` or `central` mode.

    Rules choose mobile-env's station actions (b + 1 toggles station b). With `env.obs=topk`
    a UE acts on its k station slots instead: the station's slot is played, and a station
    outside the slots cannot be toggled (noop), except that a rule with `frees_slots` then
    releases the UE's weakest link in its slots to make room (`frees_slot` says for which
    actions; by default all)."""

    frees_slots = False
    reads_observation = False
    applies_like = "greedy"

    def ue_action(self, core: Any, ue: Any) -> int:
        """The station action of one UE (the rule's definition)."""
        raise NotImplementedError

    def station_actions(self, core: Any) -> np.ndarray:
        """Every UE's station action at once, UEs in id order: the same actions as
        `ue_action`, from one step's (BS, UE) arrays (rules override it with array code)."""
        return np.asarray([self.ue_action(core, ue) for _, ue in sorted(core.users.items())])

    def frees_slot(self, core: Any, ue: Any, action: int) -> bool:
        """Whether `ue`, wanting to toggle station `action - 1` that lies outside its topk
        slots, releases its weakest link in them instead (the per-UE definition)."""
        return self.frees_slots

    def slot_frees(self, core: Any, actions: np.ndarray) -> np.ndarray:
        """`frees_slot` of every UE (UE order) at once."""
        return np.full(len(actions), self.frees_slots)

    def act(self, observation: Any, env: Any = None) -> Any:
        from mobrl.envs.observations import ue_columns
        from mobrl.envs.wrappers import find_core, ue_id

        core = find_core(env)
        if core is None:
            raise UserError(f"baseline '{self.name}' needs a mobile-env scenario.")
        chosen = self.station_actions(core)
        if isinstance(observation, dict):
            k = getattr(core.handler, "topk", None)
            if k is not None:
                chosen = self.slot_actions(core, chosen, k)
            chosen, column = chosen.tolist(), ue_columns(core)
            return {a: chosen[column[ue_id(a)]] for a in observation}
        active = set(core.active)
        return np.asarray(
            [
                a if ue in active else 0
                for a, (_, ue) in zip(chosen.tolist(), sorted(core.users.items()))
            ]
        )

    def slot_actions(self, core: Any, actions: np.ndarray, k: int) -> np.ndarray:
        """Every UE's `env.obs=topk` slot action (UE order) for its station action `actions`:
        the slot that holds the station, else 0 (noop), or where `slot_frees` the slot of the
        weakest link the UE holds in its slots."""
        from mobrl.envs.observations import slots_of, station_arrays, topk_slots

        state = station_arrays(core)
        order = topk_slots(state, k)  # (k, UE) station of each slot, -1: none
        acting = actions > 0
        slots = slots_of(order, actions)
        found = slots > 0
        frees = self.slot_frees(core, actions)
        if not frees.any():
            return slots
        linked = state["conn"] & state["reach"]
        held = (order >= 0) & linked[np.maximum(order, 0), np.arange(order.shape[1])[None, :]]
        weakest = k - np.argmax(held[::-1], axis=0)  # the last held slot, counted from 1
        return np.where(frees & acting & ~found & held.any(axis=0), weakest, slots)


#: the name other modules knew it by
_PerUEBaseline = PerUEBaseline


#: what a rule compares stations by: "sinr", the SINR (the SNR without interference), or
#: "rsrp", the received power (3GPP's RSRP; mobile-env's model: the SNR, which orders a UE's
#: stations as the received power does, since its noise is the same for all of them)
MEASURES = ("sinr", "rsrp")


def ue_link_state(
    core: Any, ue: Any, measure: str = "sinr"
) -> tuple[list[Any], set[Any], dict[Any, float]]:
    """Reachable stations (SINR above the UE's threshold), the UE's live connections, and each
    station's `measure` at the UE."""
    stations = [bs for _, bs in sorted(core.stations.items())]
    if implements(core, SnrArrays):  # mobrl's fast engine has this step's SNRs already
        column = core.ue_column(ue)
        snrs = dict(zip(stations, core.snr_matrix()[:, column].tolist()))
        values = snrs
        signal = core.signal_matrix() if measure == "rsrp" else None
        if signal is not None:
            values = dict(zip(stations, signal[:, column].tolist()))
        # the engine's own reach (a layout's radio model has an SINR threshold of its own)
        in_range = core.reach_matrix()[:, column].tolist()
        reachable = [bs for bs, ok in zip(stations, in_range) if ok]
    else:
        snrs = values = {bs: core.channel.snr(bs, ue) for bs in stations}
        reachable = [bs for bs, snr in snrs.items() if snr > ue.snr_threshold]
    connected = {bs for bs in reachable if ue in core.connections.get(bs, ())}
    return reachable, connected, values


def link_arrays(core: Any, measure: str = "sinr") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(BS, UE) `measure` (SINRs, or received powers), reachable links (SINR above the UE's
    threshold) and live links in range, stations and UEs in id order (`ue_link_state` for all
    UEs at once). The rules read the measure only where a UE is in range (masked by `reach` or
    by links, which lie in range): out of range it may be 0 (city-scale layouts, whose full SNR
    matrix is not computed)."""
    from mobrl.network.association import links

    return links(core, measure)


def active_mask(core: Any) -> np.ndarray:
    """Which UEs (id order, the columns of `link_arrays`) are active this step."""
    from mobrl.envs.observations import ue_columns

    columns = ue_columns(core)
    mask = np.zeros(len(columns), dtype=bool)
    mask[[columns[ue.ue_id] for ue in core.active]] = True
    return mask


def first(mask: np.ndarray) -> np.ndarray:
    """Per UE (column), the station action (b + 1) of the lowest station b where `mask`, else
    0 (`mobrl.network.service.first_station`, which greedy's moves also use)."""
    from mobrl.network.service import first_station

    return first_station(mask)
