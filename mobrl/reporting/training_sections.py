"""The parts of report.md about training runs: which runs form which group, a section per
measure (curves, a table of last and best values, the IQM), the UE service during training
and evaluation during training. Each draws its figures and adds its lines to the draft."""

from __future__ import annotations

from typing import Any

from mobrl.core import metrics as keys
from mobrl.reporting.contents import (
    eval_score,
    eval_training_columns,
    gap_baselines,
    info_columns,
    metric_curves,
    service_columns,
)
from mobrl.reporting.figures import plot_aggregate, plot_curves, plot_service
from mobrl.reporting.markup import Draft, FolderNames, capital, column_header, md_table
from mobrl.reporting.runs import Trial
from mobrl.reporting.stats import (
    BOOTSTRAP_RESAMPLES,
    IQM_MIN_TRIALS,
    cell,
    digits,
    has_iqm,
    iqm_cell,
    summary_rows,
)


def _run_dirs(names: FolderNames, trials: list[Trial], shown: int = 3) -> str:
    """The run dirs of a group's trials, the first `shown` of them by name."""
    dirs = list(dict.fromkeys(names(t.run_dir) for t in trials))
    more = f", … (+{len(dirs) - shown})" if len(dirs) > shown else ""
    return ", ".join(f"`{d}`" for d in dirs[:shown]) + more


def runs_section(draft: Draft, groups: dict[str, list[Trial]]) -> None:
    """## Runs: each group's trials, runs and run dirs, and how groups and bands are made."""
    draft.md += ["## Runs", ""]
    draft.md += md_table(
        [
            {
                "group": label,
                "trials": len(ts),
                "runs": len({t.run_dir for t in ts}),
                "run dirs": _run_dirs(draft.names, ts),
            }
            for label, ts in groups.items()
        ]
    )
    draft.md += [
        "",
        "Trials are grouped by the settings that differ between them (seeds aside); a "
        "curve is the mean of a group's trials, its band the 95 % confidence interval.",
    ]


def _metric_table(rows: list[dict[str, Any]], metric: str) -> list[str]:
    """A measure's table: each group's last and best value (and the IQM of the last values
    where groups are big enough), in the measure's own scale."""
    s, place = keys.scale(metric), digits(metric)
    return md_table(
        [
            {
                "group": r["group"],
                "trials": r["trials"],
                "last (mean ± 95 % CI)": cell(r["last_mean"] * s, r["last_ci95"] * s, place),
                "best (mean ± 95 % CI)": cell(r["best_mean"] * s, r["best_ci95"] * s, place),
                "env steps": f"{r['env_steps_mean']:,.0f}",
            }
            | ({"last, IQM [95 % bootstrap CI]": iqm_cell(r, place, s)} if has_iqm(rows) else {})
            for r in rows
        ]
    )


def metric_section(
    draft: Draft, groups: dict[str, list[Trial]], metric: str, i: int, axes: list[str]
) -> list[dict[str, Any]]:
    """## <measure>: the groups' curves against each x axis, their table, and the IQM of the
    last values when groups have enough trials. Returns the table's rows (for groups.csv)."""
    heading = capital(keys.title(metric))
    draft.md += ["", f"## {heading}", ""]
    for axis in axes:
        curves = metric_curves(groups, metric, axis)
        draft.result["curves"].setdefault(metric, curves)
        png = draft.figure(plot_curves(curves, metric, axis, draft.out, f"curve_{i}_{axis}"))
        draft.md.append(f"![{heading} vs {keys.words(keys.X_AXES[axis])}]({png.name})")
    draft.md.append("")
    rows = summary_rows(groups, metric)
    draft.result["tables"][metric] = rows
    draft.md += _metric_table(rows, metric)
    if keys.unit(metric):
        draft.md += ["", f"Unit: {keys.unit(metric)}."]
    if has_iqm(rows):
        png = draft.figure(plot_aggregate(rows, metric, draft.out, f"aggregate_{i}"))
        draft.md += [
            "",
            f"Aggregate over groups with at least {IQM_MIN_TRIALS} trials: interquartile "
            "mean of the last values, 95 % percentile-bootstrap interval "
            f"({BOOTSTRAP_RESAMPLES} resamples).",
            "",
            f"![{heading}: IQM of the last values]({png.name})",
        ]
    return rows


def service_section(
    draft: Draft, groups: dict[str, list[Trial]], columns: set[str], x_col: str
) -> None:
    """## UE service during training, when the runs measured it: small multiples of mean UE
    utility, data rate, fairness and connected UEs."""
    service = service_columns(columns)
    if not service:
        return
    png = draft.figure(plot_service(groups, service, x_col, draft.out))
    draft.md += [
        "",
        "## UE service during training",
        "",
        "How the UEs were served in the training episodes: mean UE utility "
        f"({keys.UTILITY_UNIT}; −1: unconnected), data rate, fairness and the connected "
        "share of UEs, each group's mean.",
        "",
        f"![UE service in training episodes]({png.name})",
    ]


def info_section(
    draft: Draft, groups: dict[str, list[Trial]], columns: set[str], x_col: str
) -> None:
    """## The env's own measures during training (`scenario.metrics` of a custom env)."""
    measured = info_columns(columns)
    if not measured:
        return
    png = draft.figure(
        plot_service(groups, measured, x_col, draft.out, "info", "The env's own measures")
    )
    draft.md += [
        "",
        "## The env's own measures during training",
        "",
        "The values the env reports in its infos (`scenario.metrics`), per training episode "
        "reduced as the metric says and combined over its agents, each group's mean.",
        "",
        f"![The env's own measures in training episodes]({png.name})",
    ]


def _last_evaluation(
    groups: dict[str, list[Trial]], columns: set[str], rows_all: list[dict[str, Any]]
) -> list[str]:
    """Evaluation during training, per group: the last evaluation's service measures, its
    return beside them and the paired gap of its score to each baseline (mean ± 95 % CI over
    the group's trials). Its measures' rows join `rows_all` (groups.csv) unless already there."""
    shown = eval_training_columns(columns)
    gaps = gap_baselines(columns)
    score = eval_score(groups)
    score_words = keys.words(score) if score else "score"
    table = []
    for label, trials in groups.items():
        row: dict[str, str] = {"group": label, "trials": str(len(trials))}
        for key in shown + [keys.eval_gap(b, "mean") for b in gaps]:
            (r,) = summary_rows({label: trials}, key)
            if key in shown and key not in {x["metric"] for x in rows_all}:
                rows_all.append(r)
            header = (
                column_header(key)
                if key in shown
                else f"{score_words} − {key.split('/')[2]}, paired"
            )
            place = digits(score) if key not in shown and score else digits(key)
            row[header] = cell(r["last_mean"], r["last_ci95"], place, sign=key not in shown)
        table.append(row)
    return md_table(table)


def eval_training_section(
    draft: Draft,
    groups: dict[str, list[Trial]],
    columns: set[str],
    x_col: str,
    rows_all: list[dict[str, Any]],
) -> None:
    """## Evaluation during training, when the runs evaluated: the last evaluation per group
    with its paired gaps to the baselines, and the evaluations' curves."""
    evaluated = eval_training_columns(columns)
    if not evaluated:
        return
    png = draft.figure(plot_service(
        groups, evaluated, x_col, draft.out, "evaluation_training",
        "Evaluation during training: deterministic episodes on fixed seeds",
    ))  # fmt: skip
    draft.md += [
        "",
        "## Evaluation during training",
        "",
        "The last evaluation of each trial, service first, mean ± 95 % CI over the "
        "group's trials; paired gaps are in the run's evaluation score "
        "(`run.eval.metric`), on the same seeds as each baseline.",
        "",
    ]
    draft.md += _last_evaluation(groups, columns, rows_all)
    draft.md += ["", f"![Evaluation during training]({png.name})"]


def front_section(draft: Draft, groups: dict[str, list[Trial]], columns: set[str]) -> None:
    """## Energy and service, when the runs evaluated on a layout with `power:`: each group's
    trained policy (a sweep's λ each) and the baselines at their energy and service, as a
    figure (the front) and energy_front.csv."""
    from mobrl.core.files import atomic_write_csv
    from mobrl.reporting.energy_figures import SERVICE, front_rows, plot_front

    if f"{keys.EVALUATION}/{keys.NET_ENERGY}" not in columns:
        return
    import pandas as pd

    rows = front_rows(groups, columns)
    png = draft.figure(plot_front(rows, draft.out, "energy_front"))
    atomic_write_csv(draft.out / "energy_front.csv", pd.DataFrame(rows))
    table = []
    for r in rows:
        line = {"group": r["group"], "policy": r["policy"]}
        for measure in (keys.NET_ENERGY, *[m for m in SERVICE if m in r]):
            line[column_header(measure)] = cell(r[measure], r[f"{measure} ci95"], digits(measure))
        table.append(line)
    draft.md += [
        "",
        "## Energy and service",
        "",
        "The last evaluation during training of each group's policy, and of each baseline on "
        "the same seeds: energy per episode and service, never summed, mean ± 95 % CI over the "
        "group's trials. Over a sweep of `env.energy_weight` the trained points trace the "
        "front of the trade-off (energy_front.csv).",
        "",
        *md_table(table),
        "",
        f"![Energy and service]({png.name})",
    ]
