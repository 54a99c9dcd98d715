"""`mobrl compare`: algorithms compared over tasks and seeds. Each run's normalised score at a
budget every run of its task reached (`compare_scores`), aggregated with stratified-bootstrap
intervals, profiles and the probability of improvement (`compare_stats`), drawn
(`compare_figures`) and written as compare.md, CSVs and compare.json."""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.reporting import compare_stats as st
from mobrl.reporting.compare_scores import Scored, at_budget, line_up, score
from mobrl.reporting.runs import discover

#: points of a sample-efficiency curve
CURVE_POINTS = 40
#: files of a comparison (a folder holding compare.md is refused without --overwrite)
MARKER = "compare.md"


def _by_algorithm(tasks: dict[str, list[Scored]], budget: str) -> dict[str, list[np.ndarray]]:
    """Per algorithm, one array of its runs' scores at the budget per task (tasks in order)."""
    algorithms = sorted({s.algorithm for runs in tasks.values() for s in runs})
    return {
        a: [
            np.array([s.at[budget] for s in sorted(runs, key=lambda s: s.seed) if s.algorithm == a])
            for runs in tasks.values()
        ]
        for a in algorithms
    }


def _improvement(per_algo: dict[str, list[np.ndarray]], reps: int) -> list[dict[str, Any]]:
    """P(X > Y) for each pair, the likelier winner named first."""
    out = []
    for a, b in combinations(per_algo, 2):
        p, low, high = st.improvement(per_algo[a], per_algo[b], reps)
        if p < 0.5:
            a, b, p, low, high = b, a, 1 - p, 1 - high, 1 - low
        out.append({"x": a, "y": b, "probability": p, "low": low, "high": high})
    return out


def _efficiency(tasks: dict[str, list[Scored]], budget: str, reps: int) -> dict[str, Any]:
    """Per task and algorithm: the IQM over its runs of the score held since each run's last
    evaluation, from where every run of it has one to where the first of them stopped."""
    curves: dict[str, dict[str, dict[str, list[float]]]] = {}
    for task, runs in tasks.items():
        curves[task] = {}
        for algo in sorted({s.algorithm for s in runs}):
            mine = [s for s in runs if s.algorithm == algo]
            start = max(float(s.axis(budget)[0]) for s in mine)
            stop = min(float(s.axis(budget)[-1]) for s in mine)
            xs = np.linspace(start, stop, CURVE_POINTS) if stop > start else [start]
            c: dict[str, list[float]] = {"x": [], "iqm": [], "low": [], "high": []}
            for x in xs:
                values = np.array([s.value_at(budget, x) for s in mine])
                point, low, high = st.interval([values], st.iqm, reps)
                for k, v in zip(("x", "iqm", "low", "high"), (x, point, low, high)):
                    c[k].append(float(v))
            curves[task][algo] = c
    return curves


def compare(paths: list[Path], budget: str = "env_steps", reps: int = st.REPS) -> dict[str, Any]:
    """The comparison of the runs under `paths` at `budget` (env_steps or seconds)."""
    found = discover(paths)
    if not found.trials:
        raise UserError(
            "compare reads training runs and none is under "
            f"{', '.join(str(p) for p in paths)}; give run or multirun dirs of mobrl train."
        )
    for trial in found.trials:
        if trial.status != "finished":
            raise UserError(
                f"{trial.run_dir.name}/{trial.name} is {trial.status}; compare finished runs "
                "only (a failed run's score is no algorithm's result)."
            )
    tasks = line_up([score(t) for t in found.trials])
    limits = at_budget(tasks, budget)
    per_algo = _by_algorithm(tasks, budget)
    everything = np.concatenate([np.concatenate(v) for v in per_algo.values()])
    taus = np.linspace(min(0.0, everything.min()), max(1.0, everything.max()), 41)
    profiles: dict[str, Any] = {"taus": taus.tolist()}
    for algo, scores in per_algo.items():
        profiles[algo] = [v.tolist() for v in st.profile(scores, taus, reps)]
    return {
        "budget": budget,
        "limits": limits,
        "reps": reps,
        "algorithms": list(per_algo),
        "tasks": {t: _task_rows(runs) for t, runs in tasks.items()},
        "runs": [_run_row(s, budget, limits[s.task]) for runs in tasks.values() for s in runs],
        "aggregates": {a: st.aggregates(v, reps) for a, v in per_algo.items()},
        "improvement": _improvement(per_algo, reps),
        "profiles": profiles,
        "efficiency": {b: _efficiency(tasks, b, reps) for b in ("env_steps", "seconds")},
        "notes": found.notes,
    }


def _task_rows(runs: list[Scored]) -> dict[str, Any]:
    """A task's numbers: what its scores are normalised by, and its seeds."""
    first = runs[0]
    return {
        "floor": first.floor,
        "floor_value": first.floor_value,
        "reference": first.ceiling,
        "reference_value": first.ceiling_value,
        "seeds": sorted({s.seed for s in runs}),
    }


def _run_row(s: Scored, budget: str, limit: float) -> dict[str, Any]:
    return {
        "algorithm": s.algorithm,
        "task": s.task,
        "seed": s.seed,
        "score": s.at[budget],
        "budget": budget,
        # what the scoring evaluation cost: env steps (its mark, with run.eval.every_env_steps)
        # and training seconds
        **dict(zip(("env_steps_at", "seconds_at"), s.cost_at(budget, limit))),
        "final_score": float(s.score[-1]),
        "final_raw": float(s.raw[-1]),
        "env_steps": float(s.env_steps[-1]),
        "seconds": float(s.seconds[-1]),
        "floor": s.floor,
        "reference": s.ceiling,
        "run": str(s.trial.run_dir),
        "trial": s.trial.name,
    }


def _ci(point: float, low: float, high: float) -> str:
    if math.isnan(low):
        return f"{point:.3f}"
    return f"{point:.3f} [{low:.3f}, {high:.3f}]"


def tables(result: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """The comparison's tables as rows of text (the terminal and compare.md)."""
    from mobrl.evaluation.paired import mean_ci

    runs = result["runs"]
    aggregates = [
        {"algorithm": a, "runs": str(sum(r["algorithm"] == a for r in runs))}
        | {name: _ci(*result["aggregates"][a][name]) for name in st.AGGREGATES}
        for a in result["algorithms"]
    ]
    budget = "env steps" if result["budget"] == "env_steps" else "seconds"
    # what reaching the budget took the runs, on the other axis
    other = "seconds_at" if result["budget"] == "env_steps" else "env_steps_at"
    per_task = []
    for task, info in result["tasks"].items():
        for a in result["algorithms"]:
            mine = [r for r in runs if r["task"] == task and r["algorithm"] == a]
            m, half, _ = mean_ci([r["score"] for r in mine])
            costs = [r[other] for r in mine]
            per_task.append(
                {
                    "task": task,
                    "algorithm": a,
                    "score": f"{m:.3f}" + (f" ± {half:.3f}" if half == half else ""),
                    "0 → 1": f"{info['floor']} → {info['reference']}",
                    budget: f"{result['limits'][task]:,.0f}",
                    ("training s" if other == "seconds_at" else "env steps"): (
                        f"{min(costs):,.0f}-{max(costs):,.0f}"
                        if max(costs) > min(costs)
                        else f"{costs[0]:,.0f}"
                    ),
                }
            )
    improvement = [
        {
            "pair": f"P({p['x']} > {p['y']})",
            "probability": _ci(p["probability"], p["low"], p["high"]),
        }
        for p in result["improvement"]
    ]
    return {"aggregates": aggregates, "tasks": per_task, "improvement": improvement}


def write(result: dict[str, Any], out: Path) -> list[Path]:
    """compare.md, scores.csv, aggregates.csv, improvement.csv, compare.json and figures."""
    import json

    import pandas as pd

    from mobrl.core.files import atomic_write_csv, atomic_write_text
    from mobrl.reporting import compare_figures as fig
    from mobrl.reporting.markup import html_page, md_table

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_csv(out / "scores.csv", pd.DataFrame(result["runs"]))
    atomic_write_csv(
        out / "aggregates.csv",
        pd.DataFrame(
            [
                {"algorithm": a, "aggregate": n, "value": v[0], "ci_low": v[1], "ci_high": v[2]}
                for a, by in result["aggregates"].items()
                for n, v in by.items()
            ]
        ),
    )
    atomic_write_csv(out / "improvement.csv", pd.DataFrame(result["improvement"]))
    atomic_write_text(out / "compare.json", json.dumps(result, indent=1, default=float))
    figures = [
        fig.plot_aggregates(result, out),
        fig.plot_profiles(result, out),
        fig.plot_improvement(result, out),
        *(fig.plot_efficiency(result, b, out) for b in ("env_steps", "seconds")),
    ]
    budget = "env steps" if result["budget"] == "env_steps" else "seconds of training"
    md = [
        "# mobrl compare",
        "",
        f"{len(result['runs'])} runs of {len(result['algorithms'])} algorithms on "
        f"{len(result['tasks'])} tasks, each scored at the {budget} every run of its task "
        "reached, on its evaluation's held-out seeds: 0 is the floor (greedy, or the "
        "strongest rule played; a Gymnasium task's return 0, or the random policy's where "
        "it is solved below 0), 1 the best reference (a Gymnasium task's solved return). "
        f"Intervals: 95 % stratified bootstrap ({result['reps']} resamples, runs resampled "
        "within each task).",
    ]
    for title, key in (
        ("Aggregate scores", "aggregates"),
        ("Per task (mean ± 95 % CI over seeds)", "tasks"),
        ("Probability of improvement", "improvement"),
    ):
        md += ["", f"## {title}", "", *md_table(tables(result)[key])]
    md += ["", "## Figures", ""] + [f"![{p.stem}]({p.name})" for p in figures]
    if result["notes"]:
        md += ["", "## Notes", ""] + [f"- {n}" for n in result["notes"]]
    text = "\n".join(md) + "\n"
    atomic_write_text(out / "compare.html", html_page(text, out))
    atomic_write_text(out / MARKER, text)  # last: a folder with it holds a whole comparison
    return figures
