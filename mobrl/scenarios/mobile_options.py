"""The settings of the mobile-env scenario kind (`mobrl.scenarios.kinds.mobile`): the values
`env.mode`, `engine`, `env.obs`, `env.reward`, `env.decide`, `env.turn_rounds`,
`env.turn_obs`, `env.topk` and `env.team_reward` may take, each checked against the others it
depends on, a wrong one a one-line error."""

from __future__ import annotations

from typing import Any

MOBILE_MODES = ("ma", "central", "cells", "hierarchical")
#: the modes whose agents are stations (and, hierarchical, the network above them)
CELL_MODES = ("cells", "hierarchical")
#: `fast`: mobrl's array engine (mobrl.network.engine); `stock`: mobile-env's own step
MOBILE_ENGINES = ("fast", "stock")
#: values of `env.obs` (the handlers behind them: mobrl.envs.observations.HANDLERS)
OBSERVATIONS = ("mobile", "extended", "topk", "topk_gain", "topk_impact", "topk_intent")
#: the observations with `env.topk` station slots and slot actions (one policy, any layout)
TOPK_OBSERVATIONS = ("topk", "topk_gain", "topk_impact", "topk_intent")
#: values of `env.reward` (mobrl.network.service.REWARDS)
REWARDS = ("mobile", "utility", "marginal")
#: station slots of `env.obs=topk` unless `env.topk` says otherwise
TOPK_DEFAULT = 3
#: `env.turn_obs` unless given: what a UE group observes in its turn beyond its slots
TURN_OBS_DEFAULT = "gains"
#: env=cells: the nearest stations each cell observes, and its share of the network's reward
CELL_NEIGHBOURS = 6
CELL_TEAM_REWARD = 0.5
#: env=hierarchical: the steps between the network agent's decisions
NETWORK_PERIOD = 10
#: the field's cell rules and the reference, which cell agents are measured against
CELL_RULES = ("all_on", "idle_off", "threshold", "energy_greedy", "energy_oracle")
#: `env.guard`: what the network does with a cell agent's request to sleep (mobrl.envs.cells)
CELL_GUARDS = ("coverage", "capacity", "none")
CELL_GUARD = "coverage"
#: `env.network_reward`: what the network agent of env=hierarchical learns from
NETWORK_REWARDS = ("objective", "difference")


def check_obs(obs: str, mode: str = "ma") -> str:
    """A known `env.obs` value that applies to `env.mode`, or a one-line error."""
    from mobrl.core.errors import UserError, unknown_choice

    if obs not in OBSERVATIONS:
        raise unknown_choice(
            "env.obs", str(obs), OBSERVATIONS, "Use env.obs=mobile, extended or a topk one."
        )
    if obs in TOPK_OBSERVATIONS and mode != "ma":
        raise UserError(
            f"env.obs={obs} needs one agent per UE (env=ma), not env.mode={mode}: a central "
            f"agent's observation grows with the UE count anyway. Use env=ma or env.obs=extended."
        )
    return obs


def check_decide(decide: str, mode: str, obs: str) -> str:
    """A known `env.decide` that applies to `env.mode` and `env.obs`, or a one-line error."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.envs.turns import DECIDE

    if decide not in DECIDE:
        raise unknown_choice("env.decide", str(decide), DECIDE, "Use env.decide=at_once.")
    if decide == "in_turns" and mode == "hierarchical":
        raise UserError(
            "env.decide=in_turns plays cell agents in turns under env=cells; env=hierarchical "
            "decides its cells at once. Use env=cells env.decide=in_turns, or env.decide=at_once."
        )
    if decide == "in_turns" and mode != "cells" and (mode != "ma" or obs not in TOPK_OBSERVATIONS):
        raise UserError(
            f"env.decide=in_turns orders UE agents' slot actions (env=ma with a slot "
            f"observation) or cell agents' states (env=cells), not env.mode={mode} "
            f"env.obs={obs}. Use env=ma env.obs=topk_intent, env=cells, or env.decide=at_once."
        )
    return decide


def check_turn_rounds(rounds: Any, decide: str, mode: str = "ma") -> int:
    """A whole `env.turn_rounds` from 1 to `MAX_ROUNDS`, above 1 only with in_turns, or a
    one-line error."""
    from mobrl.core.errors import UserError
    from mobrl.envs.turns import MAX_ROUNDS

    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise UserError(
            f"env.turn_rounds={rounds} is not a whole number from 1 to {MAX_ROUNDS}: how often "
            "the UE groups take their turns in a step. Use env.turn_rounds=2."
        )
    if rounds > 1 and decide != "in_turns":
        raise UserError(
            f"env.turn_rounds={rounds} repeats the turns of UE groups, but env.decide={decide} "
            "plays no turns. Add env.decide=in_turns, or use env.turn_rounds=1."
        )
    if rounds > 1 and mode == "cells":
        raise UserError(
            f"env.turn_rounds={rounds} repeats the turns of UE groups; cell agents take one "
            "turn a step. Use env.turn_rounds=1."
        )
    return rounds


def check_turn_obs(view: Any, decide: str, mode: str = "ma") -> str:
    """A known `env.turn_obs`, other than the default only with in_turns, or a one-line
    error."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.envs.turns import TURN_OBS

    if view not in TURN_OBS:
        raise unknown_choice("env.turn_obs", str(view), TURN_OBS, "Use env.turn_obs=gains.")
    if view != TURN_OBS_DEFAULT and decide != "in_turns":
        raise UserError(
            f"env.turn_obs={view} is what a UE group observes in its turn, but "
            f"env.decide={decide} plays no turns. Add env.decide=in_turns, or drop env.turn_obs."
        )
    if view != TURN_OBS_DEFAULT and mode == "cells":
        raise UserError(
            f"env.turn_obs={view} is what a UE group observes in its turn; a cell's turn "
            "observes its neighbours' requests and its predicted gain. Drop env.turn_obs."
        )
    return view


def check_gain_floor(value: Any, decide: str, mode: str) -> float:
    """`env.gain_floor` as a number ≥ 0, above 0 only for cells deciding in turns, or a
    one-line error."""
    from mobrl.core.errors import UserError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise UserError(
            f"env.gain_floor={value} is not a number ≥ 0: the price the gain a cell observes "
            "in its turn puts on a UE's lost service (0: none). Use env.gain_floor=1."
        )
    if value > 0 and (mode != "cells" or decide != "in_turns"):
        raise UserError(
            f"env.gain_floor={value} prices the gain cells observe in their turns, but "
            f"env={mode} env.decide={decide} plays no cell turns. Use env=cells "
            "env.decide=in_turns, or drop env.gain_floor."
        )
    return float(value)


def check_reward(reward: str, mode: str = "ma") -> str:
    """A known `env.reward` that applies to `env.mode`, or a one-line error."""
    from mobrl.core.errors import UserError, unknown_choice

    if reward not in REWARDS:
        raise unknown_choice(
            "env.reward", str(reward), REWARDS, "Use env.reward=mobile, utility or marginal."
        )
    if mode != "ma" and reward != "mobile":
        raise UserError(
            f"env.reward={reward} is a per-UE reward for env=ma; env.mode={mode} learns from "
            "mobile-env's central reward, the mean UE utility already. Drop env.reward."
        )
    return reward


def check_topk(value: Any) -> int:
    """`env.topk` as a positive slot count (None: the default), or a one-line error."""
    if value is None:
        return TOPK_DEFAULT
    return _count("env.topk", value, "station slots", TOPK_DEFAULT)


def check_team_reward(value: Any) -> float:
    """`env.team_reward` as a float in [0, 1], or a one-line error."""
    from mobrl.core.errors import UserError

    share = float(value)  # the schema has made it a float already
    if not 0.0 <= share <= 1.0:
        raise UserError(
            f"env.team_reward={value} is not a share between 0 and 1. Use env.team_reward=0 "
            f"(each UE learns from its own reward) up to 1 (from the mean over all UEs)."
        )
    return share


def check_cells(layout: Any, name: str, engine: str, mode: str = "cells") -> None:
    """That `env=cells` (`env=hierarchical`) applies to `layout` (a `power:` section, the
    fast engine), or a one-line error."""
    from mobrl.core.errors import UserError

    if not isinstance(layout, dict) or "power" not in layout:
        raise UserError(
            f"env={mode}: layout '{name}' has no power: section, so its stations cannot sleep. "
            "Use a layout that has one (scenario=uma19_energy) or add it (docs/energy.md)."
        )
    if engine != "fast":
        raise UserError(
            f"env={mode} sets stations asleep on mobrl's fast engine, not engine={engine}. "
            "Use engine=fast."
        )


def _count(key: str, value: Any, what: str, example: int) -> int:
    """`value` as a whole number of at least 1, or a one-line error naming `key` and `what`
    it counts."""
    from mobrl.core.errors import UserError

    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(
            f"{key}={value} is not a positive whole number of {what}. Use e.g. {key}={example}."
        )
    return value


def check_period(value: Any) -> int:
    """`env.period` as a whole number of steps of at least 1, or a one-line error."""
    what = "steps between the network agent's decisions"
    return _count("env.period", value, what, NETWORK_PERIOD)


def check_neighbours(value: Any) -> int:
    """`env.neighbours` as a positive whole number of slots, or a one-line error."""
    return _count("env.neighbours", value, "neighbour slots", CELL_NEIGHBOURS)


def check_ue_policy(value: Any) -> str:
    """`env.ue_policy` as one of the network's association procedures, or a one-line error."""
    from mobrl.core.errors import UserError, unknown_choice
    from mobrl.network.association import ASSOCIATIONS

    if str(value).startswith("zoo:") or "/" in str(value):
        raise UserError(
            f"env.ue_policy={value}: the UEs under cell agents follow one of the network's "
            f"association procedures ({', '.join(ASSOCIATIONS)}), not a trained policy. Use "
            "e.g. env.ue_policy=a3."
        )
    if value not in ASSOCIATIONS:
        raise unknown_choice(
            "env.ue_policy", str(value), list(ASSOCIATIONS), "Use e.g. env.ue_policy=a3."
        )
    return value


def check_cell_policy(value: Any, mode: str, layout: dict[str, Any], neighbours: int) -> str | None:
    """`env.cell_policy` (env=hierarchical: the cells held fixed at a zoo cell policy while
    the network agent learns) as the zoo reference, None for cells that learn, or a one-line
    error: not under env=hierarchical, not a zoo entry of cell agents, or an entry whose
    observation does not fit (its neighbour slots or the layout's sleep states)."""
    from mobrl.core import zoo_store as zoo
    from mobrl.core.errors import UserError

    if value is None or value == "learn":
        return None
    value = str(value)
    if mode != "hierarchical":
        raise UserError(
            f"env.cell_policy={value} holds the cells fixed, which leaves env={mode} no agent "
            "to train. Use env=hierarchical (a network agent above fixed cells), or drop it."
        )
    if not zoo.is_ref(value):
        raise UserError(
            f"env.cell_policy={value}: the cells are held fixed at a zoo cell policy (the "
            "rules read no λ, so the network agent would have nothing to set). Use e.g. "
            "env.cell_policy=zoo:uma19_energy, or learn for cells that learn."
        )
    meta = zoo.entry(value)
    trained = meta["env_config"]
    if trained.get("mode") != "cells":
        raise UserError(
            f"env.cell_policy={value} is a policy of env={trained.get('mode')}, not of cell "
            "agents. Use a zoo entry of env=cells (`mobrl zoo list`), e.g. zoo:uma19_energy."
        )
    slots = int(trained.get("neighbours") or CELL_NEIGHBOURS)
    if slots != neighbours:
        raise UserError(
            f"env.cell_policy={value} observes {slots} neighbour slots, not env.neighbours="
            f"{neighbours}. Set env.neighbours={slots}."
        )
    sleep = list(((trained.get("layout") or {}).get("power") or {}).get("sleep") or [])
    ours = list((layout.get("power") or {}).get("sleep") or [])
    if sleep != ours:
        raise UserError(
            f"env.cell_policy={value} chooses among the sleep states {sleep}, but this layout's "
            f"are {ours}. Use a layout with the same power.sleep states, or a cell policy "
            "trained on them."
        )
    return value


def check_network_reward(value: Any, cell_policy: str | None) -> str:
    """`env.network_reward` as one of `NETWORK_REWARDS` (`difference` only with the cells held
    fixed: its copy of the env plays them), or a one-line error."""
    from mobrl.core.errors import UserError, unknown_choice

    if value not in NETWORK_REWARDS:
        raise unknown_choice(
            "env.network_reward",
            str(value),
            list(NETWORK_REWARDS),
            "difference learns from what the λ changed (docs/energy.md).",
        )
    if value == "difference" and not cell_policy:
        raise UserError(
            "env.network_reward=difference replays each period at the layout's λ with the "
            "cells held fixed; the cells here learn. Set env.cell_policy=zoo:uma19_energy, or "
            "env.network_reward=objective."
        )
    return value


def check_guard(value: Any) -> str:
    """`env.guard` as one of `CELL_GUARDS`, or a one-line error."""
    from mobrl.core.errors import unknown_choice

    if value not in CELL_GUARDS:
        raise unknown_choice(
            "env.guard",
            str(value),
            list(CELL_GUARDS),
            "coverage grants a cell's sleep only if its UEs have another station (docs/energy.md).",
        )
    return value


def with_energy_weight(layout: Any, weight: Any, name: str) -> Any:
    """`layout` with `power.weight` set to `env.energy_weight` (None: as it is), or a
    one-line error."""
    from mobrl.core.errors import UserError

    if weight is None:
        return layout
    if not isinstance(layout, dict) or "power" not in layout:
        raise UserError(
            f"env.energy_weight={weight}: layout '{name}' has no power: section, so it has no "
            "energy to weigh. Drop env.energy_weight, or use a layout with power: "
            "(scenario=uma19_energy)."
        )
    value = float(weight)
    if not value >= 0.0:
        raise UserError(
            f"env.energy_weight={weight} is not a weight of 0 or more. Use e.g. "
            "env.energy_weight=0.05 (the default, docs/energy.md)."
        )
    return {**layout, "power": {**layout["power"], "weight": value}}


def cells_cannot_play(trained: Any, layout: Any, label: str) -> str | None:
    """Why cell agents trained on `trained` cannot play `layout` (both layout data), or
    None: their action is one of the layout's states, so the sleep states must agree."""
    if not isinstance(layout, dict) or "power" not in layout:
        return (
            f"{label} is a cell agent (env=cells): the layout it is to play has no power: "
            "section. Play it on a layout with one (uma19_energy)."
        )
    mine, theirs = (list((d.get("power") or {}).get("sleep") or []) for d in (trained, layout))
    if mine != theirs:
        return (
            f"{label} is a cell agent choosing among the sleep states {mine}; this layout's "
            f"stations have {theirs}. Play it on a layout with the same power.sleep."
        )
    return None
