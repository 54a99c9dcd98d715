"""The parts of report.md about `mobrl evaluate` outputs: an evaluation's policies side by side
(service first, then paired by seed) and a generalisation matrix (each trained policy on each
layout). Each draws its figure and adds its lines to the draft."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.evaluation.paired import closed_text, lower_better
from mobrl.reporting.contents import EVAL_COLUMNS, INFO_PREFIX
from mobrl.reporting.energy_figures import has_energy, plot_energy_service
from mobrl.reporting.figures import gap_stats, paired_gaps, plot_evaluation, plot_matrix
from mobrl.reporting.markup import Draft, capital, column_header, md_table
from mobrl.reporting.stats import cell, digits, matrix_measure, matrix_table


def _evaluation_facts(summary: dict[str, Any], episodes: int) -> str:
    """The sentence above an evaluation's table: episodes, layout, seeds and exploration."""
    env = summary.get("env_config") or {}
    scenario = env.get("scenario") or env.get("id")
    seeds = summary.get("seed_range")
    facts = [f"layout `{scenario}`" if scenario else ""]
    facts += [f"seeds {seeds[0]}–{seeds[1]}" if seeds else ""]
    facts += ["exploring actions" if summary.get("explore") else ""]
    return (
        f"{episodes} episodes per policy"
        + "".join(f", {f}" for f in facts if f)
        + "; mean ± 95 % CI (Student t)."
    )


def _policy_table(policies: dict[str, Any], shown: list[str]) -> list[str]:
    """Each policy's measures, mean ± 95 % CI, and its number of episodes."""
    return md_table(
        [
            {"policy": p}
            | {
                column_header(c): cell(policies[p][c]["mean"], policies[p][c]["ci95"], digits(c))
                for c in shown
                if c in policies[p]
            }  # fmt: skip
            | {"episodes": int(policies[p][shown[0]]["n"])}
            for p in policies
        ]
    )


def _paired_table(summary: dict[str, Any], shown: list[str]) -> list[str]:
    """The policies' gaps paired by seed (trained − each baseline, or each baseline − the
    reference policy); nothing when the evaluation paired none."""
    ref, gaps = paired_gaps(summary)
    if not gaps:
        return []
    first = "trained − each baseline" if ref == "trained" else f"each baseline − {ref}"
    low = [column_header(c) for c in lower_better(summary) if c in shown]  # costs: < 0 better
    lower = f"; < 0 for {', '.join(low)}, where lower is better" if low else ""
    md = ["", f"{capital(first)}, paired by seed (> 0: the first is better{lower}):", ""]
    table = []
    for other, gap in gaps.items():
        row = {"vs" if ref == "trained" else "policy": other}
        for c in shown:
            st = gap_stats(gap, c)
            row[column_header(c)] = cell(st["mean"], st["ci95"], digits(c), True) if st else "-"
        table.append(row)
    return md + md_table(table)


def _evaluation_lines(name: str, summary: dict[str, Any], png: Path) -> list[str]:
    """An evaluation's part of report.md: service first (mean UE utility, connected UEs, p5
    and Jain) with the return beside them, per policy, then paired by seed."""
    policies = summary["policies"]
    measured = next(iter(policies.values()))
    shown = [c for c in EVAL_COLUMNS if c in measured] or list(measured)[:1]
    shown += [c for c in measured if c.startswith(INFO_PREFIX)]  # the env's own (custom envs)
    if keys.NET_DEMAND_SERVED in measured:  # finite demand: service includes what was served
        shown.insert(len(shown) - ("return" in shown), keys.NET_DEMAND_SERVED)
    md = [_evaluation_facts(summary, int(measured[shown[0]]["n"])), ""]
    md += _policy_table(policies, shown)
    md += _paired_table(summary, shown)
    energy = [c for c in keys.ENERGY_KEYS if c in measured]
    if energy:  # cells that sleep: energy in tables of its own, never summed with service
        md += ["", "Energy (the layout's power model; docs/energy.md):", ""]
        md += _policy_table(policies, energy)
        md += _paired_table(summary, energy)
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


def evaluation_section(draft: Draft, folder: Path, summary: dict[str, Any], j: int) -> None:
    """## Evaluation: <folder>, the `j`-th evaluation found: its figure and tables (and on a
    layout with `power:` its energy–service figure)."""
    name = draft.names(folder)
    png = draft.figure(plot_evaluation(name, summary, draft.out, f"evaluation_{j}"))
    draft.md += ["", f"## Evaluation: {name}", ""] + _evaluation_lines(name, summary, png)
    if has_energy(summary):
        front = draft.figure(plot_energy_service(name, summary, draft.out, f"energy_{j}"))
        draft.md += [
            "",
            "Each policy's energy per episode against its service (mean ± 95 % CI over the "
            "episodes, whose hours differ; the paired tables above give the differences "
            "episode by episode):",
            "",
            f"![Energy and service of each policy on {name}]({front.name})",
        ]


def matrix_section(draft: Draft, folder: Path, matrix: dict[str, Any], k: int) -> None:
    """## Generalisation matrix: <folder>, the `k`-th matrix found: a heat map and table of the
    paired gap to the first baseline, and the same in the return when the map shows another
    measure."""
    name = draft.names(folder)
    png, table = plot_matrix(matrix, draft.out, f"matrix_{k}")
    draft.figure(png)
    draft.result.setdefault("matrices", []).append(table)
    baseline = (matrix.get("baselines") or ["greedy"])[0]
    measure = matrix_measure(matrix, baseline)
    draft.md += [
        "",
        f"## Generalisation matrix: {name}",
        "",
        f"Each trained policy (rows) on each layout (columns): {keys.words(measure)}, "
        f"trained − {baseline}, paired by seed, mean ± 95 % CI.",
        "",
        f"![Generalisation matrix of {name}]({png.name})",
        "",
    ]
    draft.md += md_table(table)
    if measure == "return":
        return
    rows, cols, (gap, half) = matrix_table(matrix, baseline, "return")
    draft.md += ["", f"The same in {keys.words('return')}, trained − {baseline}:", ""]
    draft.md += md_table(
        [
            {"trained on": r, **{c: cell(gap[i, j], half[i, j]) for j, c in enumerate(cols)}}
            for i, r in enumerate(rows)
        ]
    )
