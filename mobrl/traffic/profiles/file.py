"""The user's own profile: `traffic.profile: {file: PATH}`, a text or CSV file of 24 values
(hours 0 to 23) in [0, 1], one per line or as `hour,value` rows; blank lines and lines
starting with `#` are skipped, and a first row that is not numbers (a header) too. The
largest value is the busy hour's share of the layout's UEs (1: all of them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.traffic.base import Profile, check_hourly


class File(Profile):
    name = "file"
    source = "the user's file"

    def hourly(self, spec: Any, base: Any) -> np.ndarray:
        path = Path(str(spec["file"]))
        if not path.is_absolute() and base is not None:
            path = Path(base) / path
        fix = "Write 24 lines 'hour,value' (hour 0 to 23, value 0 to 1), or 24 values."
        try:
            text = path.read_text()
        except OSError as err:
            raise UserError(
                f"traffic.profile.file '{path}' cannot be read ({err.strerror or err}). "
                "Give the path of a profile file, relative to the layout file."
            ) from None
        rows = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        if rows and not _numbers(rows[0]):
            rows = rows[1:]  # a header
        values: list[str] = []
        for row in rows:
            cells = [c.strip() for c in row.replace(";", ",").split(",")]
            if len(cells) == 2 and cells[0].replace(".", "", 1).isdigit():
                values.append(cells[1])
            elif len(cells) == 1:
                values.append(cells[0])
            else:
                raise UserError(
                    f"traffic.profile.file '{path}': row '{row}' is not understood. {fix}"
                )
        return check_hourly(values, f"traffic.profile.file '{path}'", fix)


def _numbers(row: str) -> bool:
    try:
        [float(c) for c in row.replace(";", ",").split(",")]
    except ValueError:
        return False
    return True


PROFILE = File()
