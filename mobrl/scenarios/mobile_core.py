"""mobile-env cores of a layout: `make_mobile_core` builds one on the engine a layout runs on
(`engine_for`: mobrl's fast engine, or mobile-env's stock step for a layout naming its own
mobile-env classes), with the observation and reward handler the settings pick
(`mobrl.scenarios.mobile_options`)."""

from __future__ import annotations

from typing import Any

from mobrl.scenarios.mobile_options import TOPK_DEFAULT, TOPK_OBSERVATIONS

#: the engine notices printed in this process, by the classes they named (one line each)
_NOTED: set[str] = set()


def engine_for(layout: Any, engine: str, name: str | None = None) -> str:
    """The engine `layout` runs on when `engine` is asked for: stock for a layout that names
    its own mobile-env classes (mobrl's fast engine reimplements mobile-env's stock classes,
    not a user's), said in one line once per process; otherwise `engine`."""
    from mobrl.scenarios.classes import describe

    named = describe(layout.get("classes")) if isinstance(layout, dict) else ""
    if engine != "fast" or not named:
        return engine
    if named not in _NOTED:
        from mobrl.core.console import make_console

        _NOTED.add(named)
        who = f"layout {name}" if name else "this layout"
        make_console().print(
            f"note: {who} names its own mobile-env classes ({named}): it runs on mobile-env's "
            "stock engine, not mobrl's fast engine.",
            markup=False,
        )
    return "stock"


def make_mobile_core(
    layout: str | dict[str, Any],
    mode: str,
    engine: str = "fast",
    kwargs: dict[str, Any] | None = None,
    render_mode: str | None = None,
    obs: str = "mobile",
    topk: int | None = None,
    reward: str = "mobile",
) -> Any:
    """A mobile-env core (`MComCore`) of a layout (a scenario name, or validated layout data)
    with the handler of `mode` (`ma`: dict observations per UE, `central`: one flat vector) on
    the chosen engine (stock for a layout with its own classes: `engine_for`). `kwargs` are
    mobile-env config entries that override the layout's; `obs` picks the observation
    (mobrl.envs.observations; `topk`: its slot count), `reward` what the UEs of `ma` learn
    from (mobrl.network.service)."""
    from mobile_env.core.base import MComCore
    from mobile_env.core.util import deep_dict_merge

    from mobrl import scenarios
    from mobrl.envs.observations import handler_for
    from mobrl.network.service import with_reward

    if isinstance(layout, str):
        layout = scenarios.load(scenarios.path_of(layout))
    engine = engine_for(layout, engine)
    stations, users, config = scenarios.build_config(layout)
    if obs in TOPK_OBSERVATIONS:
        topk = topk or TOPK_DEFAULT  # runs from before env.topk
    handler = with_reward(handler_for(obs, mode, topk), reward)
    config = deep_dict_merge(config, {"handler": handler, **(kwargs or {})})
    if engine != "fast" and "mobrl" in config:
        from mobrl.core.errors import UserError

        beyond = " and ".join(f"{k} section" for k in config["mobrl"])
        raise UserError(
            f"engine={engine} runs mobile-env's own step, which does not model this layout's "
            f"{beyond}. Use engine=fast."
        )
    if engine == "fast":
        from mobrl.network.engine import FastCore

        return FastCore(stations, users, config, render_mode=render_mode)
    return MComCore(stations, users, config, render_mode=render_mode)
