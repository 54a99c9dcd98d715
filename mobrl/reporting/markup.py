"""How the report writes: Markdown tables, column headers and folder names as report.md shows
them, and report.md turned into the self-contained report.html."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys

#: report.html's own style: readable type, tables that scroll rather than widen the page,
#: figures never wider than the text
STYLE = """
:root{color-scheme:light}
body{margin:0;padding:0 1rem;background:#fff;color:#1f2328;
 font:16px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:58rem;margin:2rem auto 4rem}
h1{font-size:1.9rem;margin:0 0 .4em;padding-bottom:.3em;border-bottom:1px solid #d0d7de}
h2{font-size:1.35rem;margin:2.4em 0 .6em;padding-bottom:.25em;border-bottom:1px solid #eaeef2}
h3{font-size:1.1rem;margin:1.6em 0 .5em}
h1,h2,h3,p,li{overflow-wrap:anywhere}
p,ul{margin:.6em 0}
img{display:block;max-width:100%;height:auto;margin:1.2rem auto}
table{display:block;max-width:100%;overflow-x:auto;border-collapse:collapse;margin:1rem 0;
 font-size:.9rem;font-variant-numeric:tabular-nums}
th,td{padding:.4rem .7rem;border-bottom:1px solid #d8dee4;text-align:left}
td{white-space:nowrap}
td:first-child{white-space:normal;min-width:8rem}
thead th{background:#f6f8fa;border-bottom:2px solid #d0d7de;vertical-align:bottom;
 font-weight:600;min-width:4.5rem}
tbody tr:nth-child(even){background:#fafbfc}
code{font-size:.88em;background:#f6f8fa;padding:.1em .3em;border-radius:4px}
.meta{color:#59636e}
"""


def html_page(md: str, out: Path) -> str:
    """report.md as a self-contained HTML page (Markdown's own converter, images inlined)."""
    import markdown

    def inline(match: Any) -> str:
        data = base64.b64encode((out / match.group(1)).read_bytes()).decode()
        return f'src="data:image/png;base64,{data}"'

    body = markdown.markdown(md, extensions=["tables"])
    body = re.sub(r'src="([^"/]+\.png)"', inline, body)
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>\n"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>\n"
        f"<title>mobrl report</title><style>{STYLE}</style></head>\n"
        f"<body><main>\n{body}\n</main></body></html>\n"
    )


#: a cell that holds a number (with its interval), so its column is aligned right
_NUMBER = re.compile(r"[-+−]?[\d.,]+( ± [\d.,]+)?( \[.*\])?|-|nan")


def md_table(rows: list[dict[str, Any]]) -> list[str]:
    """A Markdown table; columns of numbers aligned right."""
    cols = list(rows[0])
    numeric = [all(_NUMBER.fullmatch(str(r[c])) for r in rows) for c in cols]
    rule = "|" + "|".join("---:" if n else ":---" for n in numeric) + "|"
    lines = ["| " + " | ".join(cols) + " |", rule]
    return lines + ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]


def capital(text: str) -> str:
    """`text` with its first letter in upper case (headings and sentences start with one)."""
    return text[:1].upper() + text[1:]


def column_header(key: str) -> str:
    """A table column's header: the measure in words, with a unit of measurement (Mbit/s,
    min) but not a range (a scaled utility's −1…1 is said once, under the table)."""
    unit = keys.unit(key)
    return keys.axis_label(key) if unit and "…" not in unit else keys.words(key)


class FolderNames:
    """Folders named relative to the report's inputs (the input itself by its name), so a
    report shows no absolute paths of the machine that wrote it."""

    def __init__(self, paths: list[Path]) -> None:
        #: the inputs as given, and deepest first (the one that names a folder)
        self.given = list(dict.fromkeys(Path(p).expanduser().absolute() for p in paths))
        self.inputs = sorted(self.given, key=lambda p: len(p.parts), reverse=True)

    def __call__(self, folder: Path) -> str:
        folder = Path(folder)
        for root in self.inputs:  # the deepest input that holds it
            if folder == root:
                return root.name or str(root)
            if root in folder.parents:
                return folder.relative_to(root).as_posix()
        return folder.name

    def text(self, note: str) -> str:
        """`note` with the inputs' absolute paths made relative."""
        for root in self.inputs:
            note = note.replace(f"{root}/", "").replace(str(root), root.name)
        return note


@dataclass
class Draft:
    """The report while it is written: its folder, the lines of report.md so far and what
    `build_report` returns (groups, curves, tables, the figures' files)."""

    out: Path
    names: FolderNames
    md: list[str] = field(default_factory=list)
    result: dict[str, Any] = field(
        default_factory=lambda: {"groups": {}, "curves": {}, "tables": {}, "files": []}
    )

    def figure(self, png: Path) -> Path:
        """Count `png` among the report's files; return it, to be shown in report.md."""
        self.result["files"].append(png)
        return png
