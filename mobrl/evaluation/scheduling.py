"""Which process plays which episode of an evaluation: jobs (a policy on an env), the policies
each process loads once, and blocks of seeds played here and in one pool of worker processes.

`mobrl evaluate`, `mobrl baselines` and the generalisation matrix all run their episodes
through `play_blocks`; worker processes import this module alone, so it stays light (no Ray,
no torch, no command)."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mobrl.evaluation.paired import TRAINED

if TYPE_CHECKING:
    from mobrl.evaluation.targets import Target

#: policies loaded in this process, by `_policy_key` (one load per process, policy and env)
_POLICIES: dict[tuple, Any] = {}

#: seeds per block: every job plays a block's seeds before the next block starts, so
#: episodes are tallied, written and dropped a block at a time (memory independent of
#: --episodes) while the workers stay busy within a block
BLOCK = 256

#: a block's seeds with their episode numbers, (episode, seed)
Chunk = list[tuple[int, int]]
#: a block's rows as they come in, by (job, episode)
Found = dict[tuple[int, int], dict[str, Any]]


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


def policy_jobs(target: Target, policies: list[str]) -> list[Job]:
    """The trained policy of `target` (as `TRAINED`) and the baselines, on its env."""
    ckpt = str(target.checkpoint) if target.checkpoint else None
    return [Job(p, target.env_config, ckpt if p == TRAINED else None) for p in policies]


# --- the policies a process plays (worker processes load their own) -----------------------


def _make_policy(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> Any:
    from mobrl.evaluation.policies import load_policy, make_baseline

    if name == TRAINED:
        return load_policy(checkpoint, env_config, explore)
    return make_baseline(name)


def _policy_key(name: str, checkpoint: str | None, env_config: dict, explore: bool) -> tuple:
    return (name, checkpoint, explore, json.dumps(env_config, sort_keys=True, default=str))


def set_main_policy(checkpoint: str, env_config: dict, explore: bool, policy: Any) -> None:
    """Episodes of the trained policy on `env_config` that run in this process use `policy`
    (loaded, or bound to that env, already)."""
    _POLICIES[_policy_key(TRAINED, checkpoint, env_config, explore)] = policy


def _run(name: str, seed: int, checkpoint: str | None, env_config: dict, explore: bool) -> dict:
    """One episode, in whichever process runs it (the policy loaded there once)."""
    from mobrl.evaluation.rollout import run_episode

    key = _policy_key(name, checkpoint, env_config, explore)
    if key not in _POLICIES:
        _POLICIES[key] = _make_policy(name, checkpoint, env_config, explore)
    return run_episode(env_config, _POLICIES[key], seed)


def _timed_run(*args: Any) -> tuple[float, dict]:
    """`_run`, and the seconds it took in the process that ran it."""
    started = time.perf_counter()
    result = _run(*args)
    return time.perf_counter() - started, result


def _row(name: str, i: int, seed: int, result: dict) -> dict[str, Any]:
    return {"policy": name, "episode": i, "seed": seed, **result}


# --- blocks of seeds, here and in worker processes -----------------------------------------


class _Plays:
    """The episodes of `jobs` as this process plays them and counts them (`pace` told each
    one's job and seconds, then `progress` called, once per episode, wherever it ran), hands
    each to `record(job, seed, row)` as soon as it is done, and puts each block's rows in
    order; the episodes in `known` (by job and seed: played before) are not played again."""

    def __init__(
        self,
        jobs: list[Job],
        explore: bool,
        progress: Any,
        known: Found | None = None,
        record: Callable[[int, int, dict[str, Any]], None] | None = None,
        pace: Any = None,
    ) -> None:
        self.jobs, self.explore, self.progress = jobs, explore, progress
        self.known, self.record, self.pace = known or {}, record, pace
        self.lock = threading.Lock()  # progress also advances from the pool's callback thread
        #: the first error recording a worker's episode raised in the pool's callback thread (a
        #: full disk, a second writer): `_collect` stops the pool and raises it, once
        self.failed: BaseException | None = None

    def done(self, j: int, i: int, seed: int, timed: tuple[float, dict]) -> dict[str, Any]:
        """Episode `i` (on `seed`) of job `j` is played (`timed`: its seconds and result):
        recorded, counted, its row."""
        seconds, result = timed
        row = _row(self.jobs[j].name, i, seed, result)
        if self.record is not None:  # thread-safe itself (the journal holds its own lock)
            self.record(j, seed, row)
        with self.lock:
            if self.pace is not None:
                self.pace.done(j, seconds)
            if self.progress is not None:
                self.progress()
        return row

    def tick(self, key: tuple[int, int, int], future: Any) -> None:
        """A worker's episode (job, episode, seed) is done (the pool calls this in its own
        thread)."""
        if future.cancelled() or future.exception() is not None or self.failed is not None:
            return
        try:
            self.done(*key, future.result())
        except BaseException as err:  # told once by `_collect`, not by the pool per episode
            with self.lock:
                self.failed = self.failed or err

    def play(self, j: int, i: int, seed: int) -> dict[str, Any]:
        """Episode `i` (on `seed`) of job `j`: played in this process, unless it is known."""
        if (j, seed) in self.known:
            return self.known[j, seed]
        job = self.jobs[j]
        timed = _timed_run(job.name, seed, job.checkpoint, job.env_config, self.explore)
        return self.done(j, i, seed, timed)

    def ordered(self, found: Found) -> list[list[dict[str, Any]]]:
        """A block's rows, each job's in episode order."""
        out: list[list[dict[str, Any]]] = [[] for _ in self.jobs]
        for (j, _), row in sorted(found.items()):
            out[j].append(row)
        return out


def play_blocks(
    jobs: list[Job],
    seeds: Sequence[int],
    explore: bool,
    workers: int,
    progress: Any = None,
    prepare: Any = None,
    block: int = BLOCK,
    known: Found | None = None,
    record: Callable[[int, int, dict[str, Any]], None] | None = None,
    pace: Any = None,
) -> Iterator[list[list[dict[str, Any]]]]:
    """Every job on every seed, a block of seeds at a time: yields, per block, each job's
    rows of (policy, episode, seed, return, metrics...) in episode order. The rows in
    `known` (by job and seed) are taken as they are; each episode played is handed to
    `record(job, seed, row)` as soon as it is done, wherever it ran, and its seconds to
    `pace.done(job, seconds)` (a `core.console.Pace` over the jobs) before `progress()`.

    With `workers` > 1, jobs that restore an RLlib checkpoint play in this process, while one
    pool of worker processes plays the others, whatever their env (baselines and zoo
    policies load in a fraction of a second, without Ray or torch), and this process then
    takes over what the workers have not started; each worker starts once. `prepare()` (e.g.
    restoring the checkpoint here) runs in this process once the workers have their first
    episodes, so both overlap."""
    local = [job.heavy for job in jobs] if workers > 1 else [True] * len(jobs)
    chunks = (
        list(enumerate(seeds[start : start + block], start))
        for start in range(0, len(seeds), block)
    )
    plays = _Plays(jobs, explore, progress, known, record, pace)
    if all(local):  # everything here: no worker processes
        yield from _blocks_here(plays, chunks, prepare)
    else:
        yield from _blocks_pooled(plays, local, chunks, workers, prepare)


def _blocks_here(
    plays: _Plays, chunks: Iterator[Chunk], prepare: Callable[[], None] | None
) -> Iterator[list[list[dict[str, Any]]]]:
    """`play_blocks` with every job in this process."""
    if prepare is not None:
        prepare()
    jobs = range(len(plays.jobs))
    for chunk in chunks:
        yield plays.ordered({(j, i): plays.play(j, i, s) for j in jobs for i, s in chunk})


def _blocks_pooled(
    plays: _Plays,
    local: list[bool],
    chunks: Iterator[Chunk],
    workers: int,
    prepare: Callable[[], None] | None,
) -> Iterator[list[list[dict[str, Any]]]]:
    """`play_blocks` with the jobs not `local` in a pool of worker processes (one CPU left
    to this process when it plays jobs too); the pool ends when the generator does."""
    from mobrl.core.workers import process_pool

    pool_workers = max(1, workers - 1) if any(local) else workers
    with process_pool(pool_workers) as pool:
        for chunk in chunks:
            futures = _submit(pool, plays, local, chunk)
            if prepare is not None:
                _prepare_beside(prepare, futures)
                prepare = None
            found = {
                (j, i): plays.play(j, i, s)
                for j in range(len(plays.jobs))
                if local[j]
                for i, s in chunk
            }
            if any(local):  # then take over the episodes the workers have not started yet
                for future, (j, i, seed) in futures.items():
                    if future.cancel():
                        found[j, i] = plays.play(j, i, seed)
            _collect(plays, futures, found)
            found.update(
                ((j, i), plays.known[j, s])
                for j in range(len(plays.jobs))
                for i, s in chunk
                if (j, s) in plays.known
            )
            yield plays.ordered(found)


def _submit(pool: Any, plays: _Plays, local: list[bool], chunk: Chunk) -> dict[Any, tuple]:
    """The block's episodes of the jobs not `local`, queued in the pool: future -> (job,
    episode, seed), each counted by `progress` when its worker is done with it."""
    futures = {}
    for j, job in enumerate(plays.jobs):
        if local[j]:
            continue
        for i, seed in chunk:
            if (j, seed) in plays.known:
                continue
            args = (job.name, seed, job.checkpoint, job.env_config, plays.explore)
            futures[pool.submit(_timed_run, *args)] = (j, i, seed)
    for future, key in futures.items():
        future.add_done_callback(functools.partial(plays.tick, key))
    return futures


def _prepare_beside(prepare: Callable[[], None], futures: dict[Any, tuple]) -> None:
    """`prepare()` while the workers play their first episodes; if it fails (or a Ctrl-C
    stops it), the episodes they have not started are dropped."""
    try:
        prepare()
    except BaseException:
        for future in futures:  # the workers stop after their current episode
            future.cancel()
        raise


def _collect(plays: _Plays, futures: dict[Any, tuple], found: Found) -> None:
    """Wait for the workers' episodes of the block and add their rows to `found` (those this
    process took over are there already)."""
    for future in as_completed(futures):
        _stop_if_failed(plays, futures)
        if not future.cancelled():
            j, i, seed = futures[future]
            found[j, i] = _row(plays.jobs[j].name, i, seed, future.result()[1])
    _stop_if_failed(plays, futures)


def _stop_if_failed(plays: _Plays, futures: dict[Any, tuple]) -> None:
    """Recording a worker's episode failed: drop the episodes not started, raise its error."""
    if plays.failed is None:
        return
    for future in futures:
        future.cancel()
    raise plays.failed


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
