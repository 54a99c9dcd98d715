"""Fixtures the CLI tier shares with the unit tier."""

from tests.unit.test_report import multirun  # noqa: F401  (run dirs made without Ray)
