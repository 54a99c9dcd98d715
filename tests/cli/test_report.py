"""`mobrl report` as a process: bad input is one line; Ray and torch are never imported;
report.html in a real headless browser fits the page and names measures in words."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mobrl.core.errors import UserError
from mobrl.reporting import build_report, discover, report_command
from tests.unit.test_report import RAW_KEY, figure_texts, make_study


def test_bad_input_is_a_one_line_error(multirun, tmp_path: Path, mobrl_cli) -> None:
    root, _ = multirun
    with pytest.raises(UserError, match="no mobrl runs or evaluations"):
        (tmp_path / "empty").mkdir()
        discover([tmp_path / "empty"])
    with pytest.raises(UserError, match="no run logged 'nope'"):
        build_report([root], tmp_path / "r1", metrics=["nope"])
    with pytest.raises(UserError, match="Did you mean 'env_steps'"):
        build_report([root], tmp_path / "r2", x="env_step")
    with pytest.raises(UserError, match="--group-by"):
        build_report([root], tmp_path / "r3", group_by=["algo.nme"])
    kept = tmp_path / "kept"
    report_command([root], kept, None, None, None)
    before = (kept / "report.md").read_text()
    with pytest.raises(UserError, match="already holds a report.*--overwrite"):
        report_command([root], kept, None, "time_s", None)
    assert (kept / "report.md").read_text() == before  # nothing written is lost
    report_command([root], kept, None, "time_s", None, overwrite=True)
    done = mobrl_cli("report", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "does not exist" in done.stderr


def test_report_imports_neither_ray_nor_torch(multirun, tmp_path: Path) -> None:
    import subprocess
    import sys

    root, _ = multirun
    probe = (
        "import sys; from pathlib import Path; from mobrl.reporting import build_report; "
        f"build_report([Path({str(root)!r})], Path({str(tmp_path / 'r')!r})); "
        "heavy = [m for m in ('ray', 'torch') if m in sys.modules]; assert not heavy, heavy"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


#: added to the test's copy of report.html: once the page has loaded, what a reader would see
#: (widths, images, headings) is written into the DOM that --dump-dom prints
PROBE = """<script>
addEventListener("load", () => {
  const root = document.documentElement;
  const facts = {
    scrollWidth: root.scrollWidth, clientWidth: root.clientWidth, innerWidth: innerWidth,
    images: [...document.images].map(i => ({alt: i.alt, complete: i.complete,
      naturalWidth: i.naturalWidth, shownWidth: i.getBoundingClientRect().width})),
    headings: [...document.querySelectorAll("h1, h2, h3, h4")].map(h => h.textContent),
    tables: [...document.querySelectorAll("table")].map(t => t.getBoundingClientRect().width),
  };
  const out = document.createElement("pre");
  out.id = "probe"; out.hidden = true; out.textContent = JSON.stringify(facts);
  document.body.append(out);
});
</script>"""


def _browse(page: Path, width: int, profile: Path) -> dict:
    """`page` in headless Chromium at `width` px, offline: the probe's facts."""
    done = subprocess.run(
        [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
            f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    start = done.stdout.index('<pre id="probe" hidden="">') + len('<pre id="probe" hidden="">')
    import html

    return json.loads(html.unescape(done.stdout[start : done.stdout.index("</pre>", start)]))


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="needs chromium (apt-get install chromium)"
)
def test_report_fits_the_page_in_a_headless_browser(tmp_path: Path) -> None:
    """At 1280 px and on a narrow screen (500 px): no horizontal scrolling, every figure loaded
    and no wider than the page; headings, figure alt texts, titles and axes in words."""
    out = tmp_path / "report"
    result = build_report([make_study(tmp_path)], out)
    page = tmp_path / "probe.html"
    page.write_text((out / "report.html").read_text().replace("</body>", PROBE + "</body>"))
    for width in (1280, 500):  # 500: the narrowest window Chromium opens
        facts = _browse(page, width, tmp_path / f"profile-{width}")
        assert facts["innerWidth"] == width
        assert facts["scrollWidth"] <= facts["clientWidth"], f"scrolls sideways at {width} px"
        assert len(facts["images"]) == len(result["files"])
        for image in facts["images"]:
            assert image["complete"] and image["naturalWidth"] > 0, image["alt"]
            assert 0 < image["shownWidth"] <= facts["clientWidth"], image["alt"]
        assert all(w <= facts["clientWidth"] for w in facts["tables"])
    at_1280 = _browse(page, 1280, tmp_path / "profile-1280")
    for image in at_1280["images"]:  # shown at their own size, not blown up
        assert image["shownWidth"] <= image["naturalWidth"], image["alt"]
    texts = at_1280["headings"] + [i["alt"] for i in at_1280["images"]]
    assert "Evaluation: evaluations/10-00-00_medium" in at_1280["headings"]
    for text in texts:
        assert not RAW_KEY.search(text), text
    for png in result["files"]:
        assert not [t for t in figure_texts(png) if RAW_KEY.search(t)], png.name
