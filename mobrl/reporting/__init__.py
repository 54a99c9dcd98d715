"""`mobrl report`: learning curves, evaluation charts and a shareable report across runs.

Reads what `mobrl train` and `mobrl evaluate` leave behind (run dirs, multirun dirs, Tune
trial dirs' progress.csv, evaluation summary.json; `runs.py`), groups trials by the settings
that differ between them, computes curves, intervals and IQMs (`stats.py`), draws figures
(`figures.py`) and writes `report.md`, a self-contained `report.html` and `groups.csv`
(`document.py`): what they show is chosen in `contents.py`, the sections on training runs
and on evaluations are written by `training_sections.py` and `evaluation_sections.py`, tables
and the HTML page by `markup.py`. `command.py` is the command, with its one-screen summary.

`mobrl compare` ranks algorithms over tasks and seeds: `compare_scores.py` scores each run
at a common budget, `compare_stats.py` holds the statistics, `compare_figures.py` the figures
and `compare.py` puts them together.
"""

from mobrl.reporting.command import compare_command, report_command
from mobrl.reporting.document import build_report
from mobrl.reporting.runs import discover, group_trials

__all__ = ["build_report", "compare_command", "discover", "group_trials", "report_command"]
