"""Evaluate policies on paired episode seeds: statistics (mean, 95 % CI), tables, JSON and CSV."""

from __future__ import annotations

import math
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from mobrl import metrics as keys
from mobrl.errors import UserError, unknown_choice
from mobrl.files import atomic_write_csv, atomic_write_json, check_writable, claimed
from mobrl.paired import TRAINED, summarize
from mobrl.targets import Target, check_pick, target_for

SUMMARY_FILE = "summary.json"
EPISODES_FILE = "episodes.csv"

# --- running episodes (in worker processes when there is more than one CPU) ---------------

_WORKER: dict[str, Any] = {}


def _make_policy(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> Any:
    from mobrl.policies import BASELINES, load_policy

    if name == TRAINED:
        return load_policy(checkpoint, env_config, explore)
    return BASELINES[name]()


def _worker_key(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> tuple:
    return (name, checkpoint, explore, env_config.get("scenario"), env_config.get("id"))


def set_main_policy(checkpoint: str, env_config: dict, explore: bool, policy: Any) -> None:
    """Episodes of the trained policy that run in this process use `policy` (loaded already)."""
    _WORKER["key"] = _worker_key(TRAINED, checkpoint, env_config, explore)
    _WORKER["policy"] = policy


def _run(name: str, seed: int, checkpoint: str | None, env_config: dict, explore: bool) -> dict:
    from mobrl.rollout import run_episode

    key = _worker_key(name, checkpoint, env_config, explore)
    if _WORKER.get("key") != key:  # one policy load per worker, policy and scenario
        _WORKER["key"], _WORKER["policy"] = key, _make_policy(name, checkpoint, env_config, explore)
    return run_episode(env_config, _WORKER["policy"], seed)


def run_all(
    target: Target,
    policies: list[str],
    seeds: list[int],
    explore: bool,
    workers: int,
    progress: Any = None,
    prepare: Any = None,
) -> list[dict[str, Any]]:
    """Every policy on every seed; rows of (policy, episode, seed, return, metrics...).

    With `workers` > 1, a checkpoint's policy plays in this process, while worker processes
    play the others (baselines and zoo policies load in a fraction of a second, without Ray
    or torch), and this process then takes over what they have not started; each worker
    starts once. `prepare()` (e.g. restoring the checkpoint here, which imports Ray and
    torch) runs in this process once the workers have their episodes, so both overlap."""
    tasks = [(name, i, seed) for name in policies for i, seed in enumerate(seeds)]
    ckpt = str(target.checkpoint) if target.checkpoint else None
    rows: list[dict[str, Any]] = []

    def add(name: str, i: int, seed: int, result: dict) -> None:
        rows.append({"policy": name, "episode": i, "seed": seed, **result})
        if progress is not None:
            progress()

    from mobrl import zoo

    heavy = ckpt is not None and not zoo.is_ref(ckpt)  # restoring it imports Ray and torch
    here = [t for t in tasks if heavy and t[0] == TRAINED] if workers > 1 else tasks
    kept = set(here)
    away = [t for t in tasks if t not in kept]
    if not away:
        if prepare is not None:
            prepare()
        for name, i, seed in here:
            add(name, i, seed, _run(name, seed, ckpt, target.env_config, explore))
    else:
        import multiprocessing
        import threading

        lock = threading.Lock()  # pool callbacks add rows from another thread

        def play_here(name: str, i: int, seed: int) -> None:
            result = _run(name, seed, ckpt, target.env_config, explore)
            with lock:
                add(name, i, seed, result)

        def collect(future: Any, task: tuple[str, int, int]) -> None:
            # errors surface from future.result() below; taken-over futures are cancelled
            if not future.cancelled() and future.exception() is None:
                with lock:
                    add(*task, future.result())

        context = multiprocessing.get_context("spawn")  # torch and forked threads do not mix
        pool_workers = max(1, workers - 1) if here else workers
        with ProcessPoolExecutor(max_workers=pool_workers, mp_context=context) as pool:
            futures = {
                pool.submit(_run, name, seed, ckpt, target.env_config, explore): (name, i, seed)
                for name, i, seed in away
            }
            for future, task in futures.items():
                future.add_done_callback(lambda f, task=task: collect(f, task))
            if prepare is not None:
                try:
                    prepare()
                except BaseException:
                    for future in futures:  # the workers stop after their current episode
                        future.cancel()
                    raise
            for task in here:
                play_here(*task)
            if here:  # then take over the episodes the workers have not started yet
                for future, task in futures.items():
                    if future.cancel():
                        play_here(*task)
            for future in as_completed(futures):
                if not future.cancelled():
                    future.result()
    rows.sort(key=lambda r: (policies.index(r["policy"]), r["episode"]))
    return rows


def default_output_dir(scenario: str) -> Path:
    now = datetime.now()
    return Path("evaluations") / now.strftime("%Y-%m-%d") / f"{now:%H-%M-%S}_{scenario}"


def write_results(
    output: Path, rows: list[dict[str, Any]], summary: dict[str, Any], meta: dict[str, Any]
) -> None:
    """Write summary.json and episodes.csv atomically (temporary file, then rename)."""
    import pandas as pd

    output.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rows)
    atomic_write_csv(output / EPISODES_FILE, frame)
    atomic_write_json(output / SUMMARY_FILE, {**meta, **summary})


def check_baselines(
    names: list[str], env_config: dict[str, Any], flag: str = "--baselines"
) -> None:
    """Every name is a baseline that applies to the scenario, or a one-line error for `flag`."""
    from mobrl.policies import BASELINES, baselines_for

    applicable = baselines_for(env_config)
    for name in names:
        if name not in BASELINES:
            raise unknown_choice("baseline", name, BASELINES, f"Fix {flag}.")
        if name not in applicable:
            raise UserError(
                f"baseline '{name}' does not apply to {env_config['id']}. "
                f"Use {flag} {','.join(applicable)}."
            )


def _cell(stats: dict[str, float], sign: bool = False) -> str:
    mean, half = stats["mean"], stats["ci95"]
    if math.isnan(mean):
        return "-"
    text = f"{mean:+.3f}" if sign else f"{mean:.3f}"
    return text if math.isnan(half) else f"{text} ± {half:.3f}"


def paired_table(summary: dict[str, Any], columns: list[str]) -> Any:
    """Trained − each baseline (or each baseline − greedy), paired by seed (rich table)."""
    from rich.table import Table

    ref = summary["reference"]
    gaps = summary[f"paired_vs_{ref}"]
    closed = summary.get("gap_closed", {}) if ref == TRAINED else {}
    if ref == TRAINED:
        title, first = "trained − each baseline", "vs"
    else:
        title, first = f"each baseline − {ref}", "policy"
    table = Table(title=f"{title}, paired by seed: mean ± 95 % CI (> 0: the first better)")
    table.add_column(first)
    for col in columns:
        table.add_column(keys.label(col), justify="right")
    if closed:
        table.add_column("greedy→oracle gap closed", justify="right")
    for name, gap in gaps.items():
        cells = [_cell(gap["diff"][c], sign=True) for c in columns]
        if closed:
            cells.append("")
        table.add_row(name, *cells)
    if TRAINED in closed:
        table.add_row("(greedy→oracle gap)", *[""] * len(columns), f"{closed[TRAINED]:.0%}")
    return table


@dataclass
class EvalOptions:
    """The options `mobrl evaluate` and `mobrl baselines` share (see their --help)."""

    episodes: int = 20
    seed: int = 0
    baselines: str | None = None  # comma-separated; None: the scenario's defaults
    pick: str = "best"
    output: Path | None = None
    explore: bool = False
    workers: int | None = None  # None: one per CPU (up to 4) when there are 8+ episodes
    trust: bool = False  # --trust-checkpoint: load pickled objects of any kind

    def check(self) -> None:
        if self.episodes < 1:
            raise UserError(f"--episodes must be at least 1, got {self.episodes}.")
        check_pick(self.pick)
        if self.workers is not None and self.workers < 1:
            raise UserError(f"--workers must be at least 1, got {self.workers}.")

    @property
    def seeds(self) -> list[int]:
        return [self.seed + i for i in range(self.episodes)]

    def baseline_names(self, default: list[str]) -> list[str]:
        if self.baselines is None:
            return list(default)
        return [b for b in self.baselines.split(",") if b]


def evaluate_command(checkpoint: Path | None, overrides: list[str], opts: EvalOptions) -> Path:
    """`mobrl evaluate` / `mobrl baselines`: run, print the table, write the files."""
    from rich.progress import Progress
    from rich.table import Table

    from mobrl.console import make_console

    console = make_console()
    opts.check()
    episodes, explore, workers = opts.episodes, opts.explore, opts.workers
    target = target_for(checkpoint, overrides, opts.pick)
    from mobrl.policies import baselines_for

    names = opts.baseline_names(baselines_for(target.env_config))
    check_baselines(names, target.env_config)
    policies = ([TRAINED] if target.checkpoint else []) + names
    if not policies:
        raise UserError("nothing to evaluate: give --checkpoint or --baselines.")
    scenario = target.env_config.get("scenario") or target.env_config["id"]
    output = Path(opts.output) if opts.output else default_output_dir(scenario)
    check_output(output)

    def restore() -> None:
        """Restore the checkpoint (and check its spaces) while workers play the baselines;
        episodes run in this process reuse it."""
        from mobrl.policies import policy_for_env

        trained = policy_for_env(target.checkpoint, target.env_config, explore, opts.trust)
        set_main_policy(str(target.checkpoint), target.env_config, explore, trained)

    if target.checkpoint is not None:
        console.print(target.note)

    seeds = opts.seeds
    total = len(seeds) * len(policies)
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if total >= 8 else 1
    with claimed(output):  # a second command writing to the same --output is refused
        check_output(output)  # again under the claim: another one may have finished since
        with Progress(console=console, transient=True) as bar:
            task = bar.add_task(f"{total} episodes ({', '.join(policies)})", total=total)
            rows = run_all(
                target, policies, seeds, explore, workers, progress=lambda: bar.advance(task),
                prepare=restore if target.checkpoint is not None else None,
            )  # fmt: skip
        summary = summarize(rows, policies)
        meta = {
            "checkpoint": str(target.checkpoint) if target.checkpoint else None,
            "env_config": target.env_config,
            "episodes": episodes,
            "seeds": seeds,
            "explore": explore,
        }
        write_results(output, rows, summary, meta)

    table = Table(title=f"{scenario}: {episodes} episodes per policy, mean ± 95 % CI")
    columns = list(next(iter(summary["policies"].values())))
    table.add_column("policy")
    for col in columns:
        table.add_column(keys.label(col), justify="right")
    for name in policies:
        table.add_row(name, *(_cell(summary["policies"][name][c]) for c in columns))
    console.print(table)
    if summary["reference"] is not None:
        console.print(paired_table(summary, columns))
    output = output.absolute()  # as `mobrl train` prints its paths: usable from anywhere
    for note in summary["notes"]:
        console.print(f"[bold]note:[/bold] {note}")
    console.print(f"results: {output / SUMMARY_FILE}, {output / EPISODES_FILE}")
    return output


def check_output(output: Path) -> None:
    """`--output` is writable and holds no results yet (mobrl never overwrites results)."""
    check_writable(output, "--output")
    existing = [output / f for f in (SUMMARY_FILE, EPISODES_FILE) if (output / f).exists()]
    if existing:
        raise UserError(
            f"--output '{output}' already holds results ({existing[0].name}). "
            "Choose a new --output dir; mobrl does not overwrite results."
        )
