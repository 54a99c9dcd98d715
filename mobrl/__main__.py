"""Allow `python -m mobrl`."""

from mobrl.cli import main

main()
