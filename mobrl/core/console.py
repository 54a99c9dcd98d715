"""The one way mobrl prints: a rich console that is readable on terminals and in log files."""

from __future__ import annotations

import sys

from rich.console import Console

#: columns of tables written to logs (no terminal to ask): wide enough for a trial table
LOG_WIDTH = 160


def make_console() -> Console:
    """A console for stdout: the terminal's width on a terminal, LOG_WIDTH columns in logs."""
    width = None if sys.stdout.isatty() else LOG_WIDTH
    return Console(highlight=False, soft_wrap=True, width=width)
