"""The Python API trains for real (RLlib, Tune, checkpoints) and hands back a run a notebook
can read and evaluate; run in a fresh interpreter, as a script or notebook would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ray_process_count, run_mobrl

pytestmark = pytest.mark.slow

SCRIPT = """
import json, signal, sys
import torch
import mobrl

threads, sigint = torch.get_num_threads(), signal.getsignal(signal.SIGINT)
run = mobrl.train("scenario=small", "run=smoke", run_dir=sys.argv[1])
kept = torch.get_num_threads() == threads and signal.getsignal(signal.SIGINT) is sigint
progress = run.progress
ev = run.evaluate(episodes=2, baselines=["greedy"], output=sys.argv[2], workers=1)
print(json.dumps({
    "iterations": progress["training_iteration"].tolist(),
    "trials": sorted(set(progress["trial"])),
    "checkpoints": [str(c) for c in run.checkpoints],
    "summary_best": run.summary["best_checkpoint"],
    "policies": list(ev.table.index),
    "episodes": len(ev.episodes),
    "command": run.manifest["command"],
    "executor": run.manifest["executor"],
    "kept": kept,
}))
"""


def test_train_from_python_returns_a_run_to_read_and_evaluate(tmp_path: Path) -> None:
    run_dir, out = tmp_path / "run", tmp_path / "eval"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(run_dir), str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["iterations"] == [1, 2] and len(got["trials"]) == 1
    assert got["checkpoints"] and got["summary_best"] in got["checkpoints"]
    assert got["policies"] == ["trained", "greedy"] and got["episodes"] == 4
    assert got["command"] == "mobrl train scenario=small run=smoke"  # as the CLI records it
    # one trial in the notebook's own process: its torch threads and Ctrl-C handler come back
    assert got["executor"] == "driver" and got["kept"]
    assert (run_dir / "manifest.json").is_file() and (out / "summary.json").is_file()
    assert ray_process_count() == 0


def test_another_library_trains_on_the_pettingzoo_env() -> None:
    """Stable-Baselines3's PPO through SuperSuit on `mobrl.parallel_env`, as the docs show."""
    ss = pytest.importorskip("supersuit")
    sb3 = pytest.importorskip("stable_baselines3")
    import mobrl

    env = mobrl.parallel_env("small", obs="topk", reward="marginal")
    vec = ss.concat_vec_envs_v1(
        ss.pettingzoo_env_to_vec_env_v1(env), 1, num_cpus=0, base_class="stable_baselines3"
    )
    model = sb3.PPO("MlpPolicy", vec, n_steps=100, batch_size=250).learn(total_timesteps=1000)
    assert model.num_timesteps >= 1000 and vec.num_envs == len(env.possible_agents) == 5


def _readme_example() -> str:
    """The README's Python example, exactly as written, but with a smoke budget."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = next(
        b for b in readme.split("```python\n")[1:] if "mobrl.train(" in b.split("```")[0]
    ).split("```")[0]
    assert '"run=quick"' in block and "episodes=100" in block, block
    return block.replace('"run=quick"', '"run=smoke"').replace("episodes=100", "episodes=8")


#: each form appends a line to runs.txt every time its code runs: a worker process that
#: re-ran the user's code would add a second line
_COUNT = 'open("runs.txt", "a").write("ran\\n")\n'


def _python(cwd: Path, args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=600
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert (cwd / "runs.txt").read_text() == "ran\n", "the user's code ran more than once"
    return done


def _summary(folder: Path) -> dict[str, float]:
    """Every policy's mean, CI and count of every measure, as {"policy measure stat": value}."""
    (summary,) = folder.glob("**/summary.json")
    policies = json.loads(summary.read_text())["policies"]
    return {
        f"{policy} {measure} {stat}": value
        for policy, measures in policies.items()
        for measure, stats in measures.items()
        for stat, value in stats.items()
    }


def test_the_readme_example_runs_in_every_form_python_runs(tmp_path: Path) -> None:
    """A plain script with no main guard, `python -`, `python -c` and an IPython shell:
    worker processes never re-run the user's code, and the numbers are the CLI's."""
    script = tmp_path / "script"
    script.mkdir()
    (script / "s.py").write_text(_COUNT + _readme_example())
    _python(script, [sys.executable, "s.py"])
    (run_dir,) = (script / "outputs").glob("*/*")  # one training run, not one per worker
    assert (script / "small.mp4").stat().st_size > 0
    (evaluated,) = (script / "evaluations").glob("*/*")
    cli = run_mobrl(
        "evaluate", "--checkpoint", str(run_dir), "--episodes", "8",
        "--baselines", "greedy,oracle", "--output", str(tmp_path / "cli"),
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    expected = _summary(tmp_path / "cli")
    assert _summary(evaluated) == pytest.approx(expected, rel=1e-9, abs=1e-12)

    code = _COUNT + (
        "import mobrl\n"
        f"ev = mobrl.evaluate({str(run_dir)!r}, episodes=8, baselines=['greedy', 'oracle'],"
        " workers=2, output='ev')\n"
    )
    forms = {
        "stdin": ([sys.executable, "-"], code),
        "dash_c": ([sys.executable, "-c", code], None),
        "ipython": ([sys.executable, "-m", "IPython", "--quick", "--no-banner", "-c", code], None),
    }
    for form, (args, stdin) in forms.items():
        cwd = tmp_path / form
        cwd.mkdir()
        _python(cwd, args, stdin)
        assert _summary(cwd / "ev") == pytest.approx(expected, rel=1e-9, abs=1e-12), form
    assert ray_process_count() == 0
