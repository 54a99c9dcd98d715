"""The fast engine's observations: mobile-env's features of the UEs (and mobrl's
`env.obs=extended`) from the arrays, per UE (multi-agent) or as one flat vector (central),
blanks while a policy that reads no observations plays, and the arrays `env.obs=topk` reads."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from mobile_env.core.base import MComCore
from mobile_env.handlers.central import MComCentralHandler
from mobile_env.handlers.multi_agent import MComMAHandler

from mobrl.network.neighbours import SparseState


class Observations:
    """Mixin of `FastEngine`: observation rows of its UEs from the state arrays."""

    #: True while a policy that reads the env's state, not its observations (the baselines),
    #: plays: observations are left as zeros of their spaces (`mobrl.evaluation.rollout`)
    blind = False

    def _features(self, ues: np.ndarray, names: list[str]) -> np.ndarray:
        """Observation rows (float32) of UEs `ues` with mobile-env's features `names`."""
        n_bs = len(self._bs_list)
        out = np.empty((ues.size, sum(1 if k == "utility" else n_bs for k in names)), np.float32)
        n_ues = len(self._ue_list)
        if ues.size == len(self._ue_list):
            ues = slice(None)  # every UE, in order: plain views instead of copies
        reach = self._reach[:, ues]
        col = 0
        for name in names:
            width = 1 if name == "utility" else n_bs
            target = out[:, col : col + width]
            col += width
            if name == "connections":
                target[:] = self._conn[:, ues].T
            elif name == "snrs":
                snr = self._snr[:, ues]
                target[:] = (snr / snr.max(axis=0)).T
            elif name == "utility":
                util = self._util[ues]
                target[:, 0] = np.where(np.isnan(util), self._idle, util)
            elif name == "bcast":
                target[:] = np.where(reach, self._bs_stats[1][:, None], self._idle).T
            elif name == "reachable":  # mobrl's env.obs=extended (mobrl.envs.observations)
                target[:] = reach.T
            elif name == "load":
                target[:] = (reach * self._bs_stats[0][:, None] / max(1, n_ues)).T
            else:  # stations_connected: connection counts of reachable BSs, normalized
                num = reach * self._bs_stats[0][:, None].astype(float)
                target[:] = (num / np.maximum(1.0, num.sum(axis=0))).T
        return out

    def _idle_features(self, count: int, names: list[str]) -> np.ndarray:
        n = len(self._bs_list)
        parts = {
            "connections": np.zeros((count, n)),
            "snrs": np.zeros((count, n)),
            "utility": np.full((count, 1), self._idle),
            "bcast": np.full((count, n), self._idle),
            "stations_connected": np.ones((count, n)),
            "reachable": np.zeros((count, n)),
            "load": np.zeros((count, n)),
        }
        return np.concatenate([parts[k].astype(np.float32) for k in names], axis=1)

    def _observation(self) -> Any:
        core: MComCore = self  # type: ignore[assignment]
        handler = core.handler
        if self.blind:
            return self._blank_observation()
        if issubclass(handler, MComMAHandler):
            idx = self._active_idx if not core.time_is_up else self._active_idx[:0]
            rows = self._ma_rows(idx)
            return dict(zip(self._ue_ids[idx].tolist(), rows))
        if issubclass(handler, MComCentralHandler):
            # mobile-env lists inactive UEs first (it builds them from a set; here: by id)
            idle = self._idle_idx
            rows = [self._idle_features(idle.size, handler.features)] if idle.size else []
            rows.append(self._features(self._active_idx, handler.features))
            return np.concatenate(rows, axis=0).ravel()
        return handler.observation(core)

    def _blank_observation(self) -> Any:
        """Zeros shaped like the observation (the same agents as `_observation`)."""
        core: MComCore = self  # type: ignore[assignment]
        space = core.observation_space
        if not isinstance(space, gymnasium.spaces.Dict):
            return np.zeros(space.shape, dtype=space.dtype)
        blanks = self.__dict__.get("_blanks")
        if blanks is None:  # one read-only array per UE, handed out every step
            blanks = {u: np.zeros(s.shape, dtype=s.dtype) for u, s in space.spaces.items()}
            for blank in blanks.values():
                blank.flags.writeable = False
            self._blanks = blanks
        idx = self._active_idx if not core.time_is_up else self._active_idx[:0]
        return {u: blanks[u] for u in self._ue_ids[idx].tolist()}

    def features(self) -> dict[int, dict[str, np.ndarray]]:
        """mobile-env's per-UE feature dicts (for handlers of users' own)."""
        names = ["connections", "snrs", "utility", "bcast", "stations_connected"]
        sizes = [len(self._bs_list)] * 2 + [1] + [len(self._bs_list)] * 2
        out: dict[int, dict[str, np.ndarray]] = {}
        idle = self._idle_idx
        for idx, rows in (
            (idle, self._idle_features(idle.size, names)),
            (self._active_idx, self._features(self._active_idx, names)),
        ):
            for i, row in zip(idx.tolist(), rows):
                parts = np.split(row, np.cumsum(sizes)[:-1])
                out[self._ue_list[i].ue_id] = dict(zip(names, parts))
        return out

    def observe_all(self) -> np.ndarray:
        """Observation rows of every UE (multi-agent features, UE order), active or not."""
        return self._ma_rows(self._all_idx)

    def _ma_rows(self, idx: np.ndarray) -> np.ndarray:
        """Multi-agent observation rows of the UEs at `idx`."""
        handler = self.handler  # type: ignore[attr-defined]
        k = getattr(handler, "topk", None)
        if k is not None:  # env.obs=topk or topk_gain (mobrl.envs.observations)
            return handler.rows(self, idx)  # the handler's rows from this engine's arrays
        return self._features(idx, handler.features)

    def topk_state(self) -> dict[str, Any]:
        """The arrays `env.obs=topk` reads (mobrl.envs.observations.station_arrays)."""
        counts, bs_util = self._bs_stats
        state = {
            "conn": self._conn,
            "reach": self._reach,
            "counts": counts.astype(float),
            "bs_util": bs_util,
            "util": self._util if hasattr(self, "_util") else np.full(len(self._ue_list), np.nan),
            "idle": self._idle,
        }
        if self._grid is not None:  # the SNR matrix is built only if read
            return SparseState(self, **state)
        return {"snr": self._snr, **state}
