"""How close the references' search comes to the exact step optimum under a radio model that
couples UEs, measured where exhaustive search is feasible.

Under interference `oracle` cannot score UEs' moves one by one: it searches whole link sets
(`mobrl.evaluation.coupled.coupled_best`, a coordinate ascent over each UE's action from no
change and from greedy's moves). This script plays greedy episodes of each layout (the states
a policy meets) and, at every step, lets a random group of active UEs move while the others
keep their links, the group as large as `EXHAUSTIVE_ACTIONS` joint choices allow (about 5-8
UEs). On that group it compares the search with `exhaustive_actions` (every joint choice
scored): the share of steps where the search finds the optimum, and the share of the
optimum's gain over no change it reaches (mean and worst). The search is the one `oracle`
runs at scale; small groups are where it can be checked. Usage:

    python scripts/reference_quality.py [--layouts small_interference,uma19,umi_dense]
                                        [--episodes 3] [--steps 40] [--json FILE]

`small_interference` is generated on the fly (7 UMi small cells 200 m apart, 8 UEs, active
interference, proportional fair); any built-in or file layout name works.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

SMALL_INTERFERENCE = [
    "--sites", "hex:7", "--isd", "200", "--ues", "8", "--seed", "0", "--frequency", "3500",
    "--bandwidth", "2e7", "--tx-power", "30", "--station-height", "10",
    "--radio", "channel=umi", "--radio", "shadowing=true", "--radio", "interference=active",
    "--radio", "scheduler=proportional_fair", "--movement", "model=gauss_markov",
    "--movement", "alpha=0.75",
]  # fmt: skip


def layout_data(name: str, workdir: Path) -> dict[str, Any]:
    from mobrl import scenarios

    if name == "small_interference":
        from typer.testing import CliRunner

        from mobrl.cli import app

        out = workdir / "small_interference.yaml"
        result = CliRunner().invoke(
            app, ["scenarios", "generate", *SMALL_INTERFERENCE, "--out", str(out), "--force"]
        )
        if result.exit_code:
            sys.exit(f"generating small_interference failed: {result.output.strip()}")
        return scenarios.load(out)
    return scenarios.load(scenarios.path_of(name))


def group(state: Any, rng: np.random.Generator, limit: int) -> np.ndarray:
    """(BS, UE) moves allowed to a random group of active UEs with at most `limit` joint
    choices (each UE: keep, or toggle one station in range)."""
    allowed = np.zeros_like(state.reach)
    choices = 1
    for ue in rng.permutation(np.flatnonzero(state.reach.any(axis=0))).tolist():
        options = int(state.reach[:, ue].sum()) + 1
        if choices * options > limit:
            continue
        allowed[:, ue] = state.reach[:, ue]
        choices *= options
    return allowed


def measure(name: str, data: dict[str, Any], episodes: int, steps: int) -> dict[str, Any]:
    from mobrl.evaluation.coupled import coupled_best
    from mobrl.evaluation.oracle import EXHAUSTIVE_ACTIONS, exhaustive_actions, step_utility
    from mobrl.network.service import greedy_links, link_state, toward
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core(data, "ma")
    rng = np.random.default_rng(0)
    found, checked, reached = 0, 0, []
    for episode in range(episodes):
        core.seed = episode
        core.reset(seed=episode)
        for _ in range(steps):
            state = link_state(core)
            greedy = toward(state, greedy_links(state))
            allowed = group(state, rng, EXHAUSTIVE_ACTIONS)
            if allowed.any():
                keep = np.zeros_like(greedy)
                start = np.where(allowed.any(axis=0), greedy, 0)
                best = exhaustive_actions(state, allowed)
                search = coupled_best(state, allowed, [start])
                none, top = step_utility(state, keep), step_utility(state, best)
                got = step_utility(state, search)
                found += got >= top - 1e-12
                checked += 1
                if top > none + 1e-12:
                    reached.append((got - none) / (top - none))
            _, done = core.step_arrays(greedy)
            if done:
                break
    n = len(reached)
    return {
        "layout": name,
        "states": checked,
        "with_gain": n,
        "optimum_found": found / max(checked, 1),
        "gain_reached_mean": float(np.mean(reached)) if n else math.nan,
        "gain_reached_worst": float(np.min(reached)) if n else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layouts", default="small_interference,uma19,umi_dense")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40, help="steps checked per episode")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    import tempfile

    rows = []
    print(
        "| layout | states checked (a gain over no change) | search finds the optimum | "
        "gain reached: mean | worst |"
    )
    print("|---|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.layouts.split(","):
            row = measure(name, layout_data(name, Path(tmp)), args.episodes, args.steps)
            rows.append(row)
            print(
                f"| `{name}` | {row['states']} ({row['with_gain']}) | "
                f"{100 * row['optimum_found']:.1f} % | "
                f"{100 * row['gain_reached_mean']:.2f} % | {100 * row['gain_reached_worst']:.1f} % |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
