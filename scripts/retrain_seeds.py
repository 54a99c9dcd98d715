"""How much a preset's result depends on its training seed: the preset retrained with several
seeds, each run evaluated on the same held-out seeds, and the spread printed.

For each seed S: `mobrl train scenario=LAYOUT preset=PRESET run.seed=S
[run.stop.iterations=N]`, then `mobrl evaluate --checkpoint RUN_DIR --episodes E` on seeds
0..E-1 (the zoo's held-out seeds), one job after the other (2 cores: one job at a time). The
first run's evaluation plays the baselines B too (`--baselines B`); the later ones play the
trained policy and greedy alone (`--baselines greedy`) and are paired by seed with the first
one's baseline episodes, as `mobrl evaluate` pairs them: the baselines do not depend on the
run (on the same env; greedy's episodes are checked to be the same to the bit), and a
reference like `oracle` is most of an evaluation's cost at city scale. `--baselines-from DIR`
takes them from an evaluation already made instead (`mobrl evaluate`'s output dir, e.g. the
zoo entry's, on the same layout and env settings and on seeds 0..E-1 at least: its baselines'
episodes on those seeds), so every run plays its trained policy and greedy alone.
Printed as Markdown: per seed the share of the greedy -> reference gap closed, mean UE utility − greedy and − the
best rule (paired mean ± 95 % CI), connected fraction and p5 − greedy, and the training time
(imitation plus RLlib's training time, evaluation during training left out); then the mean,
the smallest and the largest share. Usage:

    python scripts/retrain_seeds.py --scenario uma19 --preset ppo/uma19/ma_imitate
        [--seeds 1,2,3,4,5] [--iterations 5] [--episodes 100]
        [--baselines greedy,greedy_rsrp,greedy_fill,a3,deepcomp_dynamic,oracle2]
        [--override KEY=VALUE ...] [--baselines-from EVAL_DIR] [--json FILE] [--keep]

Cell agents (a preset of env=cells or env=hierarchical, on a layout with `power:`) are
measured as energy saving instead: give `--baselines all_on,threshold,energy_oracle` (the
first one is the baseline later runs replay to check the env). Per seed: the energy saved
over all_on and its share of energy_oracle's saving, the objective, p5 utility and connected
fraction − threshold (paired mean ± 95 % CI), and whether the run meets the cell agents'
goal (≥ 90 % of the reference's saving, the objective's CI above threshold's, p5 and
connected no worse than threshold's: CI reaching 0 or above). E.g.

    python scripts/retrain_seeds.py --scenario uma19_energy --preset ppo/uma19_energy/cells_turns \
        --iterations 8 --baselines all_on,threshold,energy_oracle --override env=cells

`--override` (repeatable) adds a training override to every run, e.g. `--override
env.turn_rounds=2` to retrain a variant of the preset, or `--override run.eval.interval=0` to
skip the evaluation during training (its time is not counted anyway).

Run dirs and evaluations go to a temporary folder (`--keep`: ./retrain_seeds/, kept).
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

UTILITY, CONNECTED, P5 = "ue/utility/mean", "network/connected_fraction", "ue/utility/p5"
ENERGY, OBJECTIVE = "network/energy", "network/objective"
TRAINED = "trained"
#: the cell agents' goal: this share of the reference's energy saving at least
SAVING_GOAL = 0.9


def mobrl(args: list[str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mobrl", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode:
        sys.exit(f"mobrl {' '.join(args)} failed:\n{done.stderr.strip()[-2000:]}")
    return done.stdout


def train_seconds(run_dir: Path) -> float:
    """Imitation plus RLlib's training time of the run's last iteration."""
    rows = [json.loads(line) for f in run_dir.glob("tune/*/result.json") for line in open(f)]
    last = rows[-1]
    imitation = rows[0].get("imitation", {}).get("time_s", 0.0)
    return float(imitation) + float(last["time_total_s"])


def episodes(evaluation: Path) -> list[dict[str, Any]]:
    with open(evaluation / "episodes.csv", newline="") as f:
        return list(csv.DictReader(f))


def paired_summary(rows: list[dict[str, Any]], baselines: str) -> dict[str, Any]:
    """`mobrl evaluate`'s statistics of the trained policy's and the baselines' episodes."""
    from mobrl.evaluation.paired import Tally

    return Tally([TRAINED, *baselines.split(",")]).add(rows).summary()


def baseline_rows(baselines: Path, played: list[dict], args: argparse.Namespace) -> list[dict]:
    """The baselines' episodes in `baselines` on the held-out seeds; refused unless it holds
    every baseline on every one of them and its greedy episodes are those just `played`."""
    seeds = {str(s) for s in range(args.episodes)}
    rows = [r for r in episodes(baselines) if r["policy"] != TRAINED and r["seed"] in seeds]
    for name in args.baselines.split(","):
        have = {r["seed"] for r in rows if r["policy"] == name}
        if have != seeds:
            sys.exit(f"{baselines} lacks {name} on {len(seeds - have)} of the held-out seeds")
    check = replayed(args)
    again = {r["seed"]: r for r in played if r["policy"] == check}
    if any(again[r["seed"]] != r for r in rows if r["policy"] == check):
        sys.exit(f"{check}'s episodes in {baselines} differ from this run's: another env")
    return rows


def replayed(args: argparse.Namespace) -> str:
    """The baseline every later run plays again to check its env is the first one's: greedy,
    or for cell agents the first baseline given (all_on)."""
    names = args.baselines.split(",")
    return "greedy" if "greedy" in names else names[0]


def one_seed(
    args: argparse.Namespace, seed: int, work: Path, baselines: Path | None
) -> dict[str, Any]:
    """Train with `seed` and evaluate; `baselines`: the evaluation that played them (None:
    this one plays them)."""
    run_dir = work / f"run_{seed}"
    train = [
        "train", f"scenario={args.scenario}", f"preset={args.preset}", f"run.seed={seed}",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    if args.iterations:
        train.append(f"run.stop.iterations={args.iterations}")
    train += args.override
    mobrl(train, work)
    evaluation = work / f"eval_{seed}"
    first = baselines is None
    evaluate = ["evaluate", "--checkpoint", str(run_dir), "--episodes", str(args.episodes),
                "--baselines", args.baselines if first else replayed(args), "--output", str(evaluation)]  # fmt: skip
    mobrl(evaluate, work)
    rows = episodes(evaluation)
    if not first:
        rows = [r for r in rows if r["policy"] == TRAINED] + baseline_rows(baselines, rows, args)
    summary = paired_summary(rows, args.baselines)
    if "energy_oracle" in summary["policies"]:
        return {"seed": seed, **energy_row(summary), "train_s": train_seconds(run_dir)}
    paired = summary["paired_vs_trained"]
    from mobrl.evaluation.paired import REFERENCES

    rules = [k for k in paired if k not in (*REFERENCES, "greedy", "full")]

    def diff(name: str, key: str) -> tuple[float, float]:
        d = paired[name]["diff"][key]
        return float(d["mean"]), float(d["ci95"])

    best = min(rules, key=lambda k: diff(k, UTILITY)[0]) if rules else "greedy"
    return {
        "seed": seed,
        "closed": float(summary["gap_closed"]["trained"]),
        "reference": summary["gap_reference"],
        "vs_greedy": diff("greedy", UTILITY),
        "best_rule": best,
        "vs_best_rule": diff(best, UTILITY),
        "connected": diff("greedy", CONNECTED)[0],
        "p5": diff("greedy", P5)[0],
        "train_s": train_seconds(run_dir),
    }


def energy_row(summary: dict[str, Any]) -> dict[str, Any]:
    """A cell agents' run: energy saved over all_on and its share of energy_oracle's, the
    objective and service − threshold (paired), and whether the run meets the goal."""
    energy = {p: float(m[ENERGY]["mean"]) for p, m in summary["policies"].items()}
    saved = {p: 1.0 - e / energy["all_on"] for p, e in energy.items()}
    paired = summary["paired_vs_trained"]["threshold"]["diff"]
    vs = {
        k: (float(paired[k]["mean"]), float(paired[k]["ci95"])) for k in (OBJECTIVE, P5, CONNECTED)
    }
    share = saved[TRAINED] / saved["energy_oracle"]
    meets = (
        share >= SAVING_GOAL
        and vs[OBJECTIVE][0] - vs[OBJECTIVE][1] > 0
        and all(vs[k][0] + vs[k][1] >= 0 for k in (P5, CONNECTED))
    )
    return {"saved": saved[TRAINED], "share": share, "vs_threshold": vs, "meets": meets}


def energy_line(r: dict[str, Any]) -> str:
    vs = r["vs_threshold"]
    cells = " | ".join(f"{vs[k][0]:+.4f} ± {vs[k][1]:.4f}" for k in (OBJECTIVE, P5, CONNECTED))
    yes = "yes" if r["meets"] else "no"
    return f"| {r['seed']} | {r['saved']:.1%} ({r['share']:.0%}) | {cells} | {yes} | {r['train_s']:.0f} s |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--preset", required=True)
    parser.add_argument("--seeds", default="1,2,3,4,5")
    parser.add_argument("--iterations", type=int, default=5, help="0: the preset's own stop")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--baselines", default="greedy,greedy_rsrp,greedy_fill,a3,deepcomp_dynamic,oracle2"
    )
    parser.add_argument(
        "--override", action="append", default=[], help="a training override, KEY=VALUE"
    )
    parser.add_argument(
        "--baselines-from",
        type=Path,
        help="an evaluation dir whose baselines' episodes to pair with",
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--keep", action="store_true", help="keep run dirs in ./retrain_seeds")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    work = Path("retrain_seeds").absolute() if args.keep else Path(tempfile.mkdtemp())
    work.mkdir(exist_ok=True)
    extra = f" with {' '.join(args.override)}" if args.override else ""
    print(
        f"{args.preset}{extra} on {args.scenario}: seeds {args.seeds}, {args.episodes} held-out "
        "episodes\n"
    )
    cells = "energy_oracle" in args.baselines.split(",")
    if cells:
        print(
            "| seed | saved (of the reference's) | objective − threshold | p5 utility − "
            "threshold | connected − threshold | goal met | training |"
        )
        print("|---:|---:|---:|---:|---:|:---:|---:|")
    else:
        print(
            "| seed | gap closed | UE utility − greedy | − best rule | connected − greedy | "
            "p5 − greedy | training |"
        )
        print("|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    try:
        baselines = args.baselines_from.absolute() if args.baselines_from else None
        for seed in seeds:
            r = one_seed(args, seed, work, baselines)
            baselines = baselines or work / f"eval_{seed}"
            rows.append(r)
            if cells:
                print(energy_line(r), flush=True)
                continue
            print(
                f"| {seed} | {r['closed']:.0%} | {r['vs_greedy'][0]:+.4f} ± {r['vs_greedy'][1]:.4f}"
                f" | {r['vs_best_rule'][0]:+.4f} ± {r['vs_best_rule'][1]:.4f} ({r['best_rule']})"
                f" | {r['connected']:+.4f} | {r['p5']:+.4f} | {r['train_s']:.0f} s |",
                flush=True,
            )
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if cells:
        shares = [r["share"] for r in rows]
        print(
            f"\n{sum(r['meets'] for r in rows)} of {len(rows)} seeds meet the goal; share of "
            f"the reference's saving: mean {statistics.mean(shares):.0%}, smallest "
            f"{min(shares):.0%}, largest {max(shares):.0%}"
        )
        return
    closed = [r["closed"] for r in rows]
    print(
        f"\ngap closed (to {rows[0]['reference']}): mean {statistics.mean(closed):.0%}, "
        f"smallest {min(closed):.0%}, largest {max(closed):.0%} over {len(rows)} seeds"
    )


if __name__ == "__main__":
    main()
