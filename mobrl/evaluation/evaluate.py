"""`mobrl evaluate` and `mobrl baselines`: policies on paired episode seeds, their statistics
(mean, 95 % CI) printed as tables and written as JSON and CSV; `EvalOptions`, the options they
share with the generalisation matrix."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobrl.core.envfailures import EnvFailedError
from mobrl.core.errors import Interrupted, UserError, first_line
from mobrl.evaluation.outputs import EpisodeJournal, EpisodeLog, EvalDir
from mobrl.evaluation.paired import TRAINED, Tally, senses
from mobrl.evaluation.policies import check_baselines
from mobrl.evaluation.scheduling import play_blocks, policy_jobs, set_main_policy
from mobrl.evaluation.tables import column_groups, paired_table, policies_table
from mobrl.evaluation.targets import Target, check_pick, target_for


def stopped(done: int, total: int, kept: Path | None = None) -> Interrupted:
    """What a Ctrl-C during an evaluation stopped and what it kept: nothing, or (`kept`: the
    --output dir of an evaluation that continues) the episodes played so far."""
    if kept is not None and done:
        return Interrupted(
            f"evaluation stopped after {done} of {total} episodes; they are kept in '{kept}': "
            f"run the same command with --output {kept} to play the rest."
        )
    return Interrupted(
        f"evaluation stopped after {done} of {total} episodes; nothing was written (an "
        "evaluation's files are written whole or not at all)."
    )


@contextmanager
def kept_whole(
    log: EpisodeLog,
    total: int,
    progress: Callable[[], None] | None = None,
    journal: EpisodeJournal | None = None,
) -> Iterator[Callable[[], None]]:
    """Episodes streamed to `log` within are kept whole or not at all: the log is finished
    when the block ends and discarded if anything stops it; a Ctrl-C is told as `stopped`
    after the episodes counted so far by the yielded `advance()` (which passes each on to
    `progress`). With a `journal`, the episodes it holds count as done, and stay in it
    (for the next run of the command) unless the block ends."""
    done = journal.played if journal is not None else 0
    kept = journal.path.parent if journal is not None else None

    def advance() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress()

    try:
        yield advance
        log.finish()
    except BaseException as err:
        log.discard()
        if journal is not None:  # kept for the next run, unless it holds nothing
            journal.close(finished=journal.played == 0)
        if isinstance(err, KeyboardInterrupt):
            raise stopped(done, total, kept) from None
        if isinstance(err, EnvFailedError):  # the env's line, then what was kept
            told = first_line(err)
            rest = "the " + first_line(stopped(done, total, kept))
            raise EnvFailedError(f"{told}; {rest}", str(err)) from err
        raise


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


def _policies(target: Target, opts: EvalOptions) -> list[str]:
    """The policies to evaluate: the trained one (with a checkpoint) and the baselines
    (--baselines, or the scenario's), checked against the target's env."""
    from mobrl.evaluation.policies import baselines_for

    names = opts.baseline_names(baselines_for(target.env_config))
    check_baselines(names, target.env_config)
    policies = ([TRAINED] if target.checkpoint else []) + names
    if not policies:
        raise UserError("nothing to evaluate: give --checkpoint or --baselines.")
    return policies


def _workers(workers: int | None, total: int) -> int:
    """--workers, or by default one per CPU (up to 4) when there are 8+ episodes."""
    if workers is None:
        workers = min(os.cpu_count() or 1, 4) if total >= 8 else 1
    return workers


def _restore(target: Target, explore: bool, trust: bool, journal: EpisodeJournal) -> None:
    """Restore the checkpoint (and check its spaces) while workers play the baselines;
    episodes run in this process reuse it. Then the journal keeps the episodes played."""
    from mobrl.evaluation.policies import policy_for_env

    trained = policy_for_env(target.checkpoint, target.env_config, explore, trust)
    set_main_policy(str(target.checkpoint), target.env_config, explore, trained)
    journal.release()


def _play(
    console: Any, target: Target, policies: list[str], opts: EvalOptions, output: EvalDir
) -> dict[str, Any]:
    """Every policy on every seed under a progress bar, tallied and streamed to episodes.csv
    a block at a time (kept whole or not at all), each episode also kept in the dir's journal
    as it is done, so that the same command run again continues a stopped evaluation: the
    summary's statistics (the journal goes once they are written)."""
    from mobrl.core.console import Pace, paced_progress

    seeds, explore = opts.seeds, opts.explore
    total = len(seeds) * len(policies)
    tally = Tally(policies, senses(target.env_config))
    jobs = policy_jobs(target, policies)
    journal = output.journal(_journal_settings(target, opts, policies))
    known = dict(journal.known)
    workers = _workers(opts.workers, total - len(known))
    log = output.episode_log(len(jobs))
    prepare = None  # the checkpoint restored, unless its episodes were all played before
    if target.checkpoint is not None and any((0, s) not in known for s in seeds):
        journal.hold()  # a checkpoint that cannot be restored is bad input: nothing written
        prepare = functools.partial(_restore, target, explore, opts.trust, journal)

    # the time left from each policy's own cost (an exact reference's episode can cost 30
    # times a rule's)
    pace = Pace(policies, [sum((j, s) not in known for s in seeds) for j in range(len(jobs))])

    def advance() -> None:
        bar.update(task, left=pace.text())
        bar.advance(task)

    if known:
        console.print(
            f"continuing the evaluation in {output.path}: {len(known)} of {total} episodes "
            "played before"
        )
    with kept_whole(log, total, advance, journal) as counted:
        with paced_progress(console) as bar:
            what = f"{total} episodes ({', '.join(policies)})"
            task = bar.add_task(what, total=total, completed=len(known), left="")
            blocks = play_blocks(
                jobs,
                seeds,
                explore,
                workers,
                counted,
                prepare,
                known=known,
                record=journal.record,
                pace=pace,
            )
            with closing(blocks):  # its worker pool ends here, whatever happens
                for block in blocks:
                    tally.add([row for rows in block for row in rows])
                    for j, rows in enumerate(block):
                        log.add(j, rows)
    journal.close(finished=False)  # it goes once the summary is written too
    return tally.summary()


def _journal_settings(target: Target, opts: EvalOptions, policies: list[str]) -> dict[str, Any]:
    """What an evaluation continued from its journal must share with the one that started
    it."""
    from importlib.metadata import version

    return {**_settings(target, opts), "policies": policies, "mobrl": version("mobrl")}


def _settings(target: Target, opts: EvalOptions) -> dict[str, Any]:
    """What the evaluation played, for summary.json."""
    seeds = opts.seeds
    trained = target.policy_env
    return {
        "checkpoint": str(target.checkpoint) if target.checkpoint else None,
        # the layout played, which a policy's own env need not name (scenario=NAME)
        "scenario": _scenario(target.env_config),
        "trained_on": _scenario(trained) if trained is not None else None,
        "env_config": target.env_config,
        "episodes": opts.episodes,
        "seed_range": [seeds[0], seeds[-1]],
        "explore": opts.explore,
    }


def _scenario(env_config: dict[str, Any]) -> str:
    return env_config.get("scenario") or env_config["id"]


def _print_tables(console: Any, summary: dict[str, Any], policies: list[str], title: str) -> None:
    """Every policy's statistics, the paired differences (when there is a reference) and the
    summary's notes."""
    for part, columns in column_groups(summary):
        console.print(policies_table(summary, policies, f"{title}{part}", columns))
        if summary["reference"] is not None:
            console.print(paired_table(summary, columns, part))
    for note in summary["notes"]:
        console.print(f"[bold]note:[/bold] {note}")


def evaluate_command(checkpoint: Path | None, overrides: list[str], opts: EvalOptions) -> Path:
    """`mobrl evaluate` / `mobrl baselines`: run, print the table, write the files."""
    from mobrl.core.console import make_console
    from mobrl.evaluation.paired import service_notes

    console = make_console()
    opts.check()
    target = target_for(checkpoint, overrides, opts.pick)
    policies = _policies(target, opts)
    scenario = _scenario(target.env_config)
    output = EvalDir.new(opts.output, scenario)
    if target.checkpoint is not None:
        console.print(target.note)
    with output.claim():  # a second command writing to the same --output is refused
        summary = {**_settings(target, opts), **_play(console, target, policies, opts, output)}
        # the notes again, now that they can read what was played (cell agents trade service)
        summary["notes"] = service_notes(summary)
        output.write_summary(summary)
        output.drop_journal()
    title = f"{scenario}: {opts.episodes} episodes per policy, mean ± 95 % CI"
    _print_tables(console, summary, policies, title)
    console.print(f"results: {', '.join(str(f) for f in output.files())}")
    return output.path.absolute()
