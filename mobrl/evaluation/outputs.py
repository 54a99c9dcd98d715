"""An evaluation's output dir (`mobrl evaluate`, `mobrl baselines`, the matrix): its file
names and the schema of what is in them, one place that writes and reads them, and the claim
that keeps a second command from writing into it at the same time."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError
from mobrl.core.files import (
    atomic_write_csv,
    atomic_write_json,
    atomic_writer,
    check_writable,
    claimed,
    disk_error,
)


class EvalDir:
    """The files of one evaluation:

    - `summary.json` (`mobrl evaluate`): `checkpoint`, `env_config`, `episodes`, `seed_range`,
      `explore`, then per policy the mean, `ci95` and `n` of every measure (`policies`), which
      way each measure is better (`better`: max, or min for a cost of `scenario.metrics`), the
      paired differences (`paired_vs_trained` or `paired_vs_greedy`, each with `diff` per
      measure), `reference`, `gap_closed` and `notes` (`paired.Tally.summary`);
    - `episodes.csv`: one row per policy and episode (`policy`, `episode`, `seed`, measures;
      the matrix adds `trained_on` and `evaluated_on` in front);
    - `matrix.csv` and `matrix.json` (`--scenarios`): one cell per checkpoint, layout and
      policy, and the run's settings around them.
    """

    SUMMARY = "summary.json"
    EPISODES = "episodes.csv"
    MATRIX_CSV = "matrix.csv"
    MATRIX_JSON = "matrix.json"
    RESULTS = (SUMMARY, EPISODES, MATRIX_CSV, MATRIX_JSON)
    #: the episodes of an unfinished evaluation, one JSON line each (removed once it finishes)
    JOURNAL = ".episodes.journal"

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"EvalDir({str(self.path)!r})"

    @classmethod
    def new(cls, output: Path | None, label: str) -> EvalDir:
        """`--output`, or `evaluations/DATE/TIME_LABEL`; refused if it holds results."""
        if output is None:  # two evaluations in one second (from Python, say) get two dirs
            now = datetime.now()
            base = Path("evaluations") / now.strftime("%Y-%m-%d") / f"{now:%H-%M-%S}_{label}"
            output, n = base, 1
            while output.exists():
                n += 1
                output = base.with_name(f"{base.name}_{n}")
        folder = cls(output)
        folder.check_new()
        return folder

    def check_new(self) -> None:
        """Writable and without results yet (mobrl never overwrites results)."""
        check_writable(self.path, "--output")
        existing = [f for f in self.RESULTS if (self.path / f).exists()]
        if existing:
            raise UserError(
                f"--output '{self.path}' already holds results ({existing[0]}). "
                "Choose a new --output dir; mobrl does not overwrite results."
            )

    @contextmanager
    def claim(self) -> Iterator[EvalDir]:
        """Hold the dir while writing (a second command is refused); checked again under the
        claim, since another command may have finished there in the meantime."""
        with claimed(self.path):
            self.check_new()
            yield self

    def episode_log(self, parts: int) -> EpisodeLog:
        return EpisodeLog(self.path, parts, self.EPISODES)

    def journal(self, settings: dict[str, Any]) -> EpisodeJournal:
        """The episodes an evaluation of `settings` has played here so far (see
        `EpisodeJournal`)."""
        return EpisodeJournal(self.path / self.JOURNAL, settings)

    def drop_journal(self) -> None:
        """The evaluation's results are written: its journal goes."""
        (self.path / self.JOURNAL).unlink(missing_ok=True)

    def write_summary(self, summary: dict[str, Any]) -> Path:
        return atomic_write_json(self.path / self.SUMMARY, summary)

    def write_episodes(self, rows: list[dict[str, Any]]) -> Path:
        """All rows at once (for rows already in memory; commands stream: `episode_log`)."""
        import pandas as pd

        self.path.mkdir(parents=True, exist_ok=True)
        return atomic_write_csv(self.path / self.EPISODES, pd.DataFrame(rows))

    def write_matrix(self, cells: list[dict[str, Any]], settings: dict[str, Any]) -> None:
        import pandas as pd

        atomic_write_csv(self.path / self.MATRIX_CSV, pd.DataFrame(cells))
        atomic_write_json(self.path / self.MATRIX_JSON, {**settings, "cells": cells})

    def _read(self, name: str) -> dict[str, Any] | None:
        path = self.path / name
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except ValueError as err:
            raise UserError(
                f"'{path}' is not valid JSON ({err}): the evaluation was cut short. Run "
                "the evaluation again into a new --output dir."
            ) from None

    def read_summary(self) -> dict[str, Any] | None:
        """The summary of `mobrl evaluate` (None: none here)."""
        summary = self._read(self.SUMMARY)
        return summary if summary is not None and "policies" in summary else None

    def read_matrix(self) -> dict[str, Any] | None:
        return self._read(self.MATRIX_JSON)

    def holds_evaluation(self) -> bool:
        return (self.path / self.EPISODES).is_file() and self.read_summary() is not None

    def files(self) -> list[Path]:
        """Its result files, absolute (as `mobrl train` prints paths: usable from anywhere)."""
        return [self.path.absolute() / f for f in self.RESULTS if (self.path / f).exists()]


class EpisodeLog:
    """An episodes CSV written as blocks of rows come, in constant memory: one temporary file
    per part (e.g. per job), joined in part order into the CSV atomically at the end; nothing
    but the finished file is left behind, whatever happens."""

    def __init__(self, output: Path, parts: int, name: str = "episodes.csv") -> None:
        self.path = output / name
        self.parts = [output / f".{name}.{os.getpid()}.{j}.part" for j in range(parts)]
        self.fields: list[str] | None = None
        self.handles: dict[int, Any] = {}
        self.writers: dict[int, Any] = {}

    def add(self, part: int, rows: list[dict[str, Any]], extra: dict | None = None) -> None:
        """Append `rows` to `part`, each after the columns of `extra` (e.g. its layout)."""
        import csv

        try:
            for row in rows:
                row = {**(extra or {}), **row}
                if self.fields is None:
                    self.fields = list(row)
                if part not in self.handles:
                    self.handles[part] = open(self.parts[part], "w", newline="")
                    self.writers[part] = csv.DictWriter(self.handles[part], self.fields, restval="")
                self.writers[part].writerow(row)
        except OSError as err:
            raise disk_error(self.path, err) from None

    def finish(self) -> Path:
        import csv
        import shutil

        path = self.path
        try:
            for handle in self.handles.values():
                handle.close()  # a full disk may show only here, when the buffer is flushed
            with atomic_writer(path) as out:
                csv.writer(out).writerow(self.fields or ["policy", "episode", "seed", "return"])
                for j, part in enumerate(self.parts):
                    if j in self.handles:
                        with open(part, newline="") as f:
                            shutil.copyfileobj(f, out)
        except OSError as err:
            raise disk_error(path, err) from None
        finally:
            self.discard()
        return path

    def discard(self) -> None:
        """Remove the temporary files (episodes.csv, once written, stays)."""
        for handle in self.handles.values():
            try:
                handle.close()
            except OSError:
                pass  # a full disk: what was buffered is dropped with the file
        for part in self.parts:
            part.unlink(missing_ok=True)


class EpisodeJournal:
    """The episodes an evaluation has played, each appended as one JSON line as soon as it is
    done (wherever it ran), so that an evaluation stopped by a Ctrl-C, an error or a kill
    continues where it stopped when the same command runs again into the same --output.

    The first line holds the evaluation's settings (checkpoint, env, policies, seeds,
    explore, mobrl's version); a journal of other settings is refused, one of the same
    settings gives back its episodes (`known`, by job and seed). A line cut short by a kill
    is dropped. `close(finished=True)` removes the journal once the results are written."""

    def __init__(self, path: Path, settings: dict[str, Any]) -> None:
        self.path = path
        self.header = json.dumps({"settings": settings}, sort_keys=True, default=str)
        self.known: dict[tuple[int, int], dict[str, Any]] = {}
        self.handle: Any = None
        self.closed = False
        self.held: list[tuple[int, int, dict[str, Any]]] | None = None  # see `hold`
        self.lock = threading.Lock()  # workers' episodes are told in the pool's thread
        if path.is_file():
            self._read()

    def _read(self) -> None:
        with open(self.path) as f:
            text = f.read()
        if not text.endswith("\n"):  # a line a kill cut short: dropped before lines follow it
            with open(self.path, "r+") as f:
                f.truncate(len(text[: text.rfind("\n") + 1].encode()))
        lines = text.split("\n")
        header = _parsed(lines[0])
        if header is None:  # killed before its first line was whole: nothing played
            self.path.unlink()
            return
        if json.dumps(header, sort_keys=True) != self.header:
            raise UserError(
                f"--output '{self.path.parent}' holds an unfinished evaluation with other "
                "settings (checkpoint, scenario, baselines, --episodes, --seed or --explore). "
                "Run that evaluation's command again to continue it, or choose a new --output."
            )
        for line in lines[1:]:
            entry = _parsed(line)
            if entry is not None:  # None: the line a kill cut short
                self.known[entry["job"], entry["seed"]] = entry["row"]

    def record(self, job: int, seed: int, row: dict[str, Any]) -> None:
        """Episode of `job` on `seed` played: its row, on disk before the next one (after
        `close`, when a worker's last episode is told late, its row is in the results)."""
        with self.lock:
            if self.held is not None:
                self.held.append((job, seed, row))
            elif not self.closed:
                self._append(job, seed, row)

    def hold(self) -> None:
        """Keep the episodes in memory until `release`: until the evaluation has shown it can
        run (its checkpoint restored), so that a command refused for bad input writes
        nothing."""
        self.held = []

    def release(self) -> None:
        """Write the episodes held, and each one as it comes from now on."""
        with self.lock:
            held, self.held = self.held or [], None
            for entry in held:
                self._append(*entry)

    def _append(self, job: int, seed: int, row: dict[str, Any]) -> None:
        try:
            if self.handle is None:
                fresh = not self.path.is_file()
                self.handle = open(self.path, "a")
                if fresh:
                    self.handle.write(self.header + "\n")
            line = json.dumps({"job": job, "seed": seed, "row": row}, default=_plain)
            self.handle.write(line + "\n")
            self.handle.flush()
        except OSError as err:
            raise disk_error(self.path, err) from None
        self.known[job, seed] = row

    @property
    def played(self) -> int:
        """Episodes played by now, in this command or before."""
        return len(self.known)

    def close(self, finished: bool) -> None:
        """Done writing; `finished`: the results are written, so the journal goes."""
        with self.lock:
            self.closed = True
            if self.handle is not None:
                try:
                    self.handle.close()
                except OSError:
                    pass  # a full disk: the lines already flushed stay
                self.handle = None
        if finished:
            self.path.unlink(missing_ok=True)


def _plain(value: Any) -> Any:
    """numpy's scalars as the Python numbers they hold (their JSON reads back the same)."""
    return value.item() if hasattr(value, "item") else str(value)


def _parsed(line: str) -> Any:
    """A journal line's JSON (None: empty or cut short)."""
    try:
        return json.loads(line)
    except ValueError:
        return None
