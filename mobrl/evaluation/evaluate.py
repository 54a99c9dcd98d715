"""Evaluate policies on paired episode seeds: statistics (mean, 95 % CI), tables, JSON and CSV."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import as_completed
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import Interrupted, UserError
from mobrl.evaluation.outputs import EvalDir
from mobrl.evaluation.paired import TRAINED, Tally, ci_text, closed_text
from mobrl.evaluation.policies import check_baselines
from mobrl.evaluation.targets import Target, check_pick, target_for

# --- running episodes (in worker processes when there is more than one CPU) ---------------

#: policies loaded in this process, by `_policy_key` (one load per process, policy and env)
_POLICIES: dict[tuple, Any] = {}


@dataclass(frozen=True, eq=False)
class Job:
    """One policy on one env: a baseline, or a checkpoint's (or zoo entry's) trained policy."""

    name: str
    env_config: dict[str, Any]
    checkpoint: str | None = None

    @property
    def heavy(self) -> bool:
        """Whether loading the policy restores an RLlib checkpoint (imports Ray and torch)."""
        from mobrl.evaluation import zoo

        return self.checkpoint is not None and not zoo.is_ref(self.checkpoint)


def _make_policy(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> Any:
    from mobrl.evaluation.policies import BASELINES, load_policy

    if name == TRAINED:
        return load_policy(checkpoint, env_config, explore)
    return BASELINES[name]()


def _policy_key(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> tuple:
    return (name, checkpoint, explore, json.dumps(env_config, sort_keys=True, default=str))


def set_main_policy(checkpoint: str, env_config: dict, explore: bool, policy: Any) -> None:
    """Episodes of the trained policy on `env_config` that run in this process use `policy`
    (loaded, or bound to that env, already)."""
    _POLICIES[_policy_key(TRAINED, checkpoint, env_config, explore)] = policy


def _run(name: str, seed: int, checkpoint: str | None, env_config: dict, explore: bool) -> dict:
    from mobrl.evaluation.rollout import run_episode

    key = _policy_key(name, checkpoint, env_config, explore)
    if key not in _POLICIES:
        _POLICIES[key] = _make_policy(name, checkpoint, env_config, explore)
    return run_episode(env_config, _POLICIES[key], seed)


def _row(name: str, i: int, seed: int, result: dict) -> dict[str, Any]:
    return {"policy": name, "episode": i, "seed": seed, **result}


#: seeds per block: every job plays a block's seeds before the next block starts, so
#: episodes are tallied, written and dropped a block at a time (memory independent of
#: --episodes) while the workers stay busy within a block
BLOCK = 256


def play_blocks(
    jobs: list[Job],
    seeds: Sequence[int],
    explore: bool,
    workers: int,
    progress: Any = None,
    prepare: Any = None,
    block: int = BLOCK,
) -> Iterator[list[list[dict[str, Any]]]]:
    """Every job on every seed, a block of seeds at a time: yields, per block, each job's
    rows of (policy, episode, seed, return, metrics...) in episode order.

    With `workers` > 1, jobs that restore an RLlib checkpoint play in this process, while one
    pool of worker processes plays the others, whatever their env (baselines and zoo
    policies load in a fraction of a second, without Ray or torch), and this process then
    takes over what the workers have not started; each worker starts once. `prepare()` (e.g.
    restoring the checkpoint here) runs in this process once the workers have their first
    episodes, so both overlap."""
    import threading

    local = [job.heavy for job in jobs] if workers > 1 else [True] * len(jobs)
    chunks = (
        list(enumerate(seeds[start : start + block], start))
        for start in range(0, len(seeds), block)
    )
    lock = threading.Lock()  # progress also advances from the pool's callback thread

    def advance() -> None:
        if progress is not None:
            with lock:
                progress()

    def play(j: int, i: int, seed: int) -> dict[str, Any]:
        job = jobs[j]
        result = _run(job.name, seed, job.checkpoint, job.env_config, explore)
        advance()
        return _row(job.name, i, seed, result)

    def ordered(found: dict[tuple[int, int], dict]) -> list[list[dict[str, Any]]]:
        out: list[list[dict[str, Any]]] = [[] for _ in jobs]
        for (j, _), row in sorted(found.items()):
            out[j].append(row)
        return out

    if all(local):  # everything here: no worker processes
        if prepare is not None:
            prepare()
        for chunk in chunks:
            yield ordered({(j, i): play(j, i, s) for j in range(len(jobs)) for i, s in chunk})
        return

    from mobrl.core.workers import process_pool

    def tick(future: Any) -> None:
        if not future.cancelled() and future.exception() is None:
            advance()

    pool_workers = max(1, workers - 1) if any(local) else workers
    with process_pool(pool_workers) as pool:
        for chunk in chunks:
            futures = {}
            for j, job in enumerate(jobs):
                if local[j]:
                    continue
                for i, seed in chunk:
                    args = (job.name, seed, job.checkpoint, job.env_config, explore)
                    futures[pool.submit(_run, *args)] = (j, i, seed)
            for future in futures:
                future.add_done_callback(tick)
            if prepare is not None:
                try:
                    prepare()
                except BaseException:
                    for future in futures:  # the workers stop after their current episode
                        future.cancel()
                    raise
                prepare = None
            found = {(j, i): play(j, i, s) for j in range(len(jobs)) if local[j] for i, s in chunk}
            if any(local):  # then take over the episodes the workers have not started yet
                for future, (j, i, seed) in futures.items():
                    if future.cancel():
                        found[j, i] = play(j, i, seed)
            for future in as_completed(futures):
                if not future.cancelled():
                    j, i, seed = futures[future]
                    found[j, i] = _row(jobs[j].name, i, seed, future.result())
            yield ordered(found)


def stopped(done: int, total: int) -> Interrupted:
    """What a Ctrl-C during an evaluation stopped and what it kept."""
    return Interrupted(
        f"evaluation stopped after {done} of {total} episodes; nothing was written (an "
        "evaluation's files are written whole or not at all)."
    )


def policy_jobs(target: Target, policies: list[str]) -> list[Job]:
    """The trained policy of `target` (as `TRAINED`) and the baselines, on its env."""
    ckpt = str(target.checkpoint) if target.checkpoint else None
    return [Job(p, target.env_config, ckpt if p == TRAINED else None) for p in policies]


def run_all(
    target: Target,
    policies: list[str],
    seeds: Sequence[int],
    explore: bool,
    workers: int,
    progress: Any = None,
    prepare: Any = None,
) -> list[dict[str, Any]]:
    """Every policy on every seed, all rows at once, by policy, then episode."""
    blocks = list(
        play_blocks(policy_jobs(target, policies), seeds, explore, workers, progress, prepare)
    )
    return [row for j in range(len(policies)) for rows in blocks for row in rows[j]]


def _cell(stats: dict[str, float], sign: bool = False) -> str:
    return ci_text(stats["mean"], stats["ci95"], sign=sign)


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
        table.add_column(
            f"greedy→{summary.get('gap_reference') or 'oracle'} gap closed", justify="right"
        )
    for name, gap in gaps.items():
        cells = [_cell(gap["diff"][c], sign=True) for c in columns]
        if closed:
            cells.append("")
        table.add_row(name, *cells)
    if TRAINED in closed:
        ref = summary.get("gap_reference") or "oracle"
        table.add_row(f"(greedy→{ref} gap)", *[""] * len(columns), closed_text(closed[TRAINED]))
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
    def seeds(self) -> range:
        return range(self.seed, self.seed + self.episodes)

    def baseline_names(self, default: list[str]) -> list[str]:
        if self.baselines is None:
            return list(default)
        return [b for b in self.baselines.split(",") if b]


def evaluate_command(checkpoint: Path | None, overrides: list[str], opts: EvalOptions) -> Path:
    """`mobrl evaluate` / `mobrl baselines`: run, print the table, write the files."""
    from rich.progress import Progress
    from rich.table import Table

    from mobrl.core.console import make_console

    console = make_console()
    opts.check()
    episodes, explore, workers = opts.episodes, opts.explore, opts.workers
    target = target_for(checkpoint, overrides, opts.pick)
    from mobrl.evaluation.policies import baselines_for

    names = opts.baseline_names(baselines_for(target.env_config))
    check_baselines(names, target.env_config)
    policies = ([TRAINED] if target.checkpoint else []) + names
    if not policies:
        raise UserError("nothing to evaluate: give --checkpoint or --baselines.")
    scenario = target.env_config.get("scenario") or target.env_config["id"]
    output = EvalDir.new(opts.output, scenario)

    def restore() -> None:
        """Restore the checkpoint (and check its spaces) while workers play the baselines;
        episodes run in this process reuse it."""
        from mobrl.evaluation.policies import policy_for_env

        trained = policy_for_env(target.checkpoint, target.env_config, explore, opts.trust)
        set_main_policy(str(target.checkpoint), target.env_config, explore, trained)

    if target.checkpoint is not None:
        console.print(target.note)

    seeds = opts.seeds
    total = len(seeds) * len(policies)
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if total >= 8 else 1
    tally = Tally(policies)
    with output.claim():  # a second command writing to the same --output is refused
        jobs = policy_jobs(target, policies)
        log = output.episode_log(len(jobs))
        done = [0]

        def advance() -> None:
            done[0] += 1
            bar.advance(task)

        try:
            with Progress(console=console, transient=True) as bar:
                task = bar.add_task(f"{total} episodes ({', '.join(policies)})", total=total)
                blocks = play_blocks(
                    jobs, seeds, explore, workers, progress=advance,
                    prepare=restore if target.checkpoint is not None else None,
                )  # fmt: skip
                with closing(blocks):  # its worker pool ends here, whatever happens
                    for block in blocks:
                        tally.add([row for rows in block for row in rows])
                        for j, rows in enumerate(block):
                            log.add(j, rows)
            log.finish()
        except KeyboardInterrupt:
            log.discard()
            raise stopped(done[0], total) from None
        except BaseException:
            log.discard()
            raise
        summary = tally.summary()
        meta = {
            "checkpoint": str(target.checkpoint) if target.checkpoint else None,
            "env_config": target.env_config,
            "episodes": episodes,
            "seed_range": [seeds[0], seeds[-1]],
            "explore": explore,
        }
        output.write_summary({**meta, **summary})

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
    for note in summary["notes"]:
        console.print(f"[bold]note:[/bold] {note}")
    console.print(f"results: {', '.join(str(f) for f in output.files())}")
    return output.path.absolute()
