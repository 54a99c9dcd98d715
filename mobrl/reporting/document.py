"""`mobrl report`: the report files (report.md, a self-contained report.html, groups.csv and
the figures) and the one-screen summary."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import Interrupted, UserError
from mobrl.core.files import atomic_write_csv, atomic_write_text
from mobrl.evaluation.paired import closed_text
from mobrl.reporting.figures import (
    gap_stats,
    paired_gaps,
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
    digits,
    group_curve,
    has_iqm,
    iqm_cell,
    matrix_measure,
    matrix_table,
    summary_rows,
)

#: metrics drawn as small multiples when the runs logged them (mobile-env scenarios)
SERVICE_METRICS = (
    keys.UTILITY_MEAN,
    keys.RATE_MEAN,
    keys.JAIN_UTILITY,
    keys.NET_CONNECTED,
)
#: what evaluation during training is shown in, service first, then its return
EVAL_TRAINING = tuple(f"{keys.EVALUATION}/{m}" for m in (
    keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5
)) + (keys.EVAL_RETURN_MEAN,)  # fmt: skip
#: the columns of an evaluation's tables: service first, Jain beside it, then the return
EVAL_COLUMNS = (keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5, keys.JAIN_UTILITY, "return")

#: report.html's own style: readable type, tables that scroll rather than widen the page,
#: figures never wider than the text
STYLE = """
:root{color-scheme:light}
body{margin:0;padding:0 1rem;background:#fff;color:#1f2328;
 font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:58rem;margin:2rem auto 4rem}
h1{font-size:1.9rem;margin:0 0 .4em;padding-bottom:.3em;border-bottom:1px solid #d0d7de}
h2{font-size:1.35rem;margin:2.4em 0 .6em;padding-bottom:.25em;border-bottom:1px solid #eaeef2}
h3{font-size:1.1rem;margin:1.6em 0 .5em}
h1,h2,h3,p,li{overflow-wrap:anywhere}
p,ul{margin:.6em 0}
img{display:block;max-width:100%;height:auto;margin:1.2rem auto}
table{display:block;max-width:100%;overflow-x:auto;border-collapse:collapse;margin:1rem 0;
 font-size:.9rem;font-variant-numeric:tabular-nums}
th,td{padding:.4rem .7rem;border-bottom:1px solid #d8dee4;text-align:left}
td{white-space:nowrap}
td:first-child{white-space:normal;min-width:8rem}
thead th{background:#f6f8fa;border-bottom:2px solid #d0d7de;vertical-align:bottom;
 font-weight:600;min-width:4.5rem}
tbody tr:nth-child(even){background:#fafbfc}
code{font-size:.88em;background:#f6f8fa;padding:.1em .3em;border-radius:4px}
.meta{color:#59636e}
"""


def _embed(md: str, out: Path) -> str:
    """report.md as a self-contained HTML page (Markdown's own converter, images inlined)."""
    import markdown

    def inline(match: Any) -> str:
        data = base64.b64encode((out / match.group(1)).read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = markdown.markdown(md, extensions=["tables"])
    body = re.sub(r'src="([^"/]+\.png)"', inline, body)
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>mobrl report</title><style>{STYLE}</style></head>\n"
        f"<body><main>\n{body}\n</main></body></html>\n"
    )


_NUMBER = re.compile(r"[-+−]?[\d.,]+( ± [\d.,]+)?( \[.*\])?|-|nan")


def _md_table(rows: list[dict[str, Any]]) -> list[str]:
    """A Markdown table; columns of numbers aligned right."""
    cols = list(rows[0])
    numeric = [all(_NUMBER.fullmatch(str(r[c])) for r in rows) for c in cols]
    rule = "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"
    lines = ["| " + " | ".join(cols) + " |", rule]
    return lines + ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _column(key: str) -> str:
    """A table column's header: the measure in words, with a unit of measurement (Mbit/s,
    min) but not a range (a scaled utility's −1…1 is said once, under the table)."""
    unit = keys.unit(key)
    return keys.axis_label(key) if unit and "…" not in unit else keys.words(key)


class _Names:
    """Folders named relative to the report's inputs (the input itself by its name), so a
    report shows no absolute paths of the machine that wrote it."""

    def __init__(self, paths: list[Path]) -> None:
        #: the inputs as given, and deepest first (the one that names a folder)
        self.given = list(dict.fromkeys(Path(p).expanduser().absolute() for p in paths))
        self.inputs = sorted(self.given, key=lambda p: len(p.parts), reverse=True)

    def __call__(self, folder: Path) -> str:
        folder = Path(folder)
        for root in self.inputs:  # the deepest input that holds it
            if folder == root:
                return root.name or str(root)
            if root in folder.parents:
                return folder.relative_to(root).as_posix()
        return folder.name

    def text(self, note: str) -> str:
        """`note` with the inputs' absolute paths made relative."""
        for root in self.inputs:
            note = note.replace(f"{root}/", "").replace(str(root), root.name)
        return note


def _run_dirs(names: _Names, trials: list[Any], shown: int = 3) -> str:
    dirs = list(dict.fromkeys(names(t.run_dir) for t in trials))
    more = f", … (+{len(dirs) - shown})" if len(dirs) > shown else ""
    return ", ".join(f"`{d}`" for d in dirs[:shown]) + more


def _last_evaluation(
    groups: dict[str, list[Any]], columns: set[str], rows_all: list[dict[str, Any]]
) -> list[str]:
    """Evaluation during training, per group: the last evaluation's service measures, its
    return beside them and the paired gap of its score to each baseline (mean ± 95 % CI over
    the group's trials)."""
    shown = [c for c in EVAL_TRAINING if c in columns]
    gaps = sorted(
        {m.group(1) for c in columns if (m := re.fullmatch(r"evaluation/gap/(.+)/mean", c))}
    )
    metrics = {t.settings.get("run.eval.metric") for ts in groups.values() for t in ts}
    score = keys.EVAL_METRICS.get(metrics.pop()) if len(metrics) == 1 else None
    score_words = keys.words(score) if score else "score"
    table = []
    for label, trials in groups.items():
        row: dict[str, str] = {"group": label, "trials": str(len(trials))}
        for key in shown + [keys.eval_gap(b, "mean") for b in gaps]:
            (r,) = summary_rows({label: trials}, key)
            if key in shown and key not in {x["metric"] for x in rows_all}:
                rows_all.append(r)
            header = (
                _column(key) if key in shown else f"{score_words} − {key.split('/')[2]}, paired"
            )
            place = digits(score) if key not in shown and score else digits(key)
            row[header] = cell(r["last_mean"], r["last_ci95"], place, sign=key not in shown)
        table.append(row)
    return _md_table(table)


def build_report(
    paths: list[Path],
    out: Path,
    metrics: list[str] | None = None,
    x: str | None = None,
    group_by: list[str] | None = None,
) -> dict[str, Any]:
    """Write the report into `out`; return what it holds (groups, curves per metric against
    the first x axis, tables, files). Without `x`, curves go against env steps and wall time."""
    from importlib.metadata import version

    import pandas as pd

    if x is not None and x not in keys.X_AXES:
        from mobrl.core.errors import unknown_choice

        raise unknown_choice(
            "--x", x, list(keys.X_AXES), "Use --x env_steps, time_s or iterations."
        )
    axes = [x] if x else ["env_steps", "time_s"]
    found = discover(paths)
    names = _Names(paths)
    out.mkdir(parents=True, exist_ok=True)
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
    md = [
        "# mobrl report",
        "",
        f"{', '.join(counts)} under {inputs}; mobrl {version('mobrl')}.",
        "",
    ]
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
                {
                    "group": label,
                    "trials": len(ts),
                    "runs": len({t.run_dir for t in ts}),
                    "run dirs": _run_dirs(names, ts),
                }
                for label, ts in groups.items()
            ]
        )
        md += [
            "",
            "Trials are grouped by the settings that differ between them (seeds aside); a "
            "curve is the mean of a group's trials, its band the 95 % confidence interval.",
        ]
        rows_all: list[dict[str, Any]] = []
        for i, metric in enumerate(m for m in wanted if m in columns):
            heading = _capital(keys.title(metric))
            md += ["", f"## {heading}", ""]
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
                md.append(f"![{heading} vs {keys.words(keys.X_AXES[axis])}]({png.name})")
            md.append("")
            rows = summary_rows(groups, metric)
            rows_all += rows
            result["tables"][metric] = rows
            s, place = keys.scale(metric), digits(metric)
            md += _md_table(
                [
                    {
                        "group": r["group"],
                        "trials": r["trials"],
                        "last (mean ± 95 % CI)": cell(
                            r["last_mean"] * s, r["last_ci95"] * s, place
                        ),
                        "best (mean ± 95 % CI)": cell(
                            r["best_mean"] * s, r["best_ci95"] * s, place
                        ),
                        "env steps": f"{r['env_steps_mean']:,.0f}",
                    }
                    | (
                        {"last, IQM [95 % bootstrap CI]": iqm_cell(r, place, s)}
                        if has_iqm(rows)
                        else {}
                    )
                    for r in rows
                ]
            )
            if keys.unit(metric):
                md += ["", f"Unit: {keys.unit(metric)}."]
            if has_iqm(rows):
                png = plot_aggregate(rows, metric, out, f"aggregate_{i}")
                result["files"].append(png)
                md += [
                    "",
                    f"Aggregate over groups with at least {IQM_MIN_TRIALS} trials: interquartile "
                    "mean of the last values, 95 % percentile-bootstrap interval "
                    f"({BOOTSTRAP_RESAMPLES} resamples).",
                    "",
                    f"![{heading}: IQM of the last values]({png.name})",
                ]
        service = [keys.result_key(m) for m in SERVICE_METRICS if keys.result_key(m) in columns]
        if service:
            png = plot_service(groups, service, keys.X_AXES[axes[0]], out)
            result["files"].append(png)
            md += [
                "",
                "## UE service during training",
                "",
                "How the UEs were served in the training episodes: mean UE utility "
                f"({keys.UTILITY_UNIT}; −1: unconnected), data rate, fairness and the connected "
                "share of UEs, each group's mean.",
                "",
                f"![UE service in training episodes]({png.name})",
            ]
        evaluated = [c for c in EVAL_TRAINING if c in columns]
        if evaluated:
            png = plot_service(
                groups, evaluated, keys.X_AXES[axes[0]], out, "evaluation_training",
                "Evaluation during training: deterministic episodes on fixed seeds",
            )  # fmt: skip
            result["files"].append(png)
            md += [
                "",
                "## Evaluation during training",
                "",
                "The last evaluation of each trial, service first, mean ± 95 % CI over the "
                "group's trials; paired gaps are in the run's evaluation score "
                "(`run.eval.metric`), on the same seeds as each baseline.",
                "",
            ]
            md += _last_evaluation(groups, columns, rows_all)
            md += ["", f"![Evaluation during training]({png.name})"]
        atomic_write_csv(out / "groups.csv", pd.DataFrame(rows_all))
    for j, (folder, summary) in enumerate(found.evaluations):
        name = names(folder)
        png = plot_evaluation(name, summary, out, f"evaluation_{j}")
        result["files"].append(png)
        md += ["", f"## Evaluation: {name}", ""] + _evaluation(name, summary, png)
    for k, (folder, matrix) in enumerate(found.matrices):
        name = names(folder)
        png, table = plot_matrix(matrix, out, f"matrix_{k}")
        result["files"].append(png)
        result.setdefault("matrices", []).append(table)
        baseline = (matrix.get("baselines") or ["greedy"])[0]
        measure = matrix_measure(matrix, baseline)
        md += [
            "",
            f"## Generalisation matrix: {name}",
            "",
            f"Each trained policy (rows) on each layout (columns): {keys.words(measure)}, "
            f"trained − {baseline}, paired by seed, mean ± 95 % CI.",
            "",
            f"![Generalisation matrix of {name}]({png.name})",
            "",
        ]
        md += _md_table(table)
        if measure != "return":
            rows, cols, (gap, half) = matrix_table(matrix, baseline, "return")
            md += ["", f"The same in {keys.words('return')}, trained − {baseline}:", ""]
            md += _md_table(
                [
                    {
                        "trained on": r,
                        **{c: cell(gap[i, j], half[i, j]) for j, c in enumerate(cols)},
                    }
                    for i, r in enumerate(rows)
                ]
            )
    if found.notes:
        md += ["", "## Notes", ""] + [f"- {names.text(note)}" for note in found.notes]
    text = "\n".join(md) + "\n"
    atomic_write_text(out / "report.md", text)
    atomic_write_text(out / "report.html", _embed(text, out))
    result["notes"] = found.notes
    return result


def _evaluation(name: str, summary: dict[str, Any], png: Path) -> list[str]:
    """An evaluation's part of report.md: service first (mean UE utility, connected UEs, p5
    and Jain) with the return beside them, per policy, then paired by seed."""
    policies = summary["policies"]
    measured = next(iter(policies.values()))
    shown = [c for c in EVAL_COLUMNS if c in measured] or list(measured)[:1]
    env = summary.get("env_config") or {}
    scenario = env.get("scenario") or env.get("id")
    seeds = summary.get("seed_range")
    facts = [f"layout `{scenario}`" if scenario else ""]
    facts += [f"seeds {seeds[0]}–{seeds[1]}" if seeds else ""]
    facts += ["exploring actions" if summary.get("explore") else ""]
    md = [
        f"{int(measured[shown[0]]['n'])} episodes per policy"
        + "".join(f", {f}" for f in facts if f)
        + "; mean ± 95 % CI (Student t).",
        "",
    ]
    md += _md_table(
        [
            {"policy": p}
            | {
                _column(c): cell(policies[p][c]["mean"], policies[p][c]["ci95"], digits(c))
                for c in shown
                if c in policies[p]
            }  # fmt: skip
            | {"episodes": int(policies[p][shown[0]]["n"])}
            for p in policies
        ]
    )
    ref, gaps = paired_gaps(summary)
    if gaps:
        first = "trained − each baseline" if ref == "trained" else f"each baseline − {ref}"
        md += ["", f"{_capital(first)}, paired by seed (> 0: the first is better):", ""]
        table = []
        for other, gap in gaps.items():
            row = {"vs" if ref == "trained" else "policy": other}
            for c in shown:
                st = gap_stats(gap, c)
                row[_column(c)] = cell(st["mean"], st["ci95"], digits(c), True) if st else "-"
            table.append(row)
        md += _md_table(table)
    closed = summary.get("gap_closed", {}).get("trained")
    if closed is not None:
        md += [
            "",
            "Share of the greedy → oracle gap in mean UE utility the trained policy closes: "
            f"{closed_text(closed)} (0 %: greedy's level, 100 %: the oracle's).",
        ]
    if keys.UTILITY_MEAN in shown:
        md += ["", f"UE utility is mobile-env's scaled utility ({keys.UTILITY_UNIT}; −1: an "
               "unconnected UE); connected UEs is the share of UE-steps with a connection."]  # fmt: skip
    if summary.get("notes"):
        md += [""] + [f"- note: {n}" for n in summary["notes"]]
    md += ["", f"![Evaluation of {name}: service first, then the return]({png.name})"]
    return md


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
    existed = (out / "report.md").exists()
    try:
        with console.status("reading the runs and drawing the report ..."):  # terminals only
            result = build_report(paths, out, metrics, x, group_by)
    except KeyboardInterrupt:
        kept = f"; the earlier report in {out} is kept" if existed else ""
        raise Interrupted(
            "report stopped while reading the runs and drawing; its pages (report.md and "
            f"report.html, written last and whole) were not written{kept}."
        ) from None
    for metric, rows in result["tables"].items():
        title = _capital(keys.title(metric)) + (
            f" ({keys.unit(metric)})" if keys.unit(metric) else ""
        )
        table = Table(title=f"{title}: last and best value per group, mean ± 95 % CI over trials")
        iqm = has_iqm(rows)
        for col in ("group", "trials", "last", "best", "env steps") + (
            ("last IQM",) if iqm else ()
        ):
            table.add_column(col, justify="left" if col == "group" else "right")
        s, place = keys.scale(metric), digits(metric)
        for r in rows:
            table.add_row(
                r["group"],
                str(r["trials"]),
                cell(r["last_mean"] * s, r["last_ci95"] * s, place),
                cell(r["best_mean"] * s, r["best_ci95"] * s, place),
                f"{r['env_steps_mean']:,.0f}",
                *([iqm_cell(r, place, s)] if iqm else []),
            )
        console.print(table)
    for note in result["notes"]:
        console.print(f"note: {note}")
    shown = out.absolute()
    console.print(
        f"report: {shown / 'report.md'}, {shown / 'report.html'} ({len(result['files'])} figures)"
    )
    return out
