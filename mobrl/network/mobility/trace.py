"""Trace-driven mobility: UEs replay the positions of a SUMO FCD or id,time,x,y CSV file.

`movement: {model: trace, file: PATH, start: 0.0}`. PATH is read from the layout file's
folder unless absolute; it is a SUMO floating car data export (`sumo --fcd-output`, `.xml` or
`.xml.gz`: `<timestep time="...">` elements holding `<vehicle>` and `<person>` elements with
id, x and y) or a CSV file (`.csv` or `.csv.gz`) whose header names the columns id, time, x
and y (other columns are ignored). Times are in seconds, positions in the layout's metres.

UE i follows the i-th trace id in order of first appearance in the file (ids beyond the
number of UEs are ignored). At step t a UE is where its trace is at time start + t seconds:
interpolated linearly between the two samples around that time, at its first sample before
the trace begins and at its last after it ends (a SUMO vehicle waits where it departs and
stays where it arrives). The model draws no random numbers: an episode replays the file.

The positions are tabled at construction for every whole second from `start` to the last
sample of a followed id (T rows of n_ues floats, x and y), so a step is one row lookup;
the table takes 16 x T x n_ues bytes.
"""

from __future__ import annotations

import csv
import functools
import gzip
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import IO, Any

import numpy as np

from mobrl.network.mobility.base import MobilityModel, MovementError, number

#: the file names read, and the format of each
FORMATS = {".xml": "xml", ".xml.gz": "xml", ".csv": "csv", ".csv.gz": "csv"}
#: the SUMO FCD elements whose positions are read (a container is no UE)
SUMO_ELEMENTS = ("vehicle", "person")
CSV_COLUMNS = ("id", "time", "x", "y")
_KEY = "movement.file"


@dataclass(frozen=True)
class Trace:
    """A trace file's samples: the ids in order of first appearance and, per id, its sample
    times (increasing) and positions."""

    ids: tuple[str, ...]
    times: tuple[np.ndarray, ...]
    x: tuple[np.ndarray, ...]
    y: tuple[np.ndarray, ...]


def trace_path(file: Any, base_dir: Path | None) -> Path:
    """The trace file `movement.file` names: relative to the layout's folder unless absolute."""
    if not isinstance(file, (str, PathLike)) or not str(file).strip():
        raise MovementError(
            _KEY,
            f"must be the name of a trace file, got {file!r}",
            "Give the path of a SUMO FCD .xml or an id,time,x,y .csv file.",
        )
    path = Path(file).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return path


def file_format(path: Path) -> str:
    """'xml' or 'csv', by the file's extension."""
    name = path.name.lower()
    for suffix, kind in FORMATS.items():
        if name.endswith(suffix):
            return kind
    raise MovementError(
        _KEY,
        f"'{path}' has the extension '{path.suffix}', which is no trace format",
        "Use a SUMO FCD .xml file or an id,time,x,y .csv file (either may be .gz).",
    )


def read_trace(path: Path) -> Trace:
    """The samples of a trace file, or `MovementError` naming what is wrong where. Read once
    per version of the file (a layout's check and its model both need them)."""
    try:
        stat = path.stat()
    except OSError:
        raise MovementError(
            _KEY,
            f"'{path}' does not exist",
            "Check the path (a relative one is read from the layout file's folder).",
        ) from None
    if not path.is_file():
        raise MovementError(_KEY, f"'{path}' is not a file", "Name a .xml or .csv trace file.")
    return _read(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _read(name: str, mtime_ns: int, size: int) -> Trace:
    """`read_trace` keyed by the file's version, so an edited file is read again."""
    path = Path(name)
    kind = file_format(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    samples = _Samples(path)
    try:
        with opener(path, "rb") as raw:  # type: ignore[operator]
            reader = _read_xml if kind == "xml" else _read_csv
            for sample in reader(path, raw):
                samples.add(*sample)
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise MovementError(
            _KEY, f"'{path}' cannot be read ({err})", "Check the file (a .gz one must be gzip)."
        ) from None
    return samples.trace()


class _Samples:
    """Samples collected per id, in order of the ids' first appearance."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.by_id: dict[str, tuple[list[float], list[float], list[float]]] = {}

    def add(self, ue_id: str, time: float, x: float, y: float) -> None:
        lists = self.by_id.get(ue_id)
        if lists is None:
            lists = self.by_id[ue_id] = ([], [], [])
        lists[0].append(time)
        lists[1].append(x)
        lists[2].append(y)

    def trace(self) -> Trace:
        times, xs, ys = [], [], []
        for ue_id, (t, x, y) in self.by_id.items():
            t_arr = np.asarray(t, dtype=float)
            order = np.argsort(t_arr, kind="stable")  # a CSV file need not be in time order
            t_arr = t_arr[order]
            same = np.flatnonzero(np.diff(t_arr) == 0)
            if same.size:
                raise MovementError(
                    _KEY,
                    f"'{self.path}' has two samples of '{ue_id}' at time {t_arr[same[0]]:g}",
                    "Keep one sample per id and time.",
                )
            times.append(_frozen(t_arr))
            xs.append(_frozen(np.asarray(x, dtype=float)[order]))
            ys.append(_frozen(np.asarray(y, dtype=float)[order]))
        return Trace(tuple(self.by_id), tuple(times), tuple(xs), tuple(ys))


def _frozen(values: np.ndarray) -> np.ndarray:
    values.flags.writeable = False  # shared by every model built from the cached file
    return values


def _finite(text: str | None, what: str, where: str, path: Path) -> float:
    """A number of the file, or `MovementError` saying where it is."""
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        problem = f"has no {what}" if text is None else f"has {what}={text!r}, not a number"
        raise MovementError(_KEY, f"'{path}': {where} {problem}", "Fix the file.")
    return value


def _read_xml(path: Path, raw: IO[bytes]) -> Iterator[tuple[str, float, float, float]]:
    """(id, time, x, y) of each <vehicle> and <person> of a SUMO FCD export, streamed: each
    <timestep> is dropped once read, so a big file needs little memory."""
    root = None
    time: float | None = None
    step_text: str | None = None
    try:
        for event, elem in ET.iterparse(raw, events=("start", "end")):
            if root is None:
                root = elem
                if elem.tag != "fcd-export":
                    raise MovementError(
                        _KEY,
                        f"'{path}' is no SUMO FCD export (its root is <{elem.tag}>, "
                        "not <fcd-export>)",
                        "Write the trace with sumo --fcd-output, or use an id,time,x,y .csv.",
                    )
            if event == "start":
                if elem.tag == "timestep":
                    step_text = elem.get("time")
                    time = _finite(step_text, "time", "a <timestep>", path)
                elif elem.tag in SUMO_ELEMENTS:
                    ue_id = elem.get("id")
                    if time is None:
                        where = f"<{elem.tag} id={ue_id!r}> is outside any <timestep>"
                        raise MovementError(_KEY, f"'{path}': {where}", "Fix the file.")
                    where = f"<{elem.tag} id={ue_id!r}> at time {step_text}"
                    if ue_id is None:
                        raise MovementError(_KEY, f"'{path}': {where} has no id", "Fix the file.")
                    x = _finite(elem.get("x"), "x", where, path)
                    y = _finite(elem.get("y"), "y", where, path)
                    yield ue_id, time, x, y
            elif elem.tag == "timestep":
                time = None
                root.clear()  # the timestep and everything in it are read
    except ET.ParseError as err:
        line, column = err.position
        raise MovementError(
            _KEY,
            f"'{path}' is not valid XML (line {line}, column {column + 1}: {_reason(err)})",
            "Fix the file (SUMO writes it with --fcd-output).",
        ) from None


def _reason(err: ET.ParseError) -> str:
    """The parser's message without the position it appends."""
    return str(err).split(":")[0]


def _read_csv(path: Path, raw: IO[bytes]) -> Iterator[tuple[str, float, float, float]]:
    """(id, time, x, y) of each row of a CSV file whose header names those columns."""
    lines = (line.decode("utf-8-sig") for line in raw)  # a BOM from a spreadsheet is no column
    reader = csv.reader(lines)
    header = [name.strip().lower() for name in next(reader, [])]
    missing = [name for name in CSV_COLUMNS if name not in header]
    if missing:
        raise MovementError(
            _KEY,
            f"'{path}' line 1: the header {','.join(header) or '(empty)'} lacks "
            f"{', '.join(missing)}",
            "Start the file with the header id,time,x,y.",
        )
    column = [header.index(name) for name in CSV_COLUMNS]
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        where = f"line {reader.line_num}"
        if len(row) < len(header):
            raise MovementError(
                _KEY,
                f"'{path}' {where} has {len(row)} fields, the header {len(header)}",
                "Fix the file: one id,time,x,y row per sample.",
            )
        ue_id, time, x, y = (row[i].strip() for i in column)
        if not ue_id:
            raise MovementError(_KEY, f"'{path}' {where} has no id", "Fix the file.")
        yield (
            ue_id,
            _finite(time, "time", where, path),
            _finite(x, "x", where, path),
            _finite(y, "y", where, path),
        )


class TraceMobility(MobilityModel):
    """UEs replay a trace file (see the module's docstring)."""

    name = "trace"
    PARAMS: dict[str, Any] = {"file": None, "start": 0.0}

    def __init__(
        self,
        params: dict,
        width: float,
        height: float,
        velocity: np.ndarray,
        base_dir: Path | None = None,
    ) -> None:
        super().__init__(params, width, height, velocity, base_dir)
        self.start = number(self.params, "start", self.PARAMS["start"])
        self.path = trace_path(self.params["file"], base_dir)
        trace = read_trace(self.path)
        n = self.n_ues
        end = max(float(times[-1]) for times in trace.times[:n])
        # one row per whole second until every followed trace has ended (then all are held)
        rows = max(math.ceil(end - self.start), 0) + 1
        clock = self.start + np.arange(rows, dtype=float)
        self.table_x = np.empty((rows, n))
        self.table_y = np.empty((rows, n))
        for i in range(n):  # once per UE at construction; steps only look rows up
            # np.interp holds the first and last sample outside the trace's times
            self.table_x[:, i] = np.interp(clock, trace.times[i], trace.x[i])
            self.table_y[:, i] = np.interp(clock, trace.times[i], trace.y[i])
        self.ids = trace.ids[:n]

    @classmethod
    def check(
        cls, params: dict, width: float, height: float, n_ues: int, base_dir: Path | None
    ) -> None:
        super().check(params, width, height, n_ues, base_dir)
        number(params, "start", cls.PARAMS["start"], low=0.0)
        path = trace_path(params["file"], base_dir)
        file_format(path)
        trace = read_trace(path)
        if not trace.ids:
            raise MovementError(
                _KEY,
                f"'{path}' holds no samples",
                "Give a trace with positions (SUMO: vehicles or persons in its timesteps).",
            )
        if len(trace.ids) < n_ues:
            raise MovementError(
                _KEY,
                f"'{path}' has {len(trace.ids)} trace ids for {n_ues} UEs",
                f"Set ues.count <= {len(trace.ids)}, or add traces to the file.",
            )
        _check_inside(path, trace, n_ues, float(width), float(height))

    def reset(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return self.table_x[0].copy(), self.table_y[0].copy()

    def step(
        self, x: np.ndarray, y: np.ndarray, idx: np.ndarray, t: int, rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(idx, slice):
            idx = np.arange(self.n_ues)[idx]
        row = min(t + 1, len(self.table_x) - 1)
        return self.table_x[row, idx], self.table_y[row, idx]


def _check_inside(path: Path, trace: Trace, n_ues: int, width: float, height: float) -> None:
    """Refuse a followed trace that leaves the map (interpolation stays inside if the
    samples are, the area being convex)."""
    x = np.concatenate(trace.x[:n_ues])
    y = np.concatenate(trace.y[:n_ues])
    outside = (x < 0) | (x > width) | (y < 0) | (y > height)
    if not outside.any():
        return
    first = int(np.argmax(outside))
    owner = int(np.searchsorted(np.cumsum([len(t) for t in trace.x[:n_ues]]), first, "right"))
    time = np.concatenate(trace.times[:n_ues])[first]
    raise MovementError(
        _KEY,
        f"'{path}': trace '{trace.ids[owner]}' is at ({x[first]:g}, {y[first]:g}) at time "
        f"{time:g}, outside the {width:g} x {height:g} m map",
        "Enlarge width/height (or movement.width/height) to cover the trace, or shift its "
        "coordinates into [0, width] x [0, height].",
    )


MODEL = TraceMobility
