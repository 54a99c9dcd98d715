"""Bad input: exit code 2, one line on stderr naming the bad value and the fix, no traceback."""

from __future__ import annotations

import pytest

from mobrl.core.errors import closest_first, unknown_choice


def test_closest_first_orders_by_similarity() -> None:
    assert closest_first("mediun", ["small", "medium", "large"])[0] == "medium"


def test_unknown_choice_message() -> None:
    err = unknown_choice("scenario", "lage", ["small", "large"], "Use scenario=<option>.")
    assert str(err) == (
        "unknown scenario 'lage'. Did you mean 'large'? Choose one of: large, small. "
        "Use scenario=<option>."
    )


def test_first_line_never_fails_on_an_empty_message() -> None:
    from mobrl.core.errors import first_line

    assert first_line(ValueError("\n  bad value \nmore")) == "bad value"
    assert first_line(KeyError()) == "KeyError"
    assert first_line(RuntimeError("")) == "RuntimeError"
    assert first_line("") == "no message"


def test_a_run_that_sampled_nothing_is_an_error_not_exit_0() -> None:
    """Trials that ran iterations without sampling one env step (a layout whose step outlasts
    the sample wait) end in one line, not in a run that 'succeeded' on nothing."""
    from types import SimpleNamespace

    from mobrl.core.errors import UserError
    from mobrl.training.checks import validate_command_line
    from mobrl.training.experiment import check_sampled

    cfg = validate_command_line(["scenario=small"])
    empty = SimpleNamespace(
        metrics={
            "training_iteration": 3,
            "time_total_s": 210.0,
            "num_env_steps_sampled_lifetime": 0,
        }
    )
    with pytest.raises(UserError, match="sampled no env step in 3 iterations .210 s."):
        check_sampled(cfg, [empty])
    some = SimpleNamespace(metrics={**empty.metrics, "num_env_steps_sampled_lifetime": 40})
    check_sampled(cfg, [empty, some])  # one trial that sampled is a run that did something
