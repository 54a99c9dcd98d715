"""Allow `python -m mobrl`."""

from mobrl.cli import entry

entry()
