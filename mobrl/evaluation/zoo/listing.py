"""`mobrl zoo list`: the zoo's entries as a results table (their held-out evaluation against
the heuristics, training cost and command), as Markdown or as JSON records."""

from __future__ import annotations

import json
from typing import Any

from mobrl.core import metrics as keys
from mobrl.evaluation import zoo
from mobrl.evaluation.paired import REFERENCES, closed_text


def _gap(meta: dict[str, Any], baseline: str, key: str = "return", digits: int = 3) -> str:
    """trained − `baseline` in `key`, paired by seed: mean ± 95 % CI (`digits` decimals)."""
    diff = ((meta.get("evaluation") or {}).get("paired_vs_trained") or {}).get(baseline)
    if not diff:
        return "-"
    from mobrl.evaluation.paired import ci_text

    if key == "return":
        return ci_text(diff["return_diff_mean"], diff["ci95"], digits=1, sign=True)
    stats = (diff.get("diff") or {}).get(key)
    return ci_text(stats["mean"], stats["ci95"], digits=digits, sign=True) if stats else "-"


def _trained_on(meta: dict[str, Any], reward: str) -> str:
    """Where the policy learned and, when it serves another layout, which one."""
    trained = meta.get("trained_on") or meta["scenario"]
    where = trained if trained == meta["scenario"] else f"{trained}, acts on {meta['scenario']}"
    return f"{where} (obs={meta['obs']}{_turns(meta)}, reward={reward})"


def _turns(meta: dict[str, Any]) -> str:
    """The suffix naming how the agents decide (decide=in_turns), empty if at once."""
    decide = (meta.get("env_config") or {}).get("decide", "at_once")
    return f", decide={decide}" if decide != "at_once" else ""


def _closed(meta: dict[str, Any]) -> str:
    """The share of the greedy -> reference gap closed ("below greedy" below it)."""
    return closed_text((meta.get("evaluation") or {}).get("gap_closed"))


def _reference(meta: dict[str, Any]) -> str:
    """The reference the gap is measured to (entries from before it was recorded: oracle)."""
    ev = meta.get("evaluation") or {}
    return ev.get("gap_reference") or ("oracle" if ev.get("gap_closed") is not None else "-")


def best_rule(meta: dict[str, Any]) -> str | None:
    """The baseline other than greedy and the references that served best (highest mean UE
    utility) in the entry's evaluation: the strongest rule the policy is paired with."""
    by_policy = (meta.get("evaluation") or {}).get("ue_metrics") or {}
    rules = {
        name: stats[keys.UTILITY_MEAN]["mean"]
        for name, stats in by_policy.items()
        if name not in ("trained", "greedy", *REFERENCES) and keys.UTILITY_MEAN in stats
    }
    return max(rules, key=rules.__getitem__) if rules else None


def _steps(steps: float) -> str:
    """Env steps as a person reads them: 400, 4k, 11k."""
    return f"{steps / 1e3:.0f}k" if steps >= 1000 else f"{steps:.0f}"


def _reached(train: dict[str, Any], milestone: str) -> str:
    """When training first reached `milestone` (wall time, imitation included)."""
    if milestone not in train:
        return "-"  # not measured: no evaluation during training with these baselines
    hit = train[milestone]
    return "not reached" if hit is None else f"{hit['s']:.0f} s"


def _service(meta: dict[str, Any], key: str) -> str:
    """`trained / greedy` of one service measure (mean over the held-out episodes)."""
    by_policy = (meta.get("evaluation") or {}).get("ue_metrics") or {}
    values = [by_policy.get(p, {}).get(key) for p in ("trained", "greedy")]
    if not all(values):
        return "-"
    return " / ".join(f"{v['mean']:.3f}" for v in values)


def is_cells(meta: dict[str, Any]) -> bool:
    """Whether an entry is a cell agent's policy (env=cells or env=hierarchical)."""
    return meta.get("env_mode") in ("cells", "hierarchical")


def _saving(meta: dict[str, Any], policy: str) -> float | None:
    """The share of `all_on`'s energy per episode that `policy` saved in the evaluation."""
    energy = (meta.get("evaluation") or {}).get("energy") or {}
    mine, base = (energy.get(p, {}).get(keys.NET_ENERGY) for p in (policy, "all_on"))
    return 1.0 - mine["mean"] / base["mean"] if mine and base and base["mean"] > 0 else None


def cell_rows() -> list[dict[str, str]]:
    """One row per cell agent entry: its energy saving beside the reference's, and its
    objective and service paired against `threshold`, O-RAN's rule."""
    out = []
    for name in zoo.names():
        meta = zoo.entry(name)
        if not is_cells(meta):
            continue
        ev = meta.get("evaluation") or {}
        mine, best = _saving(meta, "trained"), _saving(meta, "energy_oracle")
        share = f" ({mine / best:.0%} of {best:.1%})" if mine and best else ""
        train = meta.get("training") or {}
        out.append(
            {
                "policy": f"zoo:{name}",
                # beside the share of energy_oracle's saving it makes
                "energy saved": "-" if mine is None else f"{mine:.1%}{share}",
                # 4 decimals: a city's objective moves by a few ten-thousandths
                "objective − threshold": _gap(meta, "threshold", keys.NET_OBJECTIVE, 4),
                "p5 utility − threshold": _gap(meta, "threshold", keys.UTILITY_P5, 4),
                "connected − threshold": _gap(meta, "threshold", keys.NET_CONNECTED, 4),
                "training": f"{train.get('wall_time_s', '-')} s, "
                f"{_steps(int(train.get('env_steps') or 0))} steps",
                "trained on": f"{meta.get('trained_on') or meta['scenario']} "
                f"(env={meta.get('env_mode')}{_turns(meta)})",
                "episodes (seeds)": f"{ev.get('episodes', '-')} ({ev.get('seeds', '-')})",
                "command": meta.get("command") or "",
            }
        )
    return out


def rows() -> list[dict[str, str]]:
    """One row per zoo entry of UE agents: what a results table shows."""
    out = []
    for name in zoo.names():
        meta = zoo.entry(name)
        if is_cells(meta):
            continue
        train = meta.get("training") or {}
        ev = meta.get("evaluation") or {}
        size = (zoo.entries_dir() / f"{name}.npz").stat().st_size
        reward = meta.get("reward") or (meta.get("env_config") or {}).get("reward", "mobile")
        steps = int(train.get("env_steps") or 0)
        rule = best_rule(meta)
        out.append(
            {
                "policy": f"zoo:{name}",
                # service first: trained / greedy, then paired against greedy, the strongest
                # rule and the reference; mobile-env's return beside them
                "UE utility": _service(meta, keys.UTILITY_MEAN),
                "connected": _service(meta, keys.NET_CONNECTED),
                "p5 utility": _service(meta, keys.UTILITY_P5),
                "UE utility − greedy": _gap(meta, "greedy", keys.UTILITY_MEAN),
                "− best rule": (f"{_gap(meta, rule, keys.UTILITY_MEAN)} ({rule})" if rule else "-"),
                "gap closed": _closed(meta),
                "reference": _reference(meta),
                "return − greedy": _gap(meta, "greedy"),
                "time to beat greedy": _reached(train, "beat_greedy"),
                "time to 90 %": _reached(train, "closed_90"),
                "training": f"{train.get('wall_time_s', '-')} s, {_steps(steps)} steps",
                "trained on": _trained_on(meta, reward),
                "episodes (seeds)": f"{ev.get('episodes', '-')} ({ev.get('seeds', '-')})",
                "size": f"{size / 1024:.0f} KiB",
                "command": meta.get("command") or "",
            }
        )
    return out


#: the columns `mobrl zoo list` shows by default (80 columns); --wide shows every one
NARROW = ("policy", "connected", "p5 utility", "UE utility − greedy", "gap closed")


def records() -> list[dict[str, Any]]:
    """One record per zoo entry with its numbers as numbers (`mobrl zoo list --json`)."""
    out = []
    for name in zoo.names():
        meta = zoo.entry(name)
        ev = meta.get("evaluation") or {}
        gap = ((ev.get("paired_vs_trained") or {}).get("greedy")) or {}
        out.append(
            {
                "policy": f"zoo:{name}",
                "scenario": meta["scenario"],
                "trained_on": meta.get("trained_on") or meta["scenario"],
                "obs": meta.get("obs"),
                "reward": meta.get("reward"),
                "vs_greedy": gap.get("diff") or {},
                "gap_closed": ev.get("gap_closed"),
                "gap_reference": None if _reference(meta) == "-" else _reference(meta),
                "service": ev.get("ue_metrics") or {},
                "energy": ev.get("energy") or {},
                "episodes": ev.get("episodes"),
                "seeds": ev.get("seeds"),
                "training": meta.get("training") or {},
                "size_bytes": (zoo.entries_dir() / f"{name}.npz").stat().st_size,
                "command": meta.get("command") or "",
            }
        )
    return out


def list_command(
    markdown: bool = False, wide: bool = False, as_json: bool = False, width: int | None = None
) -> None:
    """`mobrl zoo list`: the results table (the columns that fit 80 columns, every column with
    `wide`), then per policy where it learned, its evaluation, cost and command."""
    from rich.console import Console

    from mobrl.core.console import make_console

    if as_json:
        print(json.dumps(records(), indent=2))
        return
    table_rows, cells = rows(), cell_rows()
    if markdown:
        if not table_rows and not cells:
            print("(no zoo policies)")
            return
        for part in (table_rows, cells):
            if not part:
                continue
            cols = [c for c in part[0] if c != "command"]
            print("| " + " | ".join(cols) + " |")
            print("|" + "|".join("---" for _ in cols) + "|")
            for r in part:
                print("| " + " | ".join(r[c] for c in cols) + " |")
            print()
        for r in [*table_rows, *cells]:
            print(f"- `{r['policy']}`: `{r['command']}`")
        return
    console = make_console() if width is None else Console(width=width, highlight=False)
    every = [c for c in (table_rows[0] if table_rows else {}) if c != "command"]
    title = "mobrl zoo on held-out seeds: paired gaps (mean ± 95 % CI); service as trained / greedy"
    _print_table(console, title, table_rows, every if wide else [c for c in every if c in NARROW])
    for r in table_rows:
        if not wide:
            console.print(
                f"{r['policy']}: trained on {r['trained on']}; {r['episodes (seeds)']} "
                f"episodes (seeds); gap closed to {r['reference']}; UE utility − best rule "
                f"{r['− best rule']}; return − greedy {r['return − greedy']}; beat greedy "
                f"after {r['time to beat greedy']}, 90 % after {r['time to 90 %']}; "
                f"{r['training']}; {r['size']}",
                markup=False,
            )
        console.print(f"  {r['command']}", markup=False)  # [greedy,full] is text
    if cells:
        _cell_table(console, cells, wide)


def _cell_table(console: Any, cells: list[dict[str, str]], wide: bool) -> None:
    """The cell agents' entries: energy saved over all_on, paired gaps to threshold."""
    title = (
        "cell agents on held-out seeds: energy saved over all_on (share of energy_oracle's "
        "saving); objective and service − threshold, paired (mean ± 95 % CI)"
    )
    narrow = ("policy", "energy saved", "objective − threshold", "p5 utility − threshold")
    cols = [c for c in cells[0] if c != "command" and (wide or c in narrow)]
    _print_table(console, title, cells, cols)
    for r in cells:
        console.print(f"{r['policy']}: {r['trained on']}; {r['training']}", markup=False)
        console.print(f"  {r['command']}", markup=False)


def _print_table(console: Any, title: str, rows: list[dict[str, str]], cols: list[str]) -> None:
    """`rows`' `cols` as a rich table: names left and whole, numbers right."""
    from rich.table import Table

    table = Table(title=title)
    for c in cols:
        left = c in ("policy", "trained on")
        table.add_column(c, justify="left" if left else "right", no_wrap=c == "policy")
    for r in rows:
        table.add_row(*(r[c] for c in cols))
    console.print(table)
