"""The report's files: report.md, a self-contained report.html and groups.csv beside the
figures, put together from the sections of the runs and evaluations found under the inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.files import atomic_write_csv, atomic_write_text
from mobrl.reporting.contents import logged_columns, wanted_metrics, x_axes
from mobrl.reporting.evaluation_sections import evaluation_section, matrix_section
from mobrl.reporting.markup import Draft, FolderNames, html_page
from mobrl.reporting.runs import Found, discover, group_trials
from mobrl.reporting.training_sections import (
    eval_training_section,
    front_section,
    info_section,
    metric_section,
    runs_section,
    service_section,
)


def _title(found: Found, names: FolderNames) -> list[str]:
    """report.md's title and its first line: what was found, under which inputs, by which
    version of mobrl."""
    from importlib.metadata import version

    runs = len({t.run_dir for t in found.trials})
    counts = [
        f"{n} {what}{'s' if n != 1 else ''}"
        for n, what in (
            (runs, "run"),
            (len(found.trials), "trial"),
            (len(found.evaluations), "evaluation"),
            (len(found.matrices), "generalisation matrix"),
        )
        if n
    ]
    inputs = ", ".join(f"`{names(p)}`" for p in names.given)
    return [
        "# mobrl report",
        "",
        f"{', '.join(counts)} under {inputs}; mobrl {version('mobrl')}.",
        "",
    ]


def _training_part(
    draft: Draft,
    found: Found,
    metrics: list[str] | None,
    axes: list[str],
    group_by: list[str] | None,
) -> None:
    """The training runs' sections, and groups.csv: every group's numbers per measure."""
    import pandas as pd

    groups = group_trials(found.trials, group_by)
    draft.result["groups"] = {label: [t.name for t in ts] for label, ts in groups.items()}
    columns = logged_columns(found.trials)
    wanted = wanted_metrics(metrics, columns)
    runs_section(draft, groups)
    rows_all: list[dict[str, Any]] = []
    for i, metric in enumerate(m for m in wanted if m in columns):
        rows_all += metric_section(draft, groups, metric, i, axes)
    x_col = keys.X_AXES[axes[0]]
    service_section(draft, groups, columns, x_col)
    info_section(draft, groups, columns, x_col)
    eval_training_section(draft, groups, columns, x_col, rows_all)
    front_section(draft, groups, columns)
    atomic_write_csv(draft.out / "groups.csv", pd.DataFrame(rows_all))


def build_report(
    paths: list[Path],
    out: Path,
    metrics: list[str] | None = None,
    x: str | None = None,
    group_by: list[str] | None = None,
) -> dict[str, Any]:
    """Write the report into `out`; return what it holds (groups, curves per metric against
    the first x axis, tables, files). Without `x`, curves go against env steps and wall time."""
    axes = x_axes(x)
    found = discover(paths)
    names = FolderNames(paths)
    out.mkdir(parents=True, exist_ok=True)
    draft = Draft(out, names, _title(found, names))
    if found.trials:
        _training_part(draft, found, metrics, axes, group_by)
    for j, (folder, summary) in enumerate(found.evaluations):
        evaluation_section(draft, folder, summary, j)
    for k, (folder, matrix) in enumerate(found.matrices):
        matrix_section(draft, folder, matrix, k)
    if found.notes:
        draft.md += ["", "## Notes", ""] + [f"- {names.text(note)}" for note in found.notes]
    text = "\n".join(draft.md) + "\n"
    atomic_write_text(out / "report.md", text)
    atomic_write_text(out / "report.html", html_page(text, out))
    draft.result["notes"] = found.notes
    return draft.result
