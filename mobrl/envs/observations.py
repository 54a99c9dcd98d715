"""What a UE agent observes: mobile-env's own features (`env.obs=mobile`), mobile-env's plus
two per-station features (`env.obs=extended`), or a fixed number of station slots that does not
depend on the layout (`env.obs=topk`), as mobile-env handler classes.

mobile-env's per-UE observation cannot tell a station out of the UE's range from one in range
that serves nobody: both broadcast the idle utility and a zero connection share. Which of the
two it is decides whether connecting can succeed and whether it turns an idle station's lowest
utility, which counts in the UE's reward, into a served one. `extended` adds, per station:

- `reachable`: 1 if the UE is in the station's range (SNR above the UE's threshold), else 0;
- `load`: the number of UEs the station serves divided by the number of UEs in the scenario
  (0 when out of range, like mobile-env's own broadcasts).

Reward, dynamics and actions stay mobile-env's. Evaluation and rendering rebuild the env from
the run's manifest, so they observe exactly what training observed.

`mobile` and `extended` have one entry per station, so a policy fits one layout only. `topk`
(multi-agent mode) gives each UE `k` station slots (`env.topk`, default 3) instead: its
linked stations first, then the strongest others, each ordered by SNR (ties by station id), so
a UE can always reach the links it holds (up to k). Per slot, 5 features:

- `linked`: 1 if the UE holds a link to the station (and it is in range), else 0;
- `snr`: the station's SNR over the UE's best SNR among all stations (mobile-env's `snrs`);
- `reachable`: 1 if the UE is in the station's range, else 0;
- `load`: n / (n + 1) for a station in range serving n UEs (0 idle, towards 1 crowded), else 0;
- `bcast`: the mean utility of the station's UEs if in range, else the idle utility (mobile-env's
  `bcast`);

then 2 of the UE's own: its utility (mobile-env's `utility`) and its link count divided by k.
Slots beyond the layout's stations are all zero. The action is Discrete(k + 1): 0 keeps the
links, j toggles the link to the station in slot j (a zero slot does nothing). The observation
has 5k + 2 entries and the action k + 1 on every layout, so one policy acts on all of them.

`topk_gain` is `topk` plus k entries after its 5k + 2, per slot:

- `gain`: the change of the team's summed utility (mobile-env's scaled utility summed over the
  active UEs) if the UE toggled the slot's station alone this step (mobrl.network.service's
  `toggle_gains`; 0 for an empty slot or a station out of range). A UE can compute it from its
  own rate and what each station could broadcast: its link count and the summed utility
  change of its UEs if one joins or leaves. Unscaled: its space's bounds are unbounded.

Its actions are `topk`'s.

`topk_impact` is `topk` plus 2k entries after its 5k + 2: per slot, the toggle's effect split
in two, first the k `own` (the UE's own utility change: under interference, what its SINR on
the new link set is worth to it), then the k `others` (the other UEs' summed utility change: a
station's shares, and under interference the SINR it takes from or gives back to UEs near the
station; their sum is `topk_gain`'s `gain`). A network can report both: the UE measures its
own candidates' SINR, and a station computes its neighbours' cost from their loads and its
own gains to their UEs (interference coordination's usual exchange between cells).

`topk_intent` is `topk` plus `INTENT_ROUNDS` (3) x k entries after its 5k + 2: round 1 is
`topk_gain`'s `gain`; each later round r gives, per slot, the same change with the other UEs'
intents of round r - 1 applied (each UE's intent: its slot of highest gain in that round, where
that gain is positive; the UE's own links as they are). Under interference and shared
resources the UEs' toggles of one step do not add up: a UE leaving a station pays only if
others leave it too, a join only if someone else hands over. The rounds tell a UE what its
toggle is worth once the others' moves are counted, the few message exchanges a distributed
coordination protocol makes before acting (UEs announce intents, stations answer with the new
gains). Each later round scores k + 1 whole link sets per UE, so its cost grows with UEs x
stations x UEs: for layouts up to a few hundred UEs.

The slots' arrays, rows, gains and actions are in mobrl.network.station_slots; their names stay
importable from here.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from mobile_env.handlers.central import MComCentralHandler
from mobile_env.handlers.multi_agent import MComMAHandler

from mobrl.network.station_slots import (  # noqa: F401 (imported from here by others)
    GAIN_EPS,
    INTENT_ROUNDS,
    TOPK_OWN_FEATURES,
    TOPK_SLOT_FEATURES,
    gains_given,
    intended_links,
    intent_gains,
    slot_gains,
    slot_mask,
    slots_of,
    station_arrays,
    stations_of,
    topk_gain_rows,
    topk_order,
    topk_rows,
    topk_size,
    topk_slots,
    topk_station_actions,
    ue_columns,
)

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


class TopKMAHandler(MComMAHandler):
    """mobile-env's multi-agent handler with `env.obs=topk` observations and slot actions."""

    topk: int  # the slot count, set by `topk_handler`

    @classmethod
    def ue_obs_size(cls, env: Any) -> int:
        return topk_size(cls.topk)

    @classmethod
    def rows(cls, env: Any, columns: np.ndarray) -> np.ndarray:
        """Observation rows of the UEs at `columns` of `station_arrays` (both engines)."""
        return topk_rows(station_arrays(env), columns, cls.topk)

    @classmethod
    def action_space(cls, env: Any) -> Any:
        import gymnasium

        return gymnasium.spaces.Dict(
            {ue.ue_id: gymnasium.spaces.Discrete(cls.topk + 1) for ue in env.users.values()}
        )

    @classmethod
    def observation(cls, env: Any) -> dict[int, np.ndarray]:
        column = ue_columns(env)
        active = sorted(ue.ue_id for ue in env.active if not env.time_is_up)
        columns = np.array([column[u] for u in active], dtype=int)
        return dict(zip(active, cls.rows(env, columns)))

    @classmethod
    def action(cls, env: Any, action: dict[int, int]) -> dict[int, int]:
        column = ue_columns(env)
        slots = np.zeros(len(column), dtype=np.int64)
        for ue_id, a in action.items():
            slots[column[ue_id]] = a
        stations = topk_station_actions(station_arrays(env), slots, cls.topk)
        return {ue_id: int(stations[column[ue_id]]) for ue_id in action}


class TopKGainMAHandler(TopKMAHandler):
    """`env.obs=topk_gain`: `topk`'s rows and actions plus each slot's single-toggle gain."""

    #: the gain columns per slot: 1 (the team's change) or 2 (`topk_impact`: own, others')
    per_slot = 1

    @classmethod
    def ue_obs_size(cls, env: Any) -> int:
        return topk_size(cls.topk) + cls.per_slot * cls.topk

    @classmethod
    def observation_space(cls, env: Any) -> Any:
        import gymnasium

        k, extra = cls.topk, cls.per_slot * cls.topk
        low = np.concatenate([np.full(topk_size(k), -1.0), np.full(extra, -np.inf)])
        high = np.concatenate([np.full(topk_size(k), 1.0), np.full(extra, np.inf)])
        box = gymnasium.spaces.Box(low.astype(np.float32), high.astype(np.float32))
        return gymnasium.spaces.Dict({ue_id: box for ue_id in env.users})

    @classmethod
    def rows(cls, env: Any, columns: np.ndarray) -> np.ndarray:
        return topk_gain_rows(env, columns, cls.topk, split=cls.per_slot == 2)


class TopKImpactMAHandler(TopKGainMAHandler):
    """`env.obs=topk_impact`: `topk`'s rows and actions plus, per slot, the UE's own utility
    change and the other UEs' summed change if it toggled the slot's station alone."""

    per_slot = 2


class TopKIntentMAHandler(TopKGainMAHandler):
    """`env.obs=topk_intent`: `topk`'s rows and actions plus, per round and slot, the toggle's
    gain to the team given the other UEs' intents of the round before."""

    per_slot = INTENT_ROUNDS

    @classmethod
    def rows(cls, env: Any, columns: np.ndarray) -> np.ndarray:
        state = station_arrays(env)
        return np.concatenate(
            [topk_rows(state, columns, cls.topk), intent_gains(env, state, columns, cls.topk)],
            axis=1,
        )


#: the observations with k station slots and slot actions, and their handler bases
TOPK_HANDLERS = {
    "topk": TopKMAHandler,
    "topk_gain": TopKGainMAHandler,
    "topk_impact": TopKImpactMAHandler,
    "topk_intent": TopKIntentMAHandler,
}


@functools.cache
def topk_handler(k: int, obs: str = "topk") -> type:
    """The `topk` (or `topk_gain`) handler class with `k` station slots (one class per k)."""
    base = TOPK_HANDLERS[obs]
    name = base.__name__.removesuffix("MAHandler")
    return type(f"{name}{k}MAHandler", (base,), {"topk": k})


HANDLERS = {
    ("mobile", "ma"): MComMAHandler,
    ("mobile", "central"): MComCentralHandler,
    ("extended", "ma"): ExtendedMAHandler,
    ("extended", "central"): ExtendedCentralHandler,
}


def handler_for(obs: str, mode: str, topk: int | None = None) -> type:
    """The mobile-env handler class of `env.obs` in `env.mode` (`topk`: the slot count)."""
    if obs in TOPK_HANDLERS:
        if topk is None:
            raise ValueError(f"env.obs={obs} needs its slot count (the kind's default fills it)")
        return topk_handler(int(topk), obs)
    return HANDLERS[obs, mode]
