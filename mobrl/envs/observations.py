"""What a UE agent observes: mobile-env's own features (`env.obs=mobile`) or mobile-env's plus
two per-station features (`env.obs=extended`), as mobile-env handler classes.

mobile-env's per-UE observation cannot tell a station out of the UE's range from one in range
that serves nobody: both broadcast the idle utility and a zero connection share. Which of the
two it is decides whether connecting can succeed and whether it turns an idle station's lowest
utility, which counts in the UE's reward, into a served one. `extended` adds, per station:

- `reachable`: 1 if the UE is in the station's range (SNR above the UE's threshold), else 0;
- `load`: the number of UEs the station serves divided by the number of UEs in the scenario
  (0 when out of range, like mobile-env's own broadcasts).

Reward, dynamics and actions stay mobile-env's. Evaluation and rendering rebuild the env from
the run's manifest, so they observe exactly what training observed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mobile_env.handlers.central import MComCentralHandler
from mobile_env.handlers.multi_agent import MComMAHandler

#: per-station features `extended` adds after mobile-env's own
EXTRA_FEATURES = ("reachable", "load")


def extra_features(core: Any, ue: Any) -> dict[str, np.ndarray]:
    """`reachable` and `load` of one UE, from any mobile-env core (stock or fast engine)."""
    stations = [core.stations[b] for b in sorted(core.stations)]
    reach = np.array([core.check_connectivity(bs, ue) for bs in stations], dtype=np.float32)
    served = np.array([len(core.connections.get(bs, ())) for bs in stations], dtype=np.float32)
    return {"reachable": reach, "load": reach * served / max(1, len(core.users))}


def _size(cls: Any, env: Any) -> int:
    return sum(
        env.NUM_STATIONS if name in EXTRA_FEATURES else env.feature_sizes[name]
        for name in cls.features
    )


def _with_extra(env: Any, features: dict[int, dict[str, np.ndarray]]) -> dict:
    zeros = np.zeros(env.NUM_STATIONS, dtype=np.float32)
    for ue_id, feats in features.items():
        ue = env.users[ue_id]
        active = ue in env.active
        extra = extra_features(env, ue) if active else dict.fromkeys(EXTRA_FEATURES, zeros)
        feats.update(extra)
    return features


class ExtendedMAHandler(MComMAHandler):
    """mobile-env's multi-agent handler with `reachable` and `load` per station."""

    features = [*MComMAHandler.features, *EXTRA_FEATURES]

    @classmethod
    def ue_obs_size(cls, env: Any) -> int:
        return _size(cls, env)

    @classmethod
    def observation(cls, env: Any) -> dict[int, np.ndarray]:
        active = {ue.ue_id for ue in env.active if not env.time_is_up}
        features = _with_extra(env, {u: f for u, f in env.features().items() if u in active})
        return {u: np.concatenate([f[k] for k in cls.features]) for u, f in features.items()}


class ExtendedCentralHandler(MComCentralHandler):
    """mobile-env's central handler with `reachable` and `load` per station and UE."""

    features = [*MComCentralHandler.features, *EXTRA_FEATURES]

    @classmethod
    def ue_obs_size(cls, env: Any) -> int:
        return _size(cls, env)

    @classmethod
    def observation(cls, env: Any) -> np.ndarray:
        features = _with_extra(env, env.features())
        return np.concatenate([f[k] for f in features.values() for k in cls.features])


HANDLERS = {
    ("mobile", "ma"): MComMAHandler,
    ("mobile", "central"): MComCentralHandler,
    ("extended", "ma"): ExtendedMAHandler,
    ("extended", "central"): ExtendedCentralHandler,
}
