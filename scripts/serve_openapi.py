"""Write docs/serve-openapi.json, the OpenAPI schema of `mobrl serve` (FastAPI generates it
from the service's routes and models; it is the same for every policy).

    python scripts/serve_openapi.py            # writes docs/serve-openapi.json
    python scripts/serve_openapi.py --check    # exit 1 when the file is not what it writes

tests/unit/test_serve.py fails when docs/serve-openapi.json differs from `render()`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "serve-openapi.json"


def render() -> str:
    from mobrl.serve.app import openapi_schema

    return json.dumps(openapi_schema(), indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Compare instead of writing.")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = DOC.is_file() and DOC.read_text() == text
        if not same:
            print(f"{DOC} is out of date: run python scripts/serve_openapi.py", file=sys.stderr)
        return 0 if same else 1
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
