"""`mobrl report`: learning curves, evaluation charts and a shareable report across runs.

Reads what `mobrl train` and `mobrl evaluate` leave behind (run dirs, multirun dirs, Tune
trial dirs' progress.csv, evaluation summary.json), groups trials by the settings that differ
between them (seeds excepted, so seeds become the confidence band), and writes figures (PNG and
SVG), `report.md`, a self-contained `report.html` and `groups.csv`.
"""

from __future__ import annotations

import base64
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mobrl import metrics as keys
from mobrl.errors import UserError
from mobrl.rundir import TRIAL_PROGRESS, RunDir

#: metrics drawn as small multiples when the runs logged them (mobile-env scenarios)
SERVICE_METRICS = (
    keys.UTILITY_MEAN,
    keys.RATE_MEAN,
    keys.JAIN_UTILITY,
    keys.NET_CONNECTED,
)
#: composed-config keys that never tell runs apart in a meaningful way
_IGNORED = ("run.name", "run.storage_path", "scenario.path", "preset.found_by", "preset.notes")
GRID_POINTS = 100
#: the keys that name a config group's option, in the order labels show them
_CHOICES = ("scenario.name", "env.mode", "algo.name", "tune.name", "engine", "env.obs")


@dataclass
class Trial:
    """One Tune trial of one run: its settings and its progress.csv."""

    run_dir: Path
    name: str
    settings: dict[str, Any]
    progress: Any  # pandas DataFrame (empty when the trial wrote nothing yet)
    status: str = "finished"  # finished | error | running


@dataclass
class Found:
    trials: list[Trial] = field(default_factory=list)
    evaluations: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    #: `mobrl evaluate --scenarios` output dirs and their matrix.json
    matrices: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    if isinstance(node, list):
        return {prefix[:-1]: json.dumps(node)}
    return {prefix[:-1]: node}


def _read_progress(path: Path) -> Any:
    import pandas as pd

    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, FileNotFoundError):
        return pd.DataFrame()


def _run_trials(run: RunDir, found: Found) -> None:
    config = _flatten(run.read_config())
    summary = run.read_summary()
    by_trial = {t["trial"]: t for t in (summary or {}).get("trials", [])}
    trial_dirs = run.trial_dirs()
    if not trial_dirs:
        found.notes.append(f"{run.path}: no trial has written progress yet")
    for trial_dir in trial_dirs:
        info = by_trial.get(trial_dir.name, {})
        sampled = {f"tune.{k}": v for k, v in _flatten(info.get("params") or {}).items()}
        status = "running" if summary is None else ("error" if info.get("error") else "finished")
        progress = _read_progress(trial_dir / TRIAL_PROGRESS)
        if status != "finished":
            found.notes.append(f"{trial_dir}: trial {status}; its curves end where its data ends")
        found.trials.append(
            Trial(run.path, trial_dir.name, {**config, **sampled}, progress, status)
        )


def discover(paths: list[Path]) -> Found:
    """Every trial and evaluation under `paths` (run, multirun, trial or evaluation dirs)."""
    from mobrl.evaluate import EPISODES_FILE, SUMMARY_FILE
    from mobrl.transfer import MATRIX_JSON

    found = Found()
    runs: set[Path] = set()
    for path in paths:
        path = Path(path).expanduser().absolute()
        if not path.exists():
            raise UserError(f"'{path}' does not exist. Give run, multirun or evaluation dirs.")
        for manifest in sorted(path.rglob(RunDir.MANIFEST)):
            run = RunDir(manifest.parent)
            if run.is_run() and run.path not in runs:
                runs.add(run.path)
                _run_trials(run, found)
        for episodes in sorted(path.rglob(EPISODES_FILE)):
            folder = episodes.parent
            if any(run in folder.parents for run in runs) or not (folder / SUMMARY_FILE).is_file():
                continue
            summary = json.loads((folder / SUMMARY_FILE).read_text())
            if "policies" in summary and folder not in {f for f, _ in found.evaluations}:
                found.evaluations.append((folder, summary))
        for matrix in sorted(path.rglob(MATRIX_JSON)):
            if matrix.parent not in {f for f, _ in found.matrices}:
                found.matrices.append((matrix.parent, json.loads(matrix.read_text())))
    if not found.trials and not found.evaluations and not found.matrices:
        raise UserError(
            f"no mobrl runs or evaluations under {', '.join(str(p) for p in paths)}. Give the "
            "run dir `mobrl train` printed, a multirun dir or an `mobrl evaluate` output dir."
        )
    return found


def _seed_like(key: str) -> bool:
    return key.split(".")[-1] == "seed"


def group_trials(trials: list[Trial], group_by: list[str] | None = None) -> dict[str, list[Trial]]:
    """Trials grouped by the settings in `group_by`, or by every setting that differs between
    them except seeds (so runs that differ only by seed form one group)."""
    if group_by:
        unknown = [k for k in group_by if not any(k in t.settings for t in trials)]
        if unknown:
            names = sorted({k for t in trials for k in t.settings})
            from mobrl.errors import unknown_choice

            raise unknown_choice(
                "--group-by", unknown[0], names, "Use a config key, e.g. algo.name."
            )
        varying = list(group_by)
    else:
        all_keys = sorted({k for t in trials for k in t.settings})
        varying = [
            k
            for k in all_keys
            if not _seed_like(k)
            and k not in _IGNORED
            and len({json.dumps(t.settings.get(k), default=str) for t in trials}) > 1
        ]
        # keys that split the trials the same way as an earlier one say nothing new
        # (scenario.name and scenario.id, algo.name and the algorithm's class)
        partitions: set[tuple[str, ...]] = set()
        distinct = []

        # prefer the config groups a user picks (scenario, env, algo) to the values that
        # follow from them (a preset's hyperparameters)
        def preference(key: str) -> tuple[int, str]:
            if key in _CHOICES:
                return (0, f"{_CHOICES.index(key):03d}")
            return (2 if key.startswith("preset.") else 1, key)

        for key in sorted(varying, key=preference):
            split = tuple(json.dumps(t.settings.get(key), default=str) for t in trials)
            index = {v: i for i, v in enumerate(dict.fromkeys(split))}
            shape = tuple(str(index[v]) for v in split)
            if shape not in partitions:
                partitions.add(shape)
                distinct.append(key)
        varying = sorted(distinct)
    groups: dict[str, list[Trial]] = {}
    for trial in trials:
        label = ", ".join(f"{k}={trial.settings.get(k)}" for k in varying) or "all runs"
        groups.setdefault(label, []).append(trial)
    return groups


def _series(trial: Trial, x_col: str, metric: str) -> tuple[np.ndarray, np.ndarray] | None:
    frame = trial.progress
    if frame is None or frame.empty or metric not in frame or x_col not in frame:
        return None
    data = frame[[x_col, metric]].dropna()
    if data.empty:
        return None
    return data[x_col].to_numpy(float), data[metric].to_numpy(float)


def t_half_width(values: np.ndarray) -> float:
    """Half-width of the 95 % Student-t confidence interval of the mean (nan for n < 2)."""
    from mobrl.evaluate import mean_ci

    return mean_ci(list(values))[1]


@dataclass
class Curve:
    """A group's mean curve over the x range every trial of the group covers."""

    label: str
    x: np.ndarray
    mean: np.ndarray
    half: np.ndarray  # 95 % CI half-width per point (nan with one trial)
    n: int


def group_curve(label: str, trials: list[Trial], x_col: str, metric: str) -> Curve | None:
    series = [s for s in (_series(t, x_col, metric) for t in trials) if s is not None]
    if not series:
        return None
    start = max(s[0].min() for s in series)
    stop = min(s[0].max() for s in series)
    grid = np.linspace(start, stop, GRID_POINTS) if stop > start else np.array([stop])
    values = np.stack([np.interp(grid, x, y) for x, y in series])
    half = np.array([t_half_width(values[:, i]) for i in range(values.shape[1])])
    return Curve(label, grid, values.mean(axis=0), half, len(series))


def _per_trial(trials: list[Trial], metric: str, reduce: Any) -> np.ndarray:
    """`reduce` of each trial's history of `metric` (trials without it are left out)."""
    series = (_series(t, keys.ITERATION, metric) for t in trials)
    return np.asarray([reduce(s[1]) for s in series if s is not None], dtype=float)


def _last(values: np.ndarray) -> float:
    return float(values[-1])


#: fewest trials in a group for an aggregate (IQM) score
IQM_MIN_TRIALS = 3
BOOTSTRAP_RESAMPLES = 2000


def iqm_ci(values: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """Interquartile mean of `values` and its 95 % percentile-bootstrap interval.

    The IQM is the mean of the middle 50 % of the values (scipy's 25 % trimmed mean), as
    rliable defines it: robust to one outlying seed, yet less noisy than the median. A group
    holds one task (one configuration), so rliable's stratified bootstrap is a plain bootstrap
    over the group's trials here; scipy.stats.bootstrap resamples them. NaN with fewer than
    IQM_MIN_TRIALS trials.
    """
    from scipy import stats

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size < IQM_MIN_TRIALS:
        return math.nan, math.nan, math.nan
    iqm = float(stats.trim_mean(x, 0.25))
    if np.ptp(x) == 0:  # every trial ended at the same value: the interval is that value
        return iqm, iqm, iqm
    res = stats.bootstrap(
        (x,),
        lambda sample, axis: stats.trim_mean(sample, 0.25, axis=axis),
        n_resamples=BOOTSTRAP_RESAMPLES,
        confidence_level=0.95,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return iqm, float(res.confidence_interval.low), float(res.confidence_interval.high)


def summary_rows(groups: dict[str, list[Trial]], metric: str) -> list[dict[str, Any]]:
    """Per group: trials, last and best value of `metric` (mean ± 95 % CI over trials), and
    with at least IQM_MIN_TRIALS trials the IQM of the last values with its bootstrap CI."""
    rows = []
    for label, trials in groups.items():
        last, best = _per_trial(trials, metric, _last), _per_trial(trials, metric, np.nanmax)
        steps = _per_trial(trials, keys.ENV_STEPS, _last)
        iqm, iqm_low, iqm_high = iqm_ci(last)
        rows.append(
            {
                "group": label,
                "trials": len(trials),
                "metric": metric,
                "last_mean": float(last.mean()) if last.size else float("nan"),
                "last_ci95": t_half_width(last),
                "best_mean": float(best.mean()) if best.size else float("nan"),
                "best_ci95": t_half_width(best),
                "env_steps_mean": float(steps.mean()) if steps.size else float("nan"),
                "last_iqm": iqm,
                "last_iqm_low": iqm_low,
                "last_iqm_high": iqm_high,
            }
        )
    return rows


def _cell(mean: float, half: float) -> str:
    if math.isnan(mean):
        return "-"
    return f"{mean:.2f}" if math.isnan(half) else f"{mean:.2f} ± {half:.2f}"


def _iqm_cell(row: dict[str, Any]) -> str:
    if math.isnan(row["last_iqm"]):
        return "-"
    return f"{row['last_iqm']:.2f} [{row['last_iqm_low']:.2f}, {row['last_iqm_high']:.2f}]"


def _has_iqm(rows: list[dict[str, Any]]) -> bool:
    return any(not math.isnan(r["last_iqm"]) for r in rows)


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no screen needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, out: Path, stem: str) -> Path:
    png = out / f"{stem}.png"
    fig.savefig(png, dpi=120, bbox_inches="tight")
    fig.savefig(out / f"{stem}.svg", bbox_inches="tight")
    return png


def plot_curves(curves: list[Curve], metric: str, x_name: str, out: Path, stem: str) -> Path:
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(7, 4))
    for curve in curves:
        (line,) = ax.plot(curve.x, curve.mean, label=f"{curve.label} (n={curve.n})")
        if curve.n > 1:
            ax.fill_between(
                curve.x, curve.mean - curve.half, curve.mean + curve.half,
                color=line.get_color(), alpha=0.2, linewidth=0,
            )  # fmt: skip
    ax.set_xlabel(x_name)
    ax.set_ylabel(metric)
    values = np.concatenate([c.mean for c in curves]) if curves else np.array([])
    if values.size:
        q10, q90 = np.percentile(values, [10, 90])
        low, high = q10 - 3 * (q90 - q10), q90 + 3 * (q90 - q10)
        if values.min() < low or values.max() > high:  # an untrained first iteration, say
            pad = 0.05 * (q90 - q10 or 1.0)
            ax.set_ylim(max(values.min(), low) - pad, min(values.max(), high) + pad)
            ax.set_title("y axis clipped to the bulk of the curves", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def plot_aggregate(rows: list[dict[str, Any]], metric: str, out: Path, stem: str) -> Path:
    """IQM of each group's last values with its 95 % bootstrap interval, one row per group."""
    plt = _pyplot()

    shown = [r for r in rows if not math.isnan(r["last_iqm"])]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * len(shown)))
    for i, r in enumerate(shown):
        ax.barh(i, r["last_iqm_high"] - r["last_iqm_low"], left=r["last_iqm_low"], height=0.6,
                alpha=0.5)  # fmt: skip
        ax.plot([r["last_iqm"]] * 2, [i - 0.3, i + 0.3], color="black", linewidth=2)
    ax.set_yticks(range(len(shown)), [f"{r['group']} (n={r['trials']})" for r in shown])
    ax.margins(x=0.15)
    ax.set_xlabel(f"IQM of the last {metric} over trials (95 % bootstrap CI)")
    ax.grid(axis="x", alpha=0.3)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def plot_evaluation(folder: Path, summary: dict[str, Any], out: Path, stem: str) -> Path:
    """Return per policy (mean ± 95 % CI) and the trained policy's paired gaps."""
    plt = _pyplot()

    policies = list(summary["policies"])
    means = [summary["policies"][p]["return"]["mean"] for p in policies]
    cis = [summary["policies"][p]["return"]["ci95"] for p in policies]
    gaps = summary.get("paired_vs_trained") or {}
    fig, axes = plt.subplots(1, 2 if gaps else 1, figsize=(10 if gaps else 5, 3.5), squeeze=False)
    axes[0][0].bar(policies, means, yerr=cis, capsize=4, color="tab:blue")
    axes[0][0].set_title("return (mean ± 95 % CI)")
    magnitudes = np.abs(means)
    if magnitudes.max() > 10 * max(np.median(magnitudes), 1e-9):  # e.g. noop far below the rest
        axes[0][0].set_yscale("symlog", linthresh=max(np.median(magnitudes), 1.0))
    if gaps:
        names = list(gaps)
        axes[0][1].bar(
            names,
            [gaps[n]["return_diff_mean"] for n in names],
            yerr=[gaps[n]["ci95"] for n in names],
            capsize=4,
            color="tab:green",
        )
        axes[0][1].axhline(0, color="black", linewidth=0.8)
        axes[0][1].set_title("trained − baseline (paired by seed)")
    fig.suptitle(str(folder.name), fontsize=9)
    path = _save(fig, out, stem)
    plt.close(fig)
    return path


def _embed(md: str, out: Path) -> str:
    """report.md as a self-contained HTML page (Markdown's own converter, images inlined)."""
    import markdown

    def inline(match: Any) -> str:
        data = base64.b64encode((out / match.group(1)).read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = markdown.markdown(md, extensions=["tables"])
    body = re.sub(r'src="([^"/]+\.png)"', inline, body)
    style = "body{font-family:sans-serif;max-width:60em;margin:auto}td,th{padding:2px 8px}"
    return f"<!doctype html><meta charset='utf-8'><style>{style}</style>\n{body}"


def _md_table(rows: list[dict[str, str]]) -> list[str]:
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    return lines + ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]


def build_report(
    paths: list[Path],
    out: Path,
    metrics: list[str] | None = None,
    x: str | None = None,
    group_by: list[str] | None = None,
) -> dict[str, Any]:
    """Write the report into `out`; return what it holds (groups, curves per metric against
    the first x axis, tables, files). Without `x`, curves go against env steps and wall time."""
    import pandas as pd

    if x is not None and x not in keys.X_AXES:
        from mobrl.errors import unknown_choice

        raise unknown_choice(
            "--x", x, list(keys.X_AXES), "Use --x env_steps, time_s or iterations."
        )
    axes = [x] if x else ["env_steps", "time_s"]
    found = discover(paths)
    out.mkdir(parents=True, exist_ok=True)
    md = ["# mobrl report", ""]
    result: dict[str, Any] = {"groups": {}, "curves": {}, "tables": {}, "files": []}
    if found.trials:
        groups = group_trials(found.trials, group_by)
        result["groups"] = {label: [t.name for t in ts] for label, ts in groups.items()}
        columns = {c for t in found.trials if not t.progress.empty for c in t.progress.columns}
        wanted = metrics or [keys.RETURN_MEAN] + (
            [keys.EVAL_RETURN_MEAN] if keys.EVAL_RETURN_MEAN in columns else []
        )
        missing = [m for m in wanted if m not in columns]
        if missing and len(missing) == len(wanted):
            raise UserError(
                f"no run logged '{missing[0]}'. Use --metric with a column of progress.csv, "
                f"e.g. --metric {keys.RETURN_MEAN}."
            )
        md += ["## Runs", ""]
        md += _md_table(
            [
                {"group": label, "trials": len(ts), "runs": len({t.run_dir for t in ts})}
                for label, ts in groups.items()
            ]
        )
        rows_all: list[dict[str, Any]] = []
        for i, metric in enumerate(m for m in wanted if m in columns):
            md += ["", f"## {metric}", ""]
            for axis in axes:
                curves = [
                    c
                    for c in (
                        group_curve(label, ts, keys.X_AXES[axis], metric)
                        for label, ts in groups.items()
                    )
                    if c is not None
                ]
                result["curves"].setdefault(metric, curves)
                png = plot_curves(curves, metric, axis, out, f"curve_{i}_{axis}")
                result["files"].append(png)
                md.append(f"![{metric} vs {axis}]({png.name})")
            md.append("")
            rows = summary_rows(groups, metric)
            rows_all += rows
            result["tables"][metric] = rows
            md += _md_table(
                [
                    {
                        "group": r["group"],
                        "trials": r["trials"],
                        "last (mean ± 95 % CI)": _cell(r["last_mean"], r["last_ci95"]),
                        "best (mean ± 95 % CI)": _cell(r["best_mean"], r["best_ci95"]),
                        "env steps": f"{r['env_steps_mean']:,.0f}",
                    }
                    | ({"last, IQM [95 % bootstrap CI]": _iqm_cell(r)} if _has_iqm(rows) else {})
                    for r in rows
                ]
            )
            if _has_iqm(rows):
                png = plot_aggregate(rows, metric, out, f"aggregate_{i}")
                result["files"].append(png)
                md += [
                    "",
                    f"Aggregate over groups with at least {IQM_MIN_TRIALS} trials: interquartile "
                    "mean of the last values, 95 % percentile-bootstrap interval "
                    f"({BOOTSTRAP_RESAMPLES} resamples).",
                    "",
                    f"![{metric} IQM]({png.name})",
                ]
        service = [keys.result_key(m) for m in SERVICE_METRICS if keys.result_key(m) in columns]
        if service:
            png = _plot_service(groups, service, keys.X_AXES[axes[0]], axes[0], out)
            result["files"].append(png)
            md += ["", "## UE service during training", "", f"![UE service]({png.name})"]
        pd.DataFrame(rows_all).to_csv(out / "groups.csv", index=False)
    for j, (folder, summary) in enumerate(found.evaluations):
        png = plot_evaluation(folder, summary, out, f"evaluation_{j}")
        result["files"].append(png)
        md += ["", f"## Evaluation: {folder}", "", f"![evaluation]({png.name})", ""]
        md += _md_table(
            [
                {
                    "policy": name,
                    "return": _cell(stats["return"]["mean"], stats["return"]["ci95"]),
                    "episodes": int(stats["return"]["n"]),
                }
                for name, stats in summary["policies"].items()
            ]
        )
    for k, (folder, matrix) in enumerate(found.matrices):
        png, table = plot_matrix(matrix, out, f"matrix_{k}")
        result["files"].append(png)
        result.setdefault("matrices", []).append(table)
        md += ["", f"## Generalisation matrix: {folder}", "", f"![matrix]({png.name})", ""]
        md += _md_table(table)
    if found.notes:
        md += ["", "## Notes", ""] + [f"- {note}" for note in found.notes]
    text = "\n".join(md) + "\n"
    (out / "report.md").write_text(text)
    (out / "report.html").write_text(_embed(text, out))
    result["notes"] = found.notes
    return result


def matrix_table(matrix: dict[str, Any], baseline: str) -> tuple[list[str], list[str], Any]:
    """(rows: trained on, columns: evaluated on, gap and CI arrays) of the paired gap of each
    trained policy to `baseline` in a `mobrl evaluate --scenarios` result."""
    cells = [c for c in matrix["cells"] if c["policy"] == "trained"]
    rows = list(dict.fromkeys(c["trained_on"] for c in cells))
    cols = list(matrix["scenarios"])
    gap = np.full((len(rows), len(cols)), np.nan)
    half = np.full_like(gap, np.nan)
    for c in cells:
        i, j = rows.index(c["trained_on"]), cols.index(c["evaluated_on"])
        gap[i, j] = c.get(f"gap_vs_{baseline}_mean", np.nan)
        half[i, j] = c.get(f"gap_vs_{baseline}_ci95", np.nan)
    return rows, cols, (gap, half)


def plot_matrix(matrix: dict[str, Any], out: Path, stem: str) -> tuple[Path, list[dict[str, str]]]:
    """Heat map of the paired gap to the first baseline (green: the policy is ahead, with the
    CI in each cell), and the same as table rows."""
    plt = _pyplot()

    baseline = (matrix.get("baselines") or ["greedy"])[0]
    rows, cols, (gap, half) = matrix_table(matrix, baseline)
    fig, ax = plt.subplots(figsize=(1.6 * len(cols) + 2, 0.7 * len(rows) + 1.5))
    scale = np.nanmax(np.abs(gap)) if np.isfinite(gap).any() else 1.0
    from matplotlib.colors import SymLogNorm

    # symmetric log colours: small gaps stay visible next to a policy far ahead somewhere
    norm = SymLogNorm(linthresh=max(scale / 100, 1e-9), vmin=-scale, vmax=scale)
    ax.imshow(gap, cmap="RdYlGn", norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            ax.text(j, i, _cell(gap[i, j], half[i, j]), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(cols)), cols)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_xlabel("evaluated on")
    ax.set_ylabel("trained on")
    ax.set_title(f"trained − {baseline}, paired by seed (mean ± 95 % CI)", fontsize=9)
    path = _save(fig, out, stem)
    plt.close(fig)
    table = [
        {"trained on": r, **{c: _cell(gap[i, j], half[i, j]) for j, c in enumerate(cols)}}
        for i, r in enumerate(rows)
    ]
    return path, table


def _plot_service(
    groups: dict[str, list[Trial]], columns: list[str], x_col: str, x: str, out: Path
) -> Path:
    plt = _pyplot()

    fig, axes = plt.subplots(1, len(columns), figsize=(3.2 * len(columns), 3), squeeze=False)
    for ax, column in zip(axes[0], columns):
        for label, trials in groups.items():
            curve = group_curve(label, trials, x_col, column)
            if curve is not None:
                ax.plot(curve.x, curve.mean, label=label)
        ax.set_title(column.removeprefix("env_runners/"), fontsize=9)
        ax.set_xlabel(x, fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    path = _save(fig, out, "service")
    plt.close(fig)
    return path


def report_command(
    paths: list[Path],
    out: Path | None,
    metrics: list[str] | None,
    x: str | None,
    group_by: list[str] | None,
    overwrite: bool = False,
) -> Path:
    """`mobrl report`: write the report and print a one-screen summary."""
    from datetime import datetime

    from rich.table import Table

    from mobrl.files import check_writable
    from mobrl.ui import make_console

    out = Path(out) if out else Path("reports") / datetime.now().strftime("%Y-%m-%d/%H-%M-%S")
    if (out / "report.md").exists() and not overwrite:
        raise UserError(
            f"--out '{out}' already holds a report. Choose another --out or add --overwrite."
        )
    check_writable(out, "--out", example="./reports/mine")
    result = build_report(paths, out, metrics, x, group_by)
    console = make_console()
    for metric, rows in result["tables"].items():
        table = Table(title=f"{metric}: last and best value per group, mean ± 95 % CI over trials")
        iqm = _has_iqm(rows)
        for col in ("group", "trials", "last", "best", "env steps") + (
            ("last IQM",) if iqm else ()
        ):
            table.add_column(col, justify="left" if col == "group" else "right")
        for r in rows:
            table.add_row(
                r["group"],
                str(r["trials"]),
                _cell(r["last_mean"], r["last_ci95"]),
                _cell(r["best_mean"], r["best_ci95"]),
                f"{r['env_steps_mean']:,.0f}",
                *([_iqm_cell(r)] if iqm else []),
            )
        console.print(table)
    for note in result["notes"]:
        console.print(f"note: {note}")
    shown = out.absolute()
    console.print(
        f"report: {shown / 'report.md'}, {shown / 'report.html'} ({len(result['files'])} figures)"
    )
    return out
