"""DeepCoMP's multi-cell selection heuristics: dynamic selection (`deepcomp_dynamic`) and
static clusters (`deepcomp_static`).

Source: Schneider, Karl, Khalili, Hecker, "DeepCoMP: Coordinated Multipoint Using Multi-Agent
Deep Reinforcement Learning", IEEE TNSM 21(1), 2024, and its code (github.com/CN-UPB/DeepCoMP,
`deepcomp/agent/heuristics.py`: `DynamicSelection`, `StaticClustering`; defaults in
`deepcomp/util/cli.py`). Both decide per UE from its SNR to every station (the multi-agent env
they ran in observes each station's SNR divided by the UE's strongest, `RelNormEnv`) and move
one toggle a step: first release a link outside the selected set (lowest station id first),
then connect the selected stations, strongest first. DeepCoMP also tries to connect selected
stations out of range, which its env refuses; here they are left out, the same play. mobrl's
`greedy` is DeepCoMP's `3gpp` heuristic except that it connects to the new strongest station
before releasing the old (DeepCoMP releases first), and `full` is its `fullcomp`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.evaluation.baselines.base import (
    PerUEBaseline,
    first,
    link_arrays,
    strongest,
    ue_link_state,
)


class _Selection(PerUEBaseline):
    """A UE keeps links to its selected stations only: release the others, then connect the
    selected ones, strongest first."""

    def selected(self, core: Any, reachable: list[Any], snrs: dict[Any, float]) -> set[Any]:
        """The stations (in range) one UE selects (the rule's definition)."""
        raise NotImplementedError

    def selected_mask(self, core: Any, snr: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """`selected` of every UE at once: a (BS, UE) mask within `reach`."""
        raise NotImplementedError

    def ue_action(self, core: Any, ue: Any) -> int:
        reachable, connected, snrs = ue_link_state(core, ue)
        chosen = self.selected(core, reachable, snrs) if reachable else set()
        release = sorted(connected - chosen, key=lambda bs: bs.bs_id)
        if release:
            return release[0].bs_id + 1
        missing = [bs for bs in reachable if bs in chosen and bs not in connected]
        return max(missing, key=lambda bs: snrs[bs]).bs_id + 1 if missing else 0

    def station_actions(self, core: Any) -> np.ndarray:
        snr, reach, linked = link_arrays(core)
        chosen = self.selected_mask(core, snr, reach) & reach
        release = linked & ~chosen
        return np.where(release.any(axis=0), first(release), strongest(chosen & ~linked, snr))


class DynamicSelectionPolicy(_Selection):
    """DeepCoMP's dynamic multi-cell selection with ε = 0.5 (its default, `--epsilon`): each UE
    selects its strongest station and every station whose SNR is at least ε times the
    strongest's (linear SNR, so ε = 0.5 is within 3 dB of it). ε = 1 is one station (ties
    aside), ε = 0 every station in range (DeepCoMP's FullCoMP, mobrl's `full`)."""

    name = "deepcomp_dynamic"
    epsilon = 0.5

    def selected(self, core: Any, reachable: list[Any], snrs: dict[Any, float]) -> set[Any]:
        top = max(snrs[bs] for bs in reachable)
        return {bs for bs in reachable if snrs[bs] >= self.epsilon * top}

    def selected_mask(self, core: Any, snr: np.ndarray, reach: np.ndarray) -> np.ndarray:
        top = np.where(reach, snr, -np.inf).max(axis=0)
        return snr >= self.epsilon * top[None, :]


class DynamicSelection08Policy(DynamicSelectionPolicy):
    """`deepcomp_dynamic` with ε = 0.8 (stations within about 1 dB of the strongest)."""

    name = "deepcomp_dynamic_eps08"
    epsilon = 0.8


class StaticClusterPolicy(_Selection):
    """DeepCoMP's static clustering with clusters of M = 2 stations: the stations are split
    once into fixed groups of M (start a group at a random remaining station, add the
    remaining station closest to the group's centroid until it has M; the last group may be
    smaller; seeded with `cluster_seed`, so every episode and process has the same groups).
    Each UE selects its strongest station's whole group. DeepCoMP's CLI takes M from 1 to 3
    without a default; M = 2 (pairs) is mobrl's choice, M = 1 is DeepCoMP's `3gpp` rule."""

    name = "deepcomp_static"
    cluster_size = 2
    cluster_seed = 0

    def clusters(self, core: Any) -> np.ndarray:
        """The group index of each station (id order), made once per station layout."""
        stations = [core.stations[b] for b in sorted(core.stations)]
        key = tuple((float(bs.x), float(bs.y)) for bs in stations)
        cache = self.__dict__.setdefault("_clusters", {})
        if key not in cache:
            cache[key] = static_clusters(np.asarray(key), self.cluster_size, self.cluster_seed)
        return cache[key]

    def selected(self, core: Any, reachable: list[Any], snrs: dict[Any, float]) -> set[Any]:
        group = self.clusters(core)
        best = max(reachable, key=lambda bs: snrs[bs])
        index = {bs: i for i, bs in enumerate(b for _, b in sorted(core.stations.items()))}
        return {bs for bs in reachable if group[index[bs]] == group[index[best]]}

    def selected_mask(self, core: Any, snr: np.ndarray, reach: np.ndarray) -> np.ndarray:
        group = self.clusters(core)
        best = np.argmax(np.where(reach, snr, -np.inf), axis=0)
        return group[:, None] == group[best][None, :]


class StaticCluster3Policy(StaticClusterPolicy):
    """`deepcomp_static` with groups of M = 3 stations."""

    name = "deepcomp_static_m3"
    cluster_size = 3


def static_clusters(positions: np.ndarray, size: int, seed: int) -> np.ndarray:
    """Split stations at `positions` (n, 2) into groups of `size`: each group starts at a
    random remaining station and grows by the remaining station closest to its centroid (ties:
    the lower index). Returns each station's group index."""
    rng = np.random.default_rng(seed)
    group = np.full(len(positions), -1)
    current: list[int] = []
    n_groups = 0
    while (group < 0).any():
        remaining = np.flatnonzero(group < 0)
        if not current:
            pick = int(rng.choice(remaining))
        else:
            centre = positions[current].mean(axis=0)
            pick = int(remaining[np.argmin(np.linalg.norm(positions[remaining] - centre, axis=1))])
        current.append(pick)
        group[pick] = n_groups
        if len(current) == size:
            current, n_groups = [], n_groups + 1
    return group


RULES = (
    DynamicSelectionPolicy,
    DynamicSelection08Policy,
    StaticClusterPolicy,
    StaticCluster3Policy,
)
