"""Whether `run.imitate` (mobrl.training.imitation) applies to a config: the scenario, env,
observation, expert, algorithm and learners it needs, and its settings in range."""

from __future__ import annotations

from typing import Any


def check_imitate(cfg: Any, able: list[str]) -> None:
    """`run.imitate` applies (a mobile-env layout, env=ma, a slot observation, a known
    expert, one local learner, an algorithm with PPO's policy head: one of `able`), or a
    one-line error naming the fix. Nothing to check while `run.imitate.expert` is null."""
    from mobrl.core.errors import UserError, unknown_choice

    settings = cfg.run.get("imitate")
    if settings is None or not settings.expert:
        return
    from mobrl.evaluation.policies import BASELINES
    from mobrl.scenarios.kinds.mobile import TOPK_OBSERVATIONS

    off = "or drop run.imitate.expert"
    from mobrl.scenarios.kinds import kind_of

    if kind_of(cfg).name != "mobile":
        raise UserError(
            f"run.imitate imitates mobile-env baselines; scenario={cfg.scenario.name} is not a "
            f"mobile-env layout. Use e.g. scenario=small, {off}."
        )
    if cfg.env.mode == "cells":
        _check_cell_expert(settings.expert, off)
        _check_expert_weight(settings)
    elif key := next((k for k in CELL_PLANNING if settings.get(k) is not None), None):
        raise UserError(
            f"run.imitate.{key} is for a cell expert's planning; UE agents' experts do not "
            f"weigh energy. Use env=cells, or drop run.imitate.{key}."
        )
    elif cfg.env.mode != "ma":
        raise UserError(
            f"run.imitate needs one agent per UE (env=ma) or per station (env=cells), not "
            f"env={cfg.env.mode}: use env=ma, {off}."
        )
    obs = cfg.env.get("obs", "mobile")
    if cfg.env.mode == "ma" and obs not in TOPK_OBSERVATIONS:
        raise UserError(
            f"run.imitate needs a slot observation, not env.obs={obs}: use env.obs=topk_gain "
            f"(or topk), {off}."
        )
    if settings.expert not in BASELINES or not hasattr(
        BASELINES[settings.expert], "station_actions"
    ):
        able = [n for n, b in BASELINES.items() if hasattr(b, "station_actions")]
        raise unknown_choice(
            "run.imitate.expert", str(settings.expert), able, "Use run.imitate.expert=oracle."
        )
    if cfg.algo.name not in able:
        algos = " / ".join(f"algo={name}" for name in able)
        raise UserError(
            f"run.imitate fits an actor-critic's policy head; algo={cfg.algo.name} has none to "
            f"fit. Use {algos}, {off}."
        )
    if cfg.run.resources.num_learners != 0:
        raise UserError(
            "run.imitate fits the policy in the algorithm's own learner: set "
            f"run.resources.num_learners=0, {off}."
        )
    _check_imitate_values(cfg, settings, plans=getattr(BASELINES[settings.expert], "PLANS", False))


def _check_cell_expert(expert: str, off: str) -> None:
    """A cell rule or the cells' reference as the expert of cell agents, or a one-line
    error."""
    from mobrl.core.errors import unknown_choice
    from mobrl.evaluation.baselines.energy import CellRule
    from mobrl.evaluation.policies import BASELINES

    cells = [n for n, b in BASELINES.items() if issubclass(b, CellRule)]
    if expert not in cells:
        raise unknown_choice(
            "run.imitate.expert of cell agents (env=cells)",
            str(expert),
            cells,
            f"Use run.imitate.expert=energy_oracle, {off}.",
        )


#: `run.imitate` keys of a cell expert's planning: what each is, an example, what dropping it
#: leaves
CELL_PLANNING = {
    "weight": ("the λ an expert weighs energy with", "0.025", "the layout's λ"),
    "floor": ("the price an expert plans with of a UE's lost service", "3", "none"),
}


def _check_expert_weight(settings: Any) -> None:
    """`run.imitate.weight` and `run.imitate.floor` numbers from 0 up, given to an expert
    that weighs energy, or a one-line error."""
    from mobrl.core.errors import UserError
    from mobrl.evaluation.policies import BASELINES

    for key, (meaning, example, dropped) in CELL_PLANNING.items():
        value = settings.get(key)
        if value is None:
            continue
        if not BASELINES[settings.expert].weighs:
            able = [n for n, b in BASELINES.items() if getattr(b, "weighs", False)]
            raise UserError(
                f"run.imitate.{key} is {meaning}; {settings.expert} does not weigh energy. "
                f"Use run.imitate.expert={able[0]}, or drop run.imitate.{key}."
            )
        if not value >= 0:  # the schema has made it a float
            raise UserError(
                f"run.imitate.{key} ({meaning}) must be a number from 0 up, got {value}. Use "
                f"e.g. run.imitate.{key}={example}, or drop it ({dropped})."
            )


def _check_imitate_values(cfg: Any, settings: Any, plans: bool) -> None:
    """`run.imitate`'s numbers in range, and the planning keys (`horizon`, `ahead`) only with
    an expert that `plans` ahead (and `ahead` with env.decide=in_turns), or a one-line error."""
    from mobrl.core.errors import UserError

    for key in ("episodes", "updates"):
        if int(settings[key]) < 1:
            raise UserError(f"run.imitate.{key} must be >= 1, got {settings[key]}.")
    if int(settings.get("workers", 1)) < 1:
        raise UserError(
            f"run.imitate.workers (processes that play the labelled episodes) must be >= 1, "
            f"got {settings.workers}. Use run.imitate.workers=1 (this process alone)."
        )
    if not float(settings.get("revisions", 1.0)) >= 1:
        raise UserError(
            f"run.imitate.revisions (a revised move's weight in a fit) must be >= 1, got "
            f"{settings.revisions}. Use run.imitate.revisions=1 (every row alike)."
        )
    if int(settings.rounds) < 0:
        raise UserError(f"run.imitate.rounds must be >= 0, got {settings.rounds}.")
    ahead, horizon = float(settings.get("ahead", 1.0)), settings.get("horizon")
    if not ahead >= 1:
        raise UserError(
            f"run.imitate.ahead (the weight of a move planned ahead in a fit) must be >= 1, got "
            f"{settings.ahead}. Use run.imitate.ahead=1 (every row alike)."
        )
    for key, what, given in (
        ("horizon", "sets a planning expert's steps ahead", horizon is not None),
        ("ahead", "weighs the moves a planning expert plans ahead", ahead != 1),
    ):
        if given and not plans:
            raise UserError(
                f"run.imitate.{key} {what}; expert {settings.expert} does not plan. Use "
                f"run.imitate.expert=oracle_horizon, or drop run.imitate.{key}."
            )
    if ahead != 1 and cfg.env.get("decide", "at_once") != "in_turns":
        raise UserError(
            "run.imitate.ahead weighs the turns a planning expert labels ahead; UEs deciding at "
            "once are labelled with its whole step. Add env.decide=in_turns, or drop "
            "run.imitate.ahead."
        )
    if horizon is not None:
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise UserError(
                f"run.imitate.horizon must be a whole number of steps >= 1, got {horizon}. "
                "Use e.g. run.imitate.horizon=2."
            )
