"""`mobrl report`: the report files (report.md, a self-contained report.html, groups.csv and
the figures) and the one-screen summary."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.core.files import atomic_write_csv, atomic_write_text
from mobrl.reporting.figures import (
    plot_aggregate,
    plot_curves,
    plot_evaluation,
    plot_matrix,
    plot_service,
)
from mobrl.reporting.runs import discover, group_trials
from mobrl.reporting.stats import (
    BOOTSTRAP_RESAMPLES,
    IQM_MIN_TRIALS,
    cell,
    group_curve,
    has_iqm,
    iqm_cell,
    summary_rows,
)

#: metrics drawn as small multiples when the runs logged them (mobile-env scenarios)
SERVICE_METRICS = (
    keys.UTILITY_MEAN,
    keys.RATE_MEAN,
    keys.JAIN_UTILITY,
    keys.NET_CONNECTED,
)


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
        from mobrl.core.errors import unknown_choice

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
        # service first where the runs measured it: mean UE utility (evaluation's, then
        # training's), then the returns
        service = [
            f"{keys.EVALUATION}/{keys.UTILITY_MEAN}",
            keys.result_key(keys.UTILITY_MEAN),
        ]
        wanted = metrics or [c for c in service if c in columns] + [keys.RETURN_MEAN] + (
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
                        "last (mean ± 95 % CI)": cell(r["last_mean"], r["last_ci95"]),
                        "best (mean ± 95 % CI)": cell(r["best_mean"], r["best_ci95"]),
                        "env steps": f"{r['env_steps_mean']:,.0f}",
                    }
                    | ({"last, IQM [95 % bootstrap CI]": iqm_cell(r)} if has_iqm(rows) else {})
                    for r in rows
                ]
            )
            if has_iqm(rows):
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
            png = plot_service(groups, service, keys.X_AXES[axes[0]], axes[0], out)
            result["files"].append(png)
            md += ["", "## UE service during training", "", f"![UE service]({png.name})"]
        atomic_write_csv(out / "groups.csv", pd.DataFrame(rows_all))
    for j, (folder, summary) in enumerate(found.evaluations):
        png = plot_evaluation(folder, summary, out, f"evaluation_{j}")
        result["files"].append(png)
        md += ["", f"## Evaluation: {folder}", "", f"![evaluation]({png.name})", ""]
        md += _md_table(
            [
                {
                    "policy": name,
                    "return": cell(stats["return"]["mean"], stats["return"]["ci95"]),
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
    atomic_write_text(out / "report.md", text)
    atomic_write_text(out / "report.html", _embed(text, out))
    result["notes"] = found.notes
    return result


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

    from mobrl.core.console import make_console
    from mobrl.core.files import check_writable

    out = Path(out) if out else Path("reports") / datetime.now().strftime("%Y-%m-%d/%H-%M-%S")
    if (out / "report.md").exists() and not overwrite:
        raise UserError(
            f"--out '{out}' already holds a report. Choose another --out or add --overwrite."
        )
    check_writable(out, "--out", example="./reports/mine")
    console = make_console()
    with console.status("reading the runs and drawing the report ..."):  # terminals only
        result = build_report(paths, out, metrics, x, group_by)
    for metric, rows in result["tables"].items():
        table = Table(title=f"{metric}: last and best value per group, mean ± 95 % CI over trials")
        iqm = has_iqm(rows)
        for col in ("group", "trials", "last", "best", "env steps") + (
            ("last IQM",) if iqm else ()
        ):
            table.add_column(col, justify="left" if col == "group" else "right")
        for r in rows:
            table.add_row(
                r["group"],
                str(r["trials"]),
                cell(r["last_mean"], r["last_ci95"]),
                cell(r["best_mean"], r["best_ci95"]),
                f"{r['env_steps_mean']:,.0f}",
                *([iqm_cell(r)] if iqm else []),
            )
        console.print(table)
    for note in result["notes"]:
        console.print(f"note: {note}")
    shown = out.absolute()
    console.print(
        f"report: {shown / 'report.md'}, {shown / 'report.html'} ({len(result['files'])} figures)"
    )
    return out
