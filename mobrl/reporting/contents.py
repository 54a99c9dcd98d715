"""What the report shows: the x axes, the measures the runs logged and which of them get a
section, each group's curves, and the score and baselines of evaluation during training.
Nothing here writes; the sections (`training_sections.py`, `evaluation_sections.py`) do."""

from __future__ import annotations

import re
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.reporting.runs import Trial
from mobrl.reporting.stats import group_curve

#: metrics drawn as small multiples when the runs logged them (mobile-env scenarios)
SERVICE_METRICS = (
    keys.UTILITY_MEAN,
    keys.RATE_MEAN,
    keys.JAIN_UTILITY,
    keys.NET_CONNECTED,
)
#: what evaluation during training is shown in, service first, then its return
EVAL_TRAINING = tuple(f"{keys.EVALUATION}/{m}" for m in (
    keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5
)) + (keys.EVAL_RETURN_MEAN,)  # fmt: skip
#: the columns of an evaluation's tables: service first, Jain beside it, then the return
EVAL_COLUMNS = (keys.UTILITY_MEAN, keys.NET_CONNECTED, keys.UTILITY_P5, keys.JAIN_UTILITY, "return")


def x_axes(x: str | None) -> list[str]:
    """The x axes curves are drawn against: `x` alone, else env steps and wall time."""
    if x is not None and x not in keys.X_AXES:
        from mobrl.core.errors import unknown_choice

        raise unknown_choice(
            "--x", x, list(keys.X_AXES), "Use --x env_steps, time_s or iterations."
        )
    return [x] if x else ["env_steps", "time_s"]


def logged_columns(trials: list[Trial]) -> set[str]:
    """Every column of the trials' progress.csv."""
    return {c for t in trials if not t.progress.empty for c in t.progress.columns}


def wanted_metrics(metrics: list[str] | None, columns: set[str]) -> list[str]:
    """The measures asked for (`--metric`), else those that tell most: service first where the
    runs measured it (mean UE utility, evaluation's then training's), then the returns.
    Refused when the runs logged none of them."""
    service = [
        f"{keys.EVALUATION}/{keys.UTILITY_MEAN}",
        keys.result_key(keys.UTILITY_MEAN),
    ]
    wanted = metrics or [c for c in service if c in columns] + [keys.RETURN_MEAN] + (
        [keys.EVAL_RETURN_MEAN] if keys.EVAL_RETURN_MEAN in columns else []
    )
    missing = [m for m in wanted if m not in columns]
    if missing and len(missing) == len(wanted):
        raise UserError(
            f"no run logged '{missing[0]}'. Use --metric with a column of progress.csv, "
            f"e.g. --metric {keys.RETURN_MEAN}."
        )
    return wanted


def metric_curves(groups: dict[str, list[Trial]], metric: str, axis: str) -> list[Any]:
    """Each group's curve of `metric` against `axis` (groups that logged none of it left out)."""
    curves = (group_curve(label, ts, keys.X_AXES[axis], metric) for label, ts in groups.items())
    return [c for c in curves if c is not None]


def service_columns(columns: set[str]) -> list[str]:
    """The UE service measures of the training episodes that the runs logged."""
    return [keys.result_key(m) for m in SERVICE_METRICS if keys.result_key(m) in columns]


#: the env's own values of its infos (`scenario.metrics`), over all its agents
INFO_PREFIX = "info/"


def info_columns(columns: set[str]) -> list[str]:
    """The env's own measures of the training episodes (`scenario.metrics`) the runs logged."""
    prefix = keys.result_key(INFO_PREFIX)
    return sorted(c for c in columns if c.startswith(prefix))


def eval_training_columns(columns: set[str]) -> list[str]:
    """The measures of evaluation during training that the runs logged, service first."""
    return [c for c in EVAL_TRAINING if c in columns]


def gap_baselines(columns: set[str]) -> list[str]:
    """The baselines evaluation during training measured a paired gap to, by name."""
    return sorted(
        {m.group(1) for c in columns if (m := re.fullmatch(r"evaluation/gap/(.+)/mean", c))}
    )


def eval_score(groups: dict[str, list[Trial]]) -> str | None:
    """The measure evaluation during training scored by (`run.eval.metric`), when every trial
    used the same one."""
    metrics = {t.settings.get("run.eval.metric") for ts in groups.values() for t in ts}
    return keys.EVAL_METRICS.get(metrics.pop()) if len(metrics) == 1 else None
