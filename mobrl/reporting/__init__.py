"""`mobrl report`: learning curves, evaluation charts and a shareable report across runs.

Reads what `mobrl train` and `mobrl evaluate` leave behind (run dirs, multirun dirs, Tune
trial dirs' progress.csv, evaluation summary.json; `runs.py`), groups trials by the settings
that differ between them, computes curves, intervals and IQMs (`stats.py`), draws figures
(`figures.py`) and writes `report.md`, a self-contained `report.html` and `groups.csv`
(`document.py`).
"""

from mobrl.reporting.document import build_report, report_command
from mobrl.reporting.runs import discover, group_trials

__all__ = ["build_report", "discover", "group_trials", "report_command"]
