"""Time to a good policy: `mobrl train` vs RLlib's defaults vs Stable-Baselines3, in one run.

For each task, every contender trains from a fresh process until its training return (the mean
over its last 20 episodes) reaches each target, or until `--limit` seconds pass. The clock
starts when the process is spawned, so imports, Ray start-up and building the algorithm count,
as they do for a user. Contenders:

- `mobrl`: `mobrl train` with the preset of the task (nothing else set but the stop rule);
- `mobrl-zoo3` (CartPole): `mobrl train` with RL Zoo3's CartPole settings, as far as RLlib has
  them (8 envs, batches of 256 and 20 epochs, gamma 0.98, lambda 0.8, lr 0.001 falling linearly
  to 0 over 100k steps, no KL term, value loss weight 0.5, gradients clipped at 0.5; RLlib has
  no schedule for the clip range, which stays 0.2): next to `sb3`, the cost of RLlib's sampling
  and learning at the same settings, apart from the preset's;
- `rllib`: a plain RLlib script with RLlib's default PPO settings and one env runner, on stock
  mobile-env through mobile-env's own RLlib wrapper (or on the Gymnasium task);
- `sb3`: Stable-Baselines3 PPO with RL Zoo3's tuned hyperparameters where it has them
  (CartPole-v1) and SB3's defaults otherwise, on stock mobile-env; `sb3-mobrl` the same on
  mobrl's engine (`mobrl/mobile-small-central-v0`). Needs `pip install -e ".[bench]"`.

Each task's first target is what its preset states it reaches (`preset.expect` of the preset
the task's overrides apply: a training return, within a budget of env steps and seconds, which
the table and the JSON put beside the measurement); further targets are levels to compare at.
Targets that name a baseline (`greedy`) are that baseline's mean return over seeds 0-29,
computed at the start with `mobrl baselines`' rollouts. Usage:

    python scripts/bench.py train [--tasks cartpole,small-ma,medium-ma,small-central]
                                  [--contenders mobrl,mobrl-zoo3,rllib,sb3,sb3-mobrl]
                                  [--limit 600]
                                  [--out rows.json] [--quick]

`--quick` runs CartPole only, to a return of 150 within 60 s per contender: a check that the
bench still works (CI runs it), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.report import Report

SCRIPTS = Path(__file__).resolve().parents[1]

#: RLlib's and mobrl's training return averages this many of the last episodes; SB3's check too
WINDOW = 20


@dataclass
class Task:
    """A scenario, the levels its training return is timed to beyond its preset's, and who
    can run it."""

    mobrl: list[str]  # `mobrl train` overrides
    also: list[float | str]  # further targets: numbers, or a baseline's name ("greedy")
    contenders: tuple[str, ...]
    gym_id: str | None = None  # stock env id for RLlib's and SB3's scripts
    layout: str | None = None  # mobile-env layout (mobrl's baselines compute "greedy")
    mode: str = "ma"
    extra: dict = field(default_factory=dict)


TASKS = {
    "cartpole": Task(
        ["scenario=cartpole"],
        [],
        ("mobrl", "mobrl-zoo3", "rllib", "sb3"),
        gym_id="CartPole-v1",
    ),
    "small-ma": Task(
        ["scenario=small", "env=ma"],
        [-84.0],  # where RLlib's defaults get within the limit (docs/performance.md)
        ("mobrl", "rllib"),
        gym_id="mobile-small-ma-v0",
        layout="small",
    ),
    "medium-ma": Task(
        ["scenario=medium", "env=ma"],
        ["greedy"],  # the level its search stops at (found_by), beyond the preset's
        ("mobrl", "rllib"),
        gym_id="mobile-medium-ma-v0",
        layout="medium",
    ),
    "small-central": Task(
        ["scenario=small", "env=central"],
        [],  # the preset's level is greedy's mean return
        ("mobrl", "rllib", "sb3", "sb3-mobrl"),
        gym_id="mobile-small-central-v0",
        layout="small",
        mode="central",
    ),
}

#: RL Zoo3's tuned PPO hyperparameters for CartPole-v1 (hyperparams/ppo.yml)
ZOO_CARTPOLE = {
    "n_envs": 8,
    "n_steps": 32,
    "batch_size": 256,
    "gae_lambda": 0.8,
    "gamma": 0.98,
    "n_epochs": 20,
    "ent_coef": 0.0,
    "learning_rate": ("linear", 0.001),
    "clip_range": ("linear", 0.2),
}


#: RL Zoo3 trains CartPole-v1 for this many env steps: its linear schedules fall to 0 over them
ZOO_CARTPOLE_STEPS = 100_000


def zoo_cartpole_overrides() -> list[str]:
    """`ZOO_CARTPOLE` as `mobrl train` overrides (`mobrl-zoo3`), with the PPO defaults in which
    SB3 and RLlib differ set to SB3's (value loss weight 0.5, gradients clipped at 0.5, no KL
    term); RLlib has no schedule for the clip range."""
    zoo = ZOO_CARTPOLE
    _, lr = zoo["learning_rate"]
    return [
        f"run.resources.num_envs_per_env_runner={zoo['n_envs']}",
        f"run.batch.train_batch_size={zoo['n_envs'] * zoo['n_steps']}",
        f"run.batch.minibatch_size={zoo['batch_size']}",
        f"run.batch.num_epochs={zoo['n_epochs']}",
        f"algo.training.gamma={zoo['gamma']}",
        f"algo.training.lambda_={zoo['gae_lambda']}",
        f"algo.training.entropy_coeff={zoo['ent_coef']}",
        f"algo.training.lr=[[0,{lr}],[{ZOO_CARTPOLE_STEPS},0.0]]",
        "+algo.training.use_kl_loss=false",
        "+algo.training.vf_loss_coeff=0.5",
        "+algo.training.grad_clip=0.5",
    ]


def preset_expect(task: Task) -> dict:
    """`preset.expect` of the preset `mobrl train` applies with the task's overrides: the
    training return it reaches and `within` which budget."""
    from omegaconf import OmegaConf

    from mobrl.config import compose
    from mobrl.core.metrics import RETURN_MEAN

    preset = compose(task.mobrl).preset
    expect = OmegaConf.to_container(preset.expect) if preset.expect is not None else None
    if expect is None or expect["metric"] != RETURN_MEAN or expect["value"] is None:
        raise SystemExit(f"preset {preset.name} states no training return to reach: {expect}")
    return expect


def targets_of(task: Task) -> tuple[list[float | str], dict | None]:
    """The task's targets, the preset's first, and the preset's `within` budget."""
    expect = preset_expect(task)
    return [float(expect["value"]), *task.also], expect["within"]


def baseline_return(layout: str, mode: str, policy: str, episodes: int = 30) -> float:
    """Mean return of a heuristic baseline on seeds 0..episodes-1 (as `mobrl baselines`)."""
    from mobrl.config import compose
    from mobrl.envs.factory import env_config_from
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import run_episode

    env_config = env_config_from(compose([f"scenario={layout}", f"env={mode}"]))
    returns = [
        run_episode(env_config, BASELINES[policy](), seed)["return"] for seed in range(episodes)
    ]
    return sum(returns) / len(returns)


# --- contenders, each in its own process ------------------------------------------------------


def run_mobrl(
    task: Task, goal: float, limit: float, t0: float, workdir: Path, extra: list[str]
) -> list[dict]:
    run_dir = workdir / "mobrl"
    cmd = [
        sys.executable,
        "-m",
        "mobrl",
        "train",
        *task.mobrl,
        *extra,
        f"run.stop.return_mean={goal}",
        f"run.stop.time_s={limit}",
        "run.stop.iterations=1000000",
        "run.stop.env_steps=null",
        "run.checkpoint.frequency=0",
        f"hydra.run.dir={run_dir}",
    ]
    subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 300)
    from mobrl.core.rundir import read_trial_results

    rows = []
    for result in sorted(run_dir.glob("tune/*/result.json")):
        for row in read_trial_results(result.parent):
            runners = row.get("env_runners", {})
            rows.append(
                {
                    "t": row["timestamp"] - t0,
                    "steps": row.get("num_env_steps_sampled_lifetime"),
                    "return": runners.get("episode_return_mean"),
                }
            )
    return rows


def worker(kind: str, task_name: str, goal: float, limit: float, t0: float, out: Path) -> None:
    """Train one contender in this process, appending one JSON line per iteration to `out`."""
    task = TASKS[task_name]

    def record(steps: int, ret: float | None) -> bool:
        with out.open("a") as f:
            f.write(json.dumps({"t": time.time() - t0, "steps": steps, "return": ret}) + "\n")
        return ret is not None and ret >= goal or time.time() - t0 > limit

    if kind == "rllib":
        _rllib_worker(task, record)
    else:
        _sb3_worker(task, kind == "sb3-mobrl", record)


def _rllib_worker(task: Task, record) -> None:
    import gymnasium as gym
    import ray
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.tune.registry import register_env

    from mobrl.envs.callbacks import log_episode_return
    from mobrl.training.return_window import fold_returns

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # the same training return as mobrl's and SB3's: the mean of the last WINDOW episodes
    # (RLlib's own averages the episodes that ended in the iteration)
    config = (
        PPOConfig()
        .env_runners(num_env_runners=1)
        .callbacks(on_episode_end=log_episode_return, on_train_result=fold_returns)
    )
    if task.layout is None:
        config = config.environment(task.gym_id)
    elif task.mode == "ma":
        import mobile_env  # noqa: F401  (registers mobile-env's ids)
        from mobile_env.wrappers.multi_agent import RLlibMAWrapper

        register_env("mobile-ma", lambda _: RLlibMAWrapper(gym.make(task.gym_id)))
        config = config.environment("mobile-ma").multi_agent(
            policies={"shared"}, policy_mapping_fn=lambda *args, **kwargs: "shared"
        )
    else:

        def make_central(_: dict) -> gym.Env:
            import mobile_env  # noqa: F401  (registers its ids inside RLlib's env runners)

            return gym.make(task.gym_id)

        register_env("mobile-central", make_central)
        config = config.environment("mobile-central")
    algo = config.build_algo()
    try:
        while True:
            result = algo.train()
            runners = result.get("env_runners", {})
            if record(
                int(runners.get("num_env_steps_sampled_lifetime", 0)),
                runners.get("episode_return_mean"),
            ):
                break
    finally:
        algo.stop()
        ray.shutdown()


def _sb3_worker(task: Task, on_mobrl: bool, record) -> None:
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    if task.layout is not None:
        import mobile_env  # noqa: F401
    env_id = task.gym_id
    if on_mobrl:
        import mobrl  # noqa: F401  (registers mobrl/mobile-*-v0)

        env_id = f"mobrl/{env_id}"
    zoo = env_id == "CartPole-v1"
    params = dict(ZOO_CARTPOLE) if zoo else {}
    # SB3's schedules fall over `total_timesteps`: RL Zoo3's budget, not an open-ended one
    budget = ZOO_CARTPOLE_STEPS if zoo else 10**8
    n_envs = params.pop("n_envs", 1)
    for key, value in list(params.items()):
        if isinstance(value, tuple):  # RL Zoo3's linear schedules
            start = value[1]
            params[key] = lambda progress, start=start: progress * start
    env = make_vec_env(lambda: gym.make(env_id), n_envs=n_envs, seed=0)

    class StopAtGoal(BaseCallback):
        """Check the return of the last episodes after each rollout; stop at the goal."""

        done = False

        def _on_rollout_end(self) -> None:
            infos = list(self.model.ep_info_buffer)[-WINDOW:]
            ret = sum(i["r"] for i in infos) / len(infos) if infos else None
            self.done = record(self.num_timesteps, ret)

        def _on_step(self) -> bool:
            return not self.done

    model = PPO("MlpPolicy", env, seed=0, verbose=0, device="cpu", **params)
    # a logger of its own that writes nothing: SB3's default makes a folder in the temp dir
    model.set_logger(Logger(folder=None, output_formats=[]))
    model.learn(total_timesteps=budget, callback=StopAtGoal())


#: a fresh Python running `worker_main(ARGS)` of this module (found through scripts/)
WORKER = [
    sys.executable,
    "-c",
    "import sys; sys.path.insert(0, sys.argv[1]); from benchmarks.train import worker_main; "
    "worker_main(sys.argv[2:])",
    str(SCRIPTS),
]


def worker_main(argv: list[str]) -> None:
    """One contender's process: `--worker KIND --task T --goal G --limit S --t0 T0
    --worker-out FILE` (what `run_worker` passes)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--goal", type=float, required=True)
    parser.add_argument("--limit", type=float, required=True)
    parser.add_argument("--t0", type=float, required=True)
    parser.add_argument("--worker-out", type=Path, required=True)
    args = parser.parse_args(argv)
    worker(args.worker, args.task, args.goal, args.limit, args.t0, args.worker_out)


def run_worker(kind: str, task: str, goal: float, limit: float, workdir: Path) -> list[dict]:
    out = workdir / f"{kind}.jsonl"
    t0 = time.time()
    cmd = [*WORKER, "--worker", kind, "--task", task, "--goal", str(goal)]
    cmd += ["--limit", str(limit), "--t0", str(t0), "--worker-out", str(out)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "RAY_DEDUP_LOGS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 300, env=env)
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if "Error" in line] or ["?"]
        print(f"  {kind} failed (exit {done.returncode}): {errors[-1][:200]}", flush=True)
    if not out.is_file():
        return []
    return [json.loads(line) for line in out.read_text().splitlines()]


def pace(rows: list[dict]) -> tuple[float | None, float | None]:
    """Seconds from process start to the first result, and seconds per 1,000 env steps from
    there to the last result (sampling and learning, without the start-up)."""
    if not rows:
        return None, None
    first, last = rows[0], rows[-1]
    steps = (last["steps"] or 0) - (first["steps"] or 0)
    per_1k = (last["t"] - first["t"]) / steps * 1000 if steps > 0 else None
    return first["t"], per_1k


def time_to(rows: list[dict], target: float) -> tuple[float | None, int | None]:
    for row in rows:
        if row["return"] is not None and row["return"] >= target:
            return row["t"], row["steps"]
    return None, None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", default="cartpole,small-ma,medium-ma,small-central")
    parser.add_argument("--contenders", default="mobrl,mobrl-zoo3,rllib,sb3,sb3-mobrl")
    parser.add_argument("--limit", type=float, default=600.0, help="seconds per contender")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--quick", action="store_true", help="CartPole to 150, 60 s each: a check")


def run(args: argparse.Namespace, report: Report) -> None:
    targets = None
    if args.quick:
        args.tasks, args.limit, targets = "cartpole", 60.0, [150.0]
    contenders = [
        c for c in args.contenders.split(",") if c not in ("sb3", "sb3-mobrl") or _has_sb3()
    ]
    bench(report, args.tasks.split(","), contenders, args.limit, args.out, targets)


def _has_sb3() -> bool:
    import importlib.util

    if importlib.util.find_spec("stable_baselines3") is None:
        print(
            'Stable-Baselines3 is not installed (pip install -e ".[bench]"): skipping it',
            flush=True,
        )
        return False
    return True


def bench(
    report: Report,
    tasks: list[str],
    contenders: list[str],
    limit: float,
    out: Path | None,
    targets_override: list[float] | None = None,
) -> list[dict]:
    results = []
    for name in tasks:
        task = TASKS[name]
        labels, within = targets_of(task)
        if targets_override:
            labels, within = list(targets_override), None
        targets = [
            t if isinstance(t, float) else baseline_return(task.layout, task.mode, t)
            for t in labels
        ]
        goal = max(targets)
        for kind in [c for c in contenders if c in task.contenders]:
            with tempfile.TemporaryDirectory(prefix=f"bench_{name}_{kind}_") as tmp:
                print(f"{name}: {kind} (up to {limit:.0f} s) ...", flush=True)
                if kind.startswith("mobrl"):
                    extra = zoo_cartpole_overrides() if kind == "mobrl-zoo3" else []
                    rows = run_mobrl(task, goal, limit, time.time(), Path(tmp), extra)
                else:
                    rows = run_worker(kind, name, goal, limit, Path(tmp))
            first_s, per_1k_s = pace(rows)
            for i, (label, target) in enumerate(zip(labels, targets)):
                wall, steps = time_to(rows, target)
                results.append(
                    {
                        "task": name,
                        "target": target,
                        "target_label": label if isinstance(label, str) else f"{label:g}",
                        # the preset's own target: the budget it states it reaches it within
                        "preset_within": within if i == 0 else None,
                        "contender": kind,
                        "wall_s": wall,
                        "env_steps": steps,
                        "iterations": len(rows),
                        "first_result_s": first_s,
                        "s_per_1k_steps": per_1k_s,
                        "best_return": max(
                            (r["return"] for r in rows if r["return"] is not None), default=None
                        ),
                    }
                )
    # wall: seconds to the target; first: seconds to the first result; s/1k: seconds per
    # 1,000 env steps after it; ×: wall against mobrl's
    # preset: the budget the preset states for its own target (env steps, seconds)
    rows = []
    for row in results:
        ours = next(
            (
                r["wall_s"]
                for r in results
                if r["task"] == row["task"]
                and r["target"] == row["target"]
                and r["contender"] == "mobrl"
            ),
            None,
        )
        target = row["target_label"]
        target = f"greedy ({row['target']:.1f})" if target == "greedy" else row["target"]
        rows.append(
            [
                row["task"],
                target,
                _budget(row["preset_within"]),
                row["contender"],
                row["wall_s"],
                int(row["env_steps"]) if row["env_steps"] is not None else None,
                row["best_return"],
                row["first_result_s"],
                row["s_per_1k_steps"],
                row["wall_s"] / ours if row["wall_s"] and ours else None,
            ]
        )
    report.table(
        f"seconds to a training return (limit {limit:.0f} s per run)",
        ["task", "target", "preset", "contender", "wall", "steps", "best", "first", "s/1k", "×"],
        rows,
        note=(
            f"wall: seconds to the target ('-': not reached within {limit:.0f} s); first: seconds "
            "to the first result; s/1k: seconds per 1,000 env steps after it; ×: wall against "
            "mobrl's; preset: the budget the preset states for its own target"
        ),
        formats={"target": "g", "wall": ".0f", "steps": "d", "best": ".1f", "first": ".1f",
                 "s/1k": ".2f", "×": "{:.1f}×"},
    )  # fmt: skip
    if out is not None:
        out.write_text(json.dumps(results, indent=1))
        print(f"results: {out}", flush=True)
    return results


def _budget(within: dict | None) -> str:
    if not within:
        return "-"
    parts = []
    if within.get("env_steps") is not None:
        parts.append(f"{within['env_steps'] / 1000:g}k")
    if within.get("seconds") is not None:
        parts.append(f"{within['seconds']:g} s")
    return ", ".join(parts) or "-"
