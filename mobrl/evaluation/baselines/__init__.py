"""The heuristic baselines, one module per rule or family, each a `Baseline` with its source
and parameters in its docstring:

- `classic`: `random`, `noop`, `greedy`, `full`, `pole_angle` (CartPole);
- `fill`: `greedy_fill` (greedy, then idle stations serve their strongest UE);
- `deepcomp`: DeepCoMP's `deepcomp_dynamic` (ε) and `deepcomp_static` (clusters of M), with
  variants `deepcomp_dynamic_eps08` and `deepcomp_static_m3`;
- `a3`: 3GPP A3 handover with hysteresis and time-to-trigger (`a3`, variant `a3_ttt2`);
- `energy`: cells that sleep, on layouts with a power: section (`all_on`, `idle_off`,
  `threshold`), UEs linking by greedy.

A new rule is a module here whose `RULES` lists its classes, named in `_MODULES` below;
`mobrl.evaluation.policies.BASELINES` holds them beside the link-set references (`capped`,
`oracle`). Parameters are fixed per name: a variant is a subclass with its own `name`.
"""

from __future__ import annotations

from mobrl.evaluation.baselines import a3, classic, deepcomp, energy, fill
from mobrl.evaluation.baselines.base import Baseline, PerUEBaseline, _PerUEBaseline
from mobrl.evaluation.baselines.classic import (
    FullPolicy,
    GreedyPolicy,
    NoopPolicy,
    PoleAnglePolicy,
    RandomPolicy,
)

_MODULES = (classic, fill, deepcomp, a3, energy)

#: every rule of the package by its baseline name, in the order of `_MODULES`
RULES: dict[str, type[Baseline]] = {cls.name: cls for m in _MODULES for cls in m.RULES}

#: the field's rules (not mobrl's classic ones), by name
FIELD_RULES: list[str] = [cls.name for m in (fill, deepcomp, a3) for cls in m.RULES]

__all__ = [
    "FIELD_RULES",
    "RULES",
    "Baseline",
    "FullPolicy",
    "GreedyPolicy",
    "NoopPolicy",
    "PerUEBaseline",
    "PoleAnglePolicy",
    "RandomPolicy",
    "_PerUEBaseline",
]
