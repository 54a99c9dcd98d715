"""The end of an experiment: trials ranked by the metric, best config and checkpoint, files.

Writes `summary.json` (what `mobrl evaluate` reads to pick the best checkpoint) and
`trials.csv` (one row per trial: rank, searched hyperparameters, best and last metric,
iterations, checkpoints, error) into the run dir, and prints the ranking as a table.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from mobrl.core import metrics
from mobrl.core.errors import error_summary
from mobrl.core.rundir import RunDir
from mobrl.training.periodic_eval import eval_metric, evaluates


def _metric_history(result: Any, metric: str) -> list[tuple[float, Any]]:
    """(value, iteration) of every iteration that has the metric."""
    frame = result.metrics_dataframe
    if frame is None or metric not in frame:
        return []
    iterations = frame[metrics.ITERATION] if metrics.ITERATION in frame else [None] * len(frame)
    return [
        (float(v), None if i is None else int(i))
        for v, i in zip(frame[metric], iterations)
        if v is not None and not math.isnan(float(v))
    ]


def trial_rows(
    results: Any, metric: str, mode: str, locations: dict, scope: str = "all"
) -> list[dict[str, Any]]:
    """One dict per trial, best first (trials without the metric last). A trial's score
    ("best") is its best value over all iterations (`scope="all"`) or its last one."""
    from mobrl.training.tuning import sampled

    better = max if mode == "max" else min
    rows = []
    for result in results:
        history = _metric_history(result, metric)
        top = (
            (better(history, key=lambda h: h[0]) if scope == "all" else history[-1])
            if history
            else (None, None)
        )
        best_ckpt, ckpt_value, ckpt_iteration = _best_checkpoint(result, metric, mode)
        last_ckpt = result.checkpoint.path if result.checkpoint else None
        trial_dir = Path(result.path)
        rows.append(
            {
                "trial": trial_dir.name,
                "trial_dir": str(trial_dir),
                "params": sampled(result.config or {}, locations),
                "best": top[0],
                "best_iteration": top[1],
                "last": history[-1][0] if history else None,
                "iterations": result.metrics.get(metrics.ITERATION) if result.metrics else None,
                "best_checkpoint": best_ckpt or last_ckpt,
                # the metric's value where the best checkpoint was saved (the trial's best
                # value may come from an iteration without a checkpoint)
                "best_checkpoint_value": ckpt_value if best_ckpt else None,
                "best_checkpoint_iteration": ckpt_iteration if best_ckpt else None,
                "last_checkpoint": last_ckpt,
                "error": error_summary(str(result.error)) if result.error else None,
            }
        )
    sign = -1.0 if mode == "max" else 1.0
    rows.sort(key=lambda r: (r["best"] is None, sign * (r["best"] or 0.0), r["trial"]))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank if row["best"] is not None else None
    return rows


def _best_checkpoint(result: Any, metric: str, mode: str) -> tuple[str | None, Any, Any]:
    """The trial's checkpoint with the best value of `metric` (by `mode`), that value and
    its iteration; (None, None, None) when no checkpoint carries the metric."""
    best: tuple[str | None, Any, Any] = (None, None, None)
    for checkpoint, values in getattr(result, "best_checkpoints", None) or []:
        value = metrics.result_value(values, metric)
        if not isinstance(value, (int, float)) or value != value:
            continue
        if best[1] is None or (value > best[1] if mode == "max" else value < best[1]):
            best = (checkpoint.path, float(value), values.get(metrics.ITERATION))
    return best


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def report(
    cfg: DictConfig,
    results: Any,
    locations: dict,
    run: RunDir,
    experiment_dir: Path,
    console: Any,
) -> dict[str, Any]:
    """Print the ranking and write summary.json and trials.csv; return the summary."""
    import pandas as pd

    metric, mode = cfg.tune.metric, cfg.tune.mode
    rows = trial_rows(results, metric, mode, locations, cfg.tune.scope)
    summary = _summary(cfg, rows, experiment_dir)
    run.write_summary(summary, pd.DataFrame(_flat_rows(rows, metric)))

    console.print()
    if len(rows) > 1 or locations:
        _print_ranking(console, rows, locations, metric, mode, summary["best_params"])
    _print_best(console, cfg, summary)
    _print_checkpoints(console, cfg, summary)
    console.print(f"tensorboard: tensorboard --logdir {run.elsewhere() or run.path}")
    console.print(f"results: {run.summary_file}, {run.trials_file}")
    failed = [r for r in rows if r["error"]]
    for r in failed:
        print(
            f"trial failed: {r['error']} (see {Path(r['trial_dir']) / 'error.txt'})",
            file=sys.stderr,
        )
    if failed:
        where = (
            "from the latest checkpoint"
            if any(r.get("last_checkpoint") for r in failed)
            else "(from the start: no checkpoint was written yet)"
        )
        print(
            f"once the cause is fixed, continue {where}: mobrl train "
            f"--resume {run.path} --retry-errored",
            file=sys.stderr,
        )
    return summary


def _summary(cfg: DictConfig, rows: list[dict[str, Any]], experiment_dir: Path) -> dict[str, Any]:
    """What summary.json holds: the best trial's score, config and checkpoints, every trial's
    row, and the trials that failed."""
    top = rows[0] if rows else None
    scored = top is not None and top["best"] is not None
    return {
        "metric": cfg.tune.metric,
        "mode": cfg.tune.mode,
        "eval_metric": eval_metric(cfg) if evaluates(cfg) else None,
        # the trial's best value of `metric` (over all iterations, or its last: tune.scope)
        "best_return": top["best"] if scored else None,
        "best_iteration": top["best_iteration"] if scored else None,
        "best_checkpoint_value": top["best_checkpoint_value"] if top else None,
        "best_checkpoint_iteration": top["best_checkpoint_iteration"] if top else None,
        "best_trial": top["trial"] if scored else None,
        "best_params": top["params"] if scored else {},
        "best_checkpoint": top["best_checkpoint"] if top else None,
        "last_checkpoint": top["last_checkpoint"] if top else None,
        "experiment_dir": str(experiment_dir),
        "trials": rows,
        "failed": [r["trial"] for r in rows if r["error"]],
    }


def _flat_rows(rows: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """trials.csv: one row per trial, its searched hyperparameters as columns."""
    return [
        {
            "rank": r["rank"],
            "trial": r["trial"],
            **r["params"],
            f"best {metric}": r["best"],
            f"last {metric}": r["last"],
            "iterations": r["iterations"],
            "best_checkpoint": r["best_checkpoint"],
            "error": r["error"],
        }
        for r in rows
    ]


def _print_ranking(
    console: Any,
    rows: list[dict[str, Any]],
    locations: dict,
    metric: str,
    mode: str,
    best_params: dict[str, Any],
) -> None:
    """The table of trials ranked (for several trials or a search), then the best config."""
    from rich.table import Table

    table = Table(title=f"trials ranked by {metric} ({mode})")
    params = list(locations)
    for col in ("rank", "trial", *params, "best", "last", "iter", "status"):
        table.add_column(col, justify="left" if col in ("trial", "status") else "right")
    for r in rows:
        status = "error" if r["error"] else "ok"
        table.add_row(
            _show(r["rank"]),
            r["trial"],
            *(_show(r["params"].get(p)) for p in params),
            _show(r["best"]),
            _show(r["last"]),
            _show(r["iterations"]),
            status,
        )
    console.print(table)
    if best_params:
        best = "  ".join(f"{k}={_show(v)}" for k, v in best_params.items())
        console.print(f"[bold]best config:[/bold] {best}")


def _print_best(console: Any, cfg: DictConfig, summary: dict[str, Any]) -> None:
    """The best value of the metric, at which iteration, and what kind of value it is."""
    metric, best_value = summary["metric"], summary["best_return"]
    averaged = (
        f" (training return: mean of up to the last {metrics.RETURN_WINDOW} episodes, exploring "
        "actions; `mobrl evaluate` measures the policy itself)"
        if metric == metrics.RETURN_MEAN and best_value is not None
        else ""
    )
    if metric in (metrics.EVAL_RETURN_MEAN, metrics.EVAL_SCORE) and best_value is not None:
        ev = cfg.run.eval
        what = f"mean {summary['eval_metric']}" if metric == metrics.EVAL_SCORE else "return"
        averaged = (
            f" (evaluation during training, {what}: deterministic actions, {ev.episodes} "
            f"episodes on seeds {ev.seed}-{ev.seed + ev.episodes - 1}; for a result to "
            "publish, run `mobrl evaluate` on other seeds)"
        )
    iteration = summary["best_iteration"]
    at_iteration = f" at iteration {iteration}" if iteration is not None else ""
    console.print(
        f"[bold]best {metric}:[/bold] "
        + (
            "no episode finished"
            if best_value is None
            else f"{best_value:.3f}{at_iteration}{averaged}"
        )
    )


def _print_checkpoints(console: Any, cfg: DictConfig, summary: dict[str, Any]) -> None:
    """The best checkpoint (with its value, and why it may not be the best iteration's), the
    last one, and how to evaluate the best."""
    metric, iteration = summary["metric"], summary["best_iteration"]
    at = summary["best_checkpoint_value"]
    where = ""
    if at is not None:
        where = f" ({metric} {at:.3f} at iteration {summary['best_checkpoint_iteration']}"
        if summary["best_checkpoint_iteration"] != iteration:
            every = cfg.run.checkpoint.frequency
            where += f": the best of the checkpoints kept; iteration {iteration} has none"
            if every and every > 1:
                where += f" (checkpoints every {every} iterations: run.checkpoint.frequency)"
        where += ")"
    console.print(f"[bold]best checkpoint:[/bold] {summary['best_checkpoint']}{where}")
    console.print(f"[bold]last checkpoint:[/bold] {summary['last_checkpoint']}")
    if summary["best_checkpoint"]:
        console.print(f"evaluate: mobrl evaluate --checkpoint {summary['best_checkpoint']}")
