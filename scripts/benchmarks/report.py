"""A benchmark's results: its tables and headline lines, shown on the terminal and written as
JSON by `scripts/bench.py`.

A benchmark records with `report.table(...)` and `report.line(...)`; nothing is printed until
the runner calls `show()`, and `write(path, meta)` writes the JSON record.
"""

from __future__ import annotations

import json
import math
import os
import platform
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    """A cell as JSON holds it: numbers stay numbers (NaN and infinities become null)."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return str(value)


def _shown(value: Any, fmt: str | None) -> str:
    """A cell as printed: `fmt` is a format spec (".2f") or a template ("{:.1f}x")."""
    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if fmt is not None:
        try:
            return fmt.format(value) if "{" in fmt else format(value, fmt)
        except (TypeError, ValueError):  # a cell the column's format does not fit
            return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        size = abs(value)
        if size >= 100:
            return f"{value:,.0f}"
        if size >= 1 or size == 0:
            return f"{value:.2f}"
        return f"{value:.3g}"
    return str(value)


class Report:
    """The tables and lines of one benchmark run."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tables: list[dict[str, Any]] = []
        self.lines: list[str] = []

    def table(
        self,
        title: str,
        columns: list[str],
        rows: Sequence[Sequence[Any] | Mapping[str, Any]],
        note: str | None = None,
        formats: Mapping[str, str] | None = None,
    ) -> None:
        """Record a table. A row is a list of cells in column order or a dict by column name
        (a missing column is empty). Cells are plain numbers or strings; `formats` optionally
        gives a column's format for printing (a spec such as "+.4f" or a template such as
        "{:.1f}x"); the JSON keeps the numbers."""
        cells = []
        for row in rows:
            if isinstance(row, Mapping):
                row = [row.get(column) for column in columns]
            if len(row) != len(columns):
                raise ValueError(f"{title}: a row of {len(row)} cells for {len(columns)} columns")
            cells.append([_plain(cell) for cell in row])
        self.tables.append(
            {
                "title": title,
                "columns": list(columns),
                "rows": cells,
                "note": note,
                "formats": dict(formats or {}),
            }
        )

    def line(self, text: str) -> None:
        """Record a headline sentence (e.g. "mobrl render 2.1 s, stock 9.8 s, ratio 4.7x")."""
        self.lines.append(text)

    def show(self) -> None:
        """Print every table (with rich) and then every line."""
        if not self.tables and not self.lines:
            return
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table
        from rich.text import Text

        console = Console()
        if not console.is_terminal and "COLUMNS" not in os.environ:
            console = Console(width=160)  # a log or a pipe: no cell cut to fit 80 columns
        for recorded in self.tables:
            formats = recorded["formats"]
            note = recorded["note"]
            table = Table(title=escape(recorded["title"]), caption=note and escape(note))
            numeric = [
                any(isinstance(row[i], (int, float)) and not isinstance(row[i], bool)
                    for row in recorded["rows"])
                for i in range(len(recorded["columns"]))
            ]  # fmt: skip
            for column, right in zip(recorded["columns"], numeric):
                table.add_column(
                    Text(column), justify="right" if right else "left", overflow="fold"
                )
            for row in recorded["rows"]:
                cells = zip(recorded["columns"], row)
                table.add_row(*(Text(_shown(cell, formats.get(col))) for col, cell in cells))
            console.print(table)
        for text in self.lines:
            print(text, flush=True)

    def as_dict(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """The JSON record: the benchmark's name, `meta` (argv, started, seconds), the
        machine, the tables and the lines."""
        return {
            "benchmark": self.name,
            **meta,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "tables": [
                {key: t[key] for key in ("title", "columns", "rows", "note")} for t in self.tables
            ],
            "lines": list(self.lines),
        }

    def write(self, path: str | Path, meta: Mapping[str, Any]) -> Path:
        """Write the JSON record to `path` (its folders made as needed)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(meta), indent=1, allow_nan=False) + "\n")
        return path
