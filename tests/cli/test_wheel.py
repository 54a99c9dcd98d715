"""The built wheel carries the top-level conf/ and scenarios/ and works outside the repository."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with mobrl installed from a wheel built from a copy of the source tree
    (the dependencies come from the running interpreter's site-packages)."""
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("mobrl", "conf", "scenarios"):
        shutil.copytree(REPO / name, source / name, ignore=ignore)
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = dist.glob("mobrl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "mobrl/conf/config.yaml" in names
    assert "mobrl/conf/preset/ppo/small/ma.yaml" in names
    assert "mobrl/layouts/highway.yaml" in names
    assert "mobrl/evaluation/zoo/entries/" in "".join(names)
    for init in (REPO / "mobrl").rglob("__init__.py"):  # every subpackage (pyproject lists them)
        assert f"{init.relative_to(REPO).as_posix()}" in names, init
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # the dependencies: this interpreter's site-packages, whether it is a venv (the README's
    # .venv, whose packages `--system-site-packages` would not see) or a system Python; a
    # plain path line, so the .pth files there (an editable mobrl's finder) are not run
    site_dir = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    Path(site_dir, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    return venv


def _mobrl(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(venv / "bin" / "mobrl"), *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_wheel_installs_a_working_mobrl(wheel_env: Path, tmp_path: Path) -> None:
    site = next((wheel_env / "lib").glob("python*/site-packages"))
    where = subprocess.run(
        [str(wheel_env / "bin" / "python"), "-c", "import mobrl; print(mobrl.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    ).stdout.strip()  # fmt: skip
    assert Path(where).is_relative_to(site), where  # the wheel's mobrl, not the repository's

    job = _mobrl(wheel_env, "train", "--cfg", "job", "scenario=highway", cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    assert "id: highway" in job.stdout
    assert f"{site}/mobrl/layouts/highway.yaml" in job.stdout

    listed = _mobrl(wheel_env, "scenarios", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    for name in ("small", "medium", "large", "highway", "dense_urban", "cartpole", "arena"):
        assert name in listed.stdout


def test_a_users_scenarios_folder_is_found_but_not_the_source_tree(
    wheel_env: Path, tmp_path: Path
) -> None:
    """./scenarios/*.yaml of the working directory are the user's layouts; the repository's
    own scenarios/ (the built-ins, with __init__.py) is not mistaken for them."""
    mine = tmp_path / "scenarios"
    mine.mkdir()
    shutil.copy(REPO / "scenarios" / "small.yaml", mine / "my_cell.yaml")
    listed = _mobrl(wheel_env, "scenarios", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if " my_cell " in line]
    assert "built-in" not in row and str(tmp_path)[:20] in row

    in_repo = _mobrl(wheel_env, "scenarios", "list", cwd=REPO)
    assert in_repo.returncode == 0, in_repo.stderr
    assert "my_cell" not in in_repo.stdout
    rows = [line for line in in_repo.stdout.splitlines() if " small " in line]
    assert rows and "built-in" in rows[0]
