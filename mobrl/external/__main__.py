"""`python -m mobrl.external MODULE:CALLABLE [--address HOST:PORT] [--kwargs JSON]
[--max-clients N] [--idle-timeout S]`: serve the envs the callable makes (one per
connection) until SIGTERM, Ctrl-C or the end of N connections. `mobrl.external:mobile` with
`--kwargs '{"scenario": "small", "mode": "ma"}'` serves one of mobrl's own scenarios. Bad
input is one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mobrl.core.errors import USER_ERROR_EXIT, UserError, first_line


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, not argparse's usage block
        print(f"mobrl.external: {message}. See python -m mobrl.external --help.", file=sys.stderr)
        sys.exit(USER_ERROR_EXIT)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m mobrl.external",
        description="Serve envs made by MODULE:CALLABLE to mobrl over the mobrl.external "
        "protocol (docs/external.md).",
    )
    parser.add_argument("entry", help="MODULE:CALLABLE making an env (mobrl.external:mobile: "
                        "one of mobrl's scenarios)")  # fmt: skip
    parser.add_argument(
        "--address",
        default="127.0.0.1:0",
        help="HOST:PORT to listen on (port 0: any free port; default %(default)s)",
    )
    parser.add_argument(
        "--kwargs",
        default="{}",
        help="keyword arguments of CALLABLE as a JSON "
        'object, e.g. \'{"scenario": "small", "mode": "ma"}\'',
    )
    parser.add_argument(
        "--max-clients", type=int, default=None, help="stop once this many connections have ended"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=None,
        help="drop a connection silent for this many seconds",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from mobrl.core.imports import import_object
        from mobrl.external.server import serve_env

        try:
            kwargs = json.loads(args.kwargs)
        except ValueError as err:
            raise UserError(
                f"--kwargs {args.kwargs!r} is not JSON ({err}). Write a JSON "
                'object, e.g. --kwargs \'{"scenario": "small"}\'.'
            ) from err
        if not isinstance(kwargs, dict):
            raise UserError(f"--kwargs {args.kwargs!r} is not a JSON object of keyword arguments.")
        if args.max_clients is not None and args.max_clients < 1:
            raise UserError(f"--max-clients {args.max_clients} is not a positive number.")
        make = import_object(args.entry, "entry")
        if not callable(make):
            raise UserError(f"entry={args.entry} is a {type(make).__name__}, not a callable "
                            "making an env.")  # fmt: skip

        def factory() -> Any:
            return make(**kwargs)

        try:
            first = factory()
        except TypeError as err:
            raise UserError(
                f"entry={args.entry} does not take --kwargs {args.kwargs}: {first_line(err)}."
            ) from err
        except UserError:
            raise
        except Exception as err:
            raise UserError(
                f"entry={args.entry} failed to make an env: "
                f"{type(err).__name__}: {first_line(err)}."
            ) from err
        made = [first]

        def reuse_first() -> Any:  # the env made to check the entry serves the first client
            return made.pop() if made else factory()

        serve_env(reuse_first, args.address, max_clients=args.max_clients,
                  idle_timeout=args.idle_timeout,
                  name=None)  # fmt: skip
    except UserError as err:
        print(f"mobrl.external: {first_line(err)}", file=sys.stderr)
        return USER_ERROR_EXIT
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
