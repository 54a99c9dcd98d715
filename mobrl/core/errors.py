"""User-facing errors: one line naming the bad value, the closest valid choices and the fix."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

#: exit code for bad user input (the same one Click/Typer use for usage errors)
USER_ERROR_EXIT = 2


#: exit code after Ctrl-C (128 + SIGINT, as shells report it)
INTERRUPTED_EXIT = 130


class UserError(Exception):
    """Bad user input; the CLI prints the message as one line and exits with code 2."""


class RunFailed(Exception):
    """A command that could not finish for a cause outside mobrl's input (an env that raised,
    a simulator that died): the CLI prints the message as one line and exits with code 1."""


#: exit code of a run or an evaluation that failed (`RunFailed`)
FAILED_EXIT = 1


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, told: what was stopped and what was kept (complete files stay, nothing
    half-written is left). The CLI prints it as one line and exits 130; from Python it is
    the `KeyboardInterrupt` a notebook expects, with that message."""


def closest_first(value: str, choices: Iterable[str]) -> list[str]:
    """Return `choices` sorted so that the ones most similar to `value` come first."""
    choices = sorted(set(choices))
    close = difflib.get_close_matches(value, choices, n=len(choices), cutoff=0.0)
    return close + [c for c in choices if c not in close]


def unknown_choice(what: str, value: str, choices: Iterable[str], fix: str) -> UserError:
    """Build the standard 'unknown X' error: bad value, valid choices (closest first), fix."""
    ordered = closest_first(value, choices)
    hint = ""
    if ordered and difflib.SequenceMatcher(None, value, ordered[0]).ratio() >= 0.6:
        hint = f" Did you mean '{ordered[0]}'?"
    return UserError(
        f"unknown {what} '{value}'.{hint} Choose one of: {', '.join(ordered)}. {fix}".strip()
    )


#: a line naming a raised exception: `module.SomeError: message` (or the bare name)
_RAISED = re.compile(
    r"^(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Fault|Exit|Interrupt)(?::\s*(.*))?$"
)


#: mobrl's own errors whose message is the one line: shown without their type's name
_TOLD = re.compile(r"^mobrl(?:\.\w+)*\.EnvFailedError:\s*")


def error_summary(text: str) -> str:
    """One line for a trial's error (Tune's error.txt or the error's text), whole: the last
    raised exception that carries a message (a bare `RuntimeError` re-raised from the real
    cause is skipped; mobrl's own one-line errors without their type's name), else the first
    line of the text. Ray's wrapper text around it stays in error.txt."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    told = [line for line in lines if _TOLD.match(line)]
    if told:  # mobrl's own line (the env's traceback may follow it)
        return _TOLD.sub("", told[-1])
    raised = [(line, match) for line in lines if (match := _RAISED.match(line))]
    if raised:
        with_message = [line for line, match in raised if match.group(1)]
        return (with_message or [line for line, _ in raised])[-1]
    told = [line for line in lines if not line.startswith("Failure #")]  # Tune's header
    return told[0] if told else "no message"


def first_line(err: BaseException | str) -> str:
    """The first non-empty line of an error's message (its type's name if it has none): safe
    inside error handlers, where an empty message must not raise again."""
    text = str(err).strip()
    if text:
        return text.splitlines()[0].strip()
    return type(err).__name__ if isinstance(err, BaseException) else "no message"
