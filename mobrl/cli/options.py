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


# Hydra's own flags of `mobrl train`, parsed here and handed on to `hydra.main` unchanged
HydraCfgChoice = Enum("HydraCfgChoice", {n: n for n in ("job", "hydra", "all")}, type=str)  # type: ignore[misc]
HydraInfoTopic = Enum(  # type: ignore[misc]
    "HydraInfoTopic",
    {n: n for n in ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")},
    type=str,
)
HydraCfg = Annotated[
    HydraCfgChoice | None,
    typer.Option("--cfg", "-c", help="Print the config (job, hydra or all) instead of running."),
]
HydraInfo = Annotated[
    HydraInfoTopic | None,
    typer.Option("--info", "-i", help="Hydra's information on a topic (all for everything)."),
]
Multirun = Annotated[
    bool, typer.Option("--multirun", "-m", help="One job per value of each a,b,c override.")
]
Resolve = Annotated[
    bool, typer.Option("--resolve", help="With --cfg or --help: values, not interpolations.")
]
Package = Annotated[
    str | None, typer.Option("--package", "-p", help="With --cfg: only this part of the config.")
]
ConfigDir = Annotated[
    str | None, typer.Option("--config-dir", "-cd", help="Another dir of config groups to add.")
]
ConfigName = Annotated[
    str | None, typer.Option("--config-name", "-cn", help="Another primary config by name.")
]
ShowHelp = Annotated[
    bool, typer.Option("--help", "-h", help="The groups, their options and every config key.")
]
HydraHelp = Annotated[bool, typer.Option("--hydra-help", help="Hydra's own help.")]
