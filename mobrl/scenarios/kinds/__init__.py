"""Registry of scenario kinds: `scenario.kind` -> the `ScenarioKind` that owns it.

Every module of this package except `base` is a kind and defines `KIND`, an instance of a
`ScenarioKind` subclass whose `name` is the module's name. A new kind is one module here plus
its YAML in `conf/scenario/`; nothing else dispatches on the kind's name.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from mobrl.scenarios.kinds.base import ScenarioKind

__all__ = ["ScenarioKind", "env_config_of", "kind_names", "kind_of"]


@cache
def kind_names() -> tuple[str, ...]:
    """The names of every kind (the modules of this package)."""
    return tuple(sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "base"))


@cache
def _load(name: str) -> ScenarioKind:
    kind = importlib.import_module(f"{__name__}.{name}").KIND
    assert kind.name == name, f"mobrl.scenarios.kinds.{name}.KIND is named '{kind.name}'"
    return kind


def kind_of(what: Any) -> ScenarioKind:
    """The kind of a name, an `env_config` dict or a composed config; a one-line `UserError`
    for a name no module defines."""
    if isinstance(what, str):
        name = what
    elif isinstance(what, dict):
        name = what["kind"]
    else:
        name = what.scenario.kind
    if name not in kind_names():
        from mobrl.core.errors import unknown_choice

        raise unknown_choice("scenario.kind", str(name), kind_names(), "Fix scenario.kind.")
    return _load(name)


def env_config_of(cfg: Any, render_mode: str | None = None) -> dict[str, Any]:
    """The entries of `env_config` every kind has (scenario, kind, kwargs, engine, render
    mode), then the kind's own (`env_fields`): what `envs.factory.env_config_from` completes
    with the agents' policies and sampler."""
    from omegaconf import OmegaConf

    return {
        "scenario": cfg.scenario.name,
        "kind": cfg.scenario.kind,
        "kwargs": OmegaConf.to_container(cfg.scenario.kwargs, resolve=True),
        "engine": cfg.engine,
        "render_mode": render_mode,
        **kind_of(cfg).env_fields(cfg),
    }
