"""Typer option types several `mobrl` commands share, and enums for fixed choices (made from
the lists mobrl checks against, so --help lists them and they never drift apart)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from mobrl.core.metrics import X_AXES
from mobrl.evaluation.targets import PICKS

#: --pick of evaluate and render
PICK_HELP = (
    "best (by the run's ranking: evaluation score, run.eval.metric, when run.eval was on, "
    "else training return) or last."
)
#: more episodes than this per policy is a typo, not an experiment (and would not fit memory)
MAX_EPISODES = 100_000


Pick = Enum("Pick", {name: name for name in PICKS}, type=str)  # type: ignore[misc]
XAxis = Enum("XAxis", {name: name for name in X_AXES}, type=str)  # type: ignore[misc]


Episodes = Annotated[
    int, typer.Option("--episodes", min=1, max=MAX_EPISODES, help="Episodes per policy.")
]
Seed = Annotated[
    int, typer.Option("--seed", min=0, help="Seed of the first episode (then seed+1, ...).")
]
Workers = Annotated[
    int | None, typer.Option("--workers", min=1, help="Parallel processes (default: CPUs).")
]
PickOption = Annotated[Pick, typer.Option("--pick", help=PICK_HELP)]
Explore = Annotated[bool, typer.Option("--explore/--no-explore", help="Sample actions.")]
Output = Annotated[
    Path | None, typer.Option("--output", help="Dir for summary.json, episodes.csv.")
]
Trust = Annotated[
    bool,
    typer.Option(
        "--trust-checkpoint",
        help="Load a checkpoint whose pickles need more than RLlib's own classes (runs its code).",
    ),
]
