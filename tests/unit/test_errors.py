"""Bad input: exit code 2, one line on stderr naming the bad value and the fix, no traceback."""

from __future__ import annotations

from mobrl.errors import closest_first, unknown_choice


def test_closest_first_orders_by_similarity() -> None:
    assert closest_first("mediun", ["small", "medium", "large"])[0] == "medium"


def test_unknown_choice_message() -> None:
    err = unknown_choice("scenario", "lage", ["small", "large"], "Use scenario=<option>.")
    assert str(err) == (
        "unknown scenario 'lage'. Did you mean 'large'? Choose one of: large, small. "
        "Use scenario=<option>."
    )


def test_first_line_never_fails_on_an_empty_message() -> None:
    from mobrl.errors import first_line

    assert first_line(ValueError("\n  bad value \nmore")) == "bad value"
    assert first_line(KeyError()) == "KeyError"
    assert first_line(RuntimeError("")) == "RuntimeError"
    assert first_line("") == "no message"
