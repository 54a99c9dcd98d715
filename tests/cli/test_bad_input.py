"""Bad input across every command, as a new user would type it: each case exits 2 with one
line that names the bad value, prints no traceback and leaves nothing behind (no run dir, no
partial file, no Ray process)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ray_process_count, run_mobrl

LAYOUT = """\
width: 200
height: 200
stations:
  - {x: 50, y: 100}
  - {x: 150, y: 100}
ues: 3
"""

#: a user's env module: one callable that returns no env, one whose env leaves its spaces
USER_ENV = """\
import numpy as np
from gymnasium import spaces


def not_an_env():
    return 42


class OffSpace:
    possible_agents = ["a", "b"]

    def __init__(self):
        self.agents = []

    def observation_space(self, agent):
        return spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)

    def action_space(self, agent):
        return spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        self.agents = list(self.possible_agents)
        return {a: np.array([5.0], dtype=np.float32) for a in self.agents}, {}

    def step(self, actions):
        obs = {a: np.array([5.0], dtype=np.float32) for a in self.agents}
        zeros = {a: 0.0 for a in self.agents}
        done = {a: True for a in self.agents}
        self.agents = []
        return obs, zeros, done, done, {a: {} for a in obs}


def off_space():
    return OffSpace()
"""

#: (case id, command line, a piece of the one-line error): {f} stands for the fixtures dir
CASES = [
    # train: groups, keys, values
    ("unknown scenario", "train scenario=mediun", "Did you mean 'medium'"),
    ("unknown algo", "train algo=ppp", "ppo"),
    ("unknown env", "train env=multi", "env"),
    ("unknown run preset", "train run=smok", "smoke"),
    ("unknown tune option", "train tune=lr_grd", "lr_grid"),
    ("typo in a key", "train run.stop.iteration=5", "run.stop.iterations"),
    ("typo in an algo key", "train algo.training.lrr=0.1", "lr"),
    ("unknown new algo key", "train +algo.training.lrr=0.1", "algo.training.lrr"),
    ("wrong type", "train run.stop.iterations=abc", "run.stop.iterations=abc"),
    ("wrong type bool", "train run.ue_metrics=maybe", "run.ue_metrics"),
    ("negative count", "train run.resources.num_env_runners=-1", "num_env_runners"),
    ("zero iterations", "train run.stop.iterations=0", "must be positive"),
    ("negative iterations", "train run.stop.iterations=-1", "must be positive"),
    ("zero minibatch", "train run.batch.minibatch_size=0", "must be positive"),
    ("negative lr", "train algo.training.lr=-1", "must be positive"),
    ("negative sac lr", "train algo=sac algo.training.actor_lr=-1", "actor_lr=-1"),
    ("lr not a number", "train run=smoke algo.training.lr=abc", "lr"),
    ("gamma above 1", "train algo.training.gamma=1.5", "must lie in"),
    ("minibatch above batch", "train run=smoke run.batch.minibatch_size=5000", "larger than"),
    ("unknown engine", "train engine=stok", "Did you mean 'stock'"),
    ("unknown sampler", "train env.sampler=slots", "env.sampler"),
    ("unknown obs", "train env.obs=top", "env.obs"),
    ("topk zero", "train env.obs=topk env.topk=0", "env.topk=0"),
    ("imitate without slots", "train run.imitate.expert=oracle", "use env.obs=topk_gain"),
    ("imitate central", "train env=central run.imitate.expert=oracle", "use env=ma"),
    ("imitate unknown expert", "train env.obs=topk run.imitate.expert=orcle", "'oracle'"),
    (
        "imitate without a policy head",
        "train env.obs=topk algo=dqn run.imitate.expert=oracle",
        "Use algo=ppo / algo=mappo / algo=appo / algo=impala",
    ),
    ("unknown policies", "train env.policies=bogus", "env.policies"),
    ("algo cannot act", "train scenario=small env=central algo=dqn", "dqn"),
    ("algo cannot act continuous", "train scenario=gym scenario.id=Pendulum-v1 algo=dqn", "box"),
    (
        "replay on intermittent agents",
        "train scenario=uma19_energy env=hierarchical algo=sac",
        "algo=sac cannot train env=hierarchical",
    ),
    (
        "preset of another algo",
        "train scenario=cartpole algo=dqn preset=ppo/cartpole",
        "tuned for algo=ppo",
    ),
    ("unknown tune metric", "train tune.metric=env_runners/episode_return_mea", "tune.metric"),
    ("unknown searcher", "train tune.searcher=optuner", "tune.searcher"),
    ("bad search space", "train +tune.param_space.training.lr={log:[1]}", "search-space type"),
    ("unknown baseline to beat", "train run.eval.interval=5 run.stop.beat=greed", "greedy"),
    ("unknown fault", "train run.fault.inject.what=crash", "run.fault.inject.what"),
    ("negative free space", "train run.checkpoint.min_free_mb=-1", "min_free_mb"),
    ("unknown Ray log level", "train ray.log_level=loud", "ray.log_level"),
    ("interval sweep", "train -m run.seed=interval(0,1)", "sweeps a range"),
    ("malformed override", "train run.seed=[1", "malformed override"),
    ("sweep without -m", "train scenario=small,medium", "Add -m"),
    ("-m with --cfg", "train -m --cfg job scenario=small,medium", "do not go together"),
    ("unknown train flag", "train --multirn scenario=small", "--multirn"),
    ("unknown list flag", "scenarios list --bogus", "--bogus"),
    ("unknown zoo list flag", "zoo list --bogus", "--bogus"),
    ("serve exposed without a token", "serve --checkpoint zoo:small --host 0.0.0.0", "token"),
    ("serve unknown zoo policy", "serve --checkpoint zoo:smal", "Did you mean 'small'"),
    ("serve bad --max-body", "serve --checkpoint zoo:small --max-body lots", "is not a size"),
    ("serve zero replicas", "serve --checkpoint zoo:small --replicas 0", "--replicas"),
    (
        "serve a training's Ray setting",
        "serve --checkpoint zoo:small ray.log_level=info",
        "ray.log_level=info",
    ),
    (
        "serve ray address not host:port",
        "serve --checkpoint zoo:small ray.address=nohost",
        "not host:port",
    ),
    (
        "serve ray.num_cpus without replicas",
        "serve --checkpoint zoo:small ray.num_cpus=2",
        "ray.num_cpus=2 sizes the Ray of --replicas N",
    ),
    (
        "serve unreachable ray address",
        "serve --checkpoint zoo:small ray.address=127.0.0.1:1",
        "cannot reach a Ray cluster at ray.address=127.0.0.1:1",
    ),
    (
        "serve port 0 on a cluster",
        "serve --checkpoint zoo:small --port 0 ray.address=127.0.0.1:1",
        "--port 0 picks a free port of this machine",
    ),
    ("missing export checkpoint", "zoo export --checkpoint {f}/nothing --name x", "nothing"),
    ("export unknown format", "zoo export --checkpoint zoo:small --format tflite", "'tflite'"),
    (
        "export onnx unwritable output",
        "zoo export --checkpoint zoo:small --format onnx --output {f}/afile/m.onnx",
        "not writable",
    ),
    (
        "export onnx of a corrupt checkpoint",
        "zoo export --checkpoint {f}/corrupt --format onnx --output {f}/m.onnx",
        "corrupt",
    ),
    (
        "export onnx with an evaluation",
        "zoo export --checkpoint zoo:small --format onnx --evaluation {f}/empty",
        "--evaluation goes with --format zoo",
    ),
    ("export zoo without a name", "zoo export --checkpoint {f}/corrupt", "--name is missing"),
    ("unknown --cfg part", "train --cfg jobs", "jobs"),
    (
        "resources above the machine",
        "train ray.num_cpus=1 run.resources.num_env_runners=2",
        "needs 3 CPUs",
    ),
    ("unwritable storage", "train run.storage_path={f}/afile/out", "not writable"),
    ("ray address not host:port", "train ray.address=nohost", "not host:port"),
    ("layout file missing", "train scenario.path={f}/nope.yaml", "nope.yaml"),
    ("malformed YAML layout", "train scenario.path={f}/broken.yaml", "broken.yaml"),
    ("layout with wrong types", "train scenario.path={f}/wrongtype.yaml", "wrongtype.yaml"),
    ("layout with negative UEs", "train scenario.path={f}/negative.yaml", "negative.yaml"),
    # the radio section and movement models of a layout (docs/radio.md)
    ("unknown channel", "train scenario.path={f}/channel.yaml", "radio.channel 'umo' is unknown"),
    ("unknown interference", "train scenario.path={f}/interf.yaml", "did you mean 'active'"),
    ("shadowing without sigma", "train scenario.path={f}/fspl.yaml", "radio.shadowing"),
    ("shadowing not a flag", "train scenario.path={f}/flag.yaml", "must be true or false"),
    ("alpha outside [0, 1]", "train scenario.path={f}/alpha.yaml", "movement.alpha"),
    ("key of another model", "train scenario.path={f}/rwpalpha.yaml", "belongs to model"),
    ("trace file missing", "train scenario.path={f}/trace_missing.yaml", "movement.file"),
    ("trace file malformed", "train scenario.path={f}/trace_bad.yaml", "movement.file"),
    ("trace off the map", "train scenario.path={f}/trace_off.yaml", "movement.file"),
    ("radio on stock engine", "train scenario.path={f}/radio.yaml engine=stock", "engine=fast"),
    # a layout's own mobile-env classes (classes:, docs/scenarios.md)
    ("class of another base", "train scenario.path={f}/wrongbase.yaml", "not a subclass"),
    ("class module missing", "train scenario.path={f}/nomodule.yaml", "no module named"),
    (
        "classes with UE slots",
        "train scenario.path={f}/classes.yaml env.sampler=ue_slots",
        "env.sampler=ue_slots needs mobrl's fast engine",
    ),
    ("budget position not X,Y", "scenarios budget uma19 --at 10", "--at '10'"),
    ("power unknown model", "scenarios power tr38865", "unknown power.model 'tr38865'"),
    ("power category", "scenarios power tr38864 --category 3", "power.category=3 is not"),
    ("layout power model", "train scenario.path={f}/pmodel.yaml", "unknown power.model 'tr38865'"),
    ("layout power category", "train scenario.path={f}/pcategory.yaml", "power.category=3"),
    ("layout power config", "train scenario.path={f}/pconfig.yaml", "power.config=4"),
    ("layout power kind", "train scenario.path={f}/pkind.yaml", "unknown power.kind 'tower'"),
    ("sleep state lacking", "train scenario.path={f}/psleep.yaml", "power.sleep state"),
    ("zero demand", "train scenario.path={f}/demand0.yaml", "traffic.demand.mbps=0"),
    ("negative interval", "train scenario.path={f}/demandneg.yaml", "mean_interval_s=-1"),
    ("profile missing", "train scenario.path={f}/profile_missing.yaml", "traffic.profile.file"),
    ("profile malformed", "train scenario.path={f}/profile_bad.yaml", "23 values, not 24"),
    ("step_seconds zero", "train scenario.path={f}/step0.yaml", "step_seconds=0"),
    (
        "unknown cell rule",
        "baselines scenario=uma19_energy --baselines treshold+a3 --episodes 1",
        "unknown cell rule of --baselines treshold+a3 'treshold'",
    ),
    (
        "controller without power",
        "baselines scenario=uma19 --baselines idle_off --episodes 1",
        "has no power: section",
    ),
    (
        "generate bad radio pair",
        "scenarios generate --sites hex:7 --ues 5 --radio umi --out {f}/r.yaml",
        "--radio 'umi' is not KEY=VALUE",
    ),  # fmt: skip
    # custom envs
    ("custom without entry", "train scenario=custom", "scenario.entry=MODULE:CALLABLE"),
    (
        "custom module missing",
        "train scenario=custom scenario.entry=no_such_module:make",
        "no module named 'no_such_module'",
    ),
    (
        "custom returns no env",
        "train scenario=custom scenario.entry={f}/user_env.py:not_an_env",
        "returned a int, not an env mobrl can train on",
    ),
    (
        "custom env off its spaces",
        "train scenario=custom scenario.entry={f}/user_env.py:off_space",
        "fails the env check",
    ),
    (
        "custom kwargs that do not fit",
        "train scenario=custom scenario.entry={f}/user_env.py:off_space +scenario.kwargs.x=1",
        "scenario.kwargs do not fit",
    ),
    (
        "custom bad metric",
        "train scenario=custom scenario.entry={f}/user_env.py:off_space scenario.metrics=[r:median]",
        "Fix scenario.metrics",
    ),
    ("unknown user rule", "baselines --baselines no_rules_mod:Rule", "'no_rules_mod'"),
    ("external without address", "train scenario=external", "scenario.address=HOST:PORT"),
    ("external bad address", "train scenario=external scenario.address=nohost", "not HOST:PORT"),
    (
        "external unreachable",
        "train scenario=external scenario.address=127.0.0.1:9 +scenario.kwargs.timeout=0.5",
        "127.0.0.1:9",
    ),
    (
        "external unknown setting",
        "train scenario=external scenario.address=127.0.0.1:9 +scenario.kwargs.timout=1",
        "Did you mean 'timeout'",
    ),
    # resume
    ("resume a missing dir", "train --resume {f}/nowhere", "nowhere"),
    ("resume a dir that is no run", "train --resume {f}", "not a mobrl run dir"),
    # evaluate
    ("evaluate a missing checkpoint", "evaluate --checkpoint {f}/nowhere", "nowhere"),
    ("typo in a required option", "evaluate --chekpoint zoo:small", "Did you mean '--checkpoint'"),
    (
        "typo in an option",
        "evaluate --checkpoint zoo:small --episdoes 3",
        "unknown option '--episdoes'. Did you mean '--episodes'",
    ),
    ("typo in a baselines option", "baselines --episdoes 3", "Did you mean '--episodes'"),
    ("typo in a render option", "render --polcy greedy --video {f}/v.mp4", "'--policy'"),
    ("layout no UE can reach", "train scenario.path={f}/unreachable.yaml", "no station covers"),
    ("evaluate a corrupt checkpoint", "evaluate --checkpoint {f}/corrupt", "corrupt"),
    ("evaluate unknown zoo entry", "evaluate --checkpoint zoo:smal", "Did you mean 'small'"),
    ("evaluate unknown baseline", "evaluate --checkpoint zoo:small --baselines greed", "greedy"),
    ("evaluate zero episodes", "evaluate --checkpoint zoo:small --episodes 0", "--episodes"),
    (
        "evaluate absurd episodes",
        "evaluate --checkpoint zoo:small --episodes 99999999999999999999",
        "--episodes",
    ),
    ("train unknown env.reward", "train env.reward=utilty", "Did you mean 'utility'"),
    ("train 1000 env runners", "train run.resources.num_env_runners=1000", "at most"),
    ("train non-ASCII scenario", "train scenario=smäll", "Did you mean 'small'"),
    ("train central marginal", "train env=central env.reward=marginal", "env.reward=marginal"),
    ("train unknown eval metric", "train run.eval.interval=5 run.eval.metric=util", "utility"),
    ("evaluate bad pick", "evaluate --checkpoint zoo:small --pick worst", "--pick"),
    ("evaluate zero workers", "evaluate --checkpoint zoo:small --workers 0", "--workers"),
    (
        "evaluate unwritable output",
        "evaluate --checkpoint zoo:small --output {f}/afile/x",
        "not writable",
    ),
    (
        "evaluate zoo with another observation",
        "evaluate --checkpoint zoo:small scenario=large env.obs=mobile",
        "trained with env.obs=topk_gain, not env.obs=mobile: drop env.obs=mobile",
    ),
    (
        "matrix unknown layout",
        "evaluate --checkpoint zoo:small --scenarios small,lareg",
        "--scenarios: unknown scenario 'lareg'. Did you mean 'large'",
    ),
    # baselines
    ("baselines unknown scenario", "baselines scenario=smal", "small"),
    ("baselines unknown baseline", "baselines --baselines rnd", "random"),
    ("baselines negative episodes", "baselines --episodes -3", "--episodes"),
    # render
    ("render unknown video type", "render --policy greedy --video {f}/out.avi", ".avi"),
    ("render unknown policy", "render --policy greed --video {f}/out.mp4", "greedy"),
    (
        "render over an existing file",
        "render --policy greedy --video {f}/existing.mp4",
        "--overwrite",
    ),
    ("render missing checkpoint", "render --checkpoint {f}/nowhere --video {f}/out.mp4", "nowhere"),
    (
        "render zoo in another env mode",
        "render --checkpoint zoo:small --video {f}/out.mp4 scenario=medium env=central",
        "trained with env=ma, not env=central",
    ),
    ("render unwritable video", "render --policy greedy --video {f}/afile/out.mp4", "not writable"),
    # scenarios
    ("scenarios show unknown", "scenarios show mediun", "medium"),
    ("scenarios show broken file", "scenarios show {f}/broken.yaml", "broken.yaml"),
    ("scenarios plot bad size", "scenarios plot small --size 9x", "--size"),
    (
        "scenarios generate unknown sites",
        "scenarios generate --sites hexagon:7 --ues 10 --out {f}/net.yaml",
        "--sites hex:N",
    ),
    (
        "scenarios generate over an existing file",
        "scenarios generate --sites hex:7 --ues 10 --out {f}/existing.yaml",
        "Add --force",
    ),
    (
        "scenarios import no columns",
        "scenarios import {f}/nocols.csv --ues 5 --out n.yaml",
        "lat,lon",
    ),
    (
        "scenarios import not a number",
        "scenarios import {f}/nan.csv --ues 5 --out n.yaml",
        "column lon, line 3",
    ),
    # option values Typer parses: wrong types, unknown options, missing values
    ("option of the wrong type", "evaluate --checkpoint zoo:small --episodes abc", "'--episodes'"),
    ("unknown option", "evaluate --checkpoint zoo:small --episode 5", "--episode"),
    ("option without its value", "evaluate --checkpoint", "'--checkpoint' requires"),
    ("missing required option", "render --policy greedy", "Missing option '--video'"),
    ("unknown command", "evaluat --checkpoint zoo:small", "No such command 'evaluat'"),
    # report
    ("report a missing path", "report {f}/nowhere", "nowhere"),
    ("report nothing to report", "report {f}/empty", "empty"),
    ("report unknown x", "report {f}/empty --x steps", "--x"),
    ("compare a missing path", "compare {f}/nowhere", "nowhere"),
    ("compare no training runs", "compare {f}/empty", "mobrl train"),
    ("compare unknown budget", "compare {f}/empty --budget steps", "env_steps"),
    ("compare too few resamples", "compare {f}/empty --reps 5", "--reps"),
]


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("bad_input")
    (folder / "afile").write_text("a file, not a directory\n")
    (folder / "broken.yaml").write_text("stations: [ {x: 1, y: 2\nues: 3\n")
    (folder / "wrongtype.yaml").write_text(LAYOUT.replace("ues: 3", "ues: three"))
    (folder / "negative.yaml").write_text(LAYOUT.replace("ues: 3", "ues: -2"))
    unreachable = LAYOUT.replace("ues: 3", "ues: {count: 3}")
    (folder / "unreachable.yaml").write_text(
        unreachable + "movement: {width: 0.001, height: 0.001}\n"
    )
    radio_layout = LAYOUT.replace("ues: 3", "ues: {count: 3}")
    for name, section in (
        ("channel", "radio: {channel: umo}"),
        ("interf", "radio: {channel: uma, interference: activ}"),
        ("fspl", "radio: {channel: free_space, shadowing: true}"),
        ("flag", "radio: {channel: uma, shadowing: maybe}"),
        ("radio", "radio: {channel: uma, interference: active}"),
        ("alpha", "movement: {model: gauss_markov, alpha: 1.5}"),
        ("rwpalpha", "movement: {model: random_waypoint, alpha: 0.5}"),
        ("trace_missing", "movement: {model: trace, file: nowhere.csv}"),
        ("trace_bad", "movement: {model: trace, file: bad.csv}"),
        ("trace_off", "movement: {model: trace, file: off.csv}"),
        ("wrongbase", "classes: {channel: 'mobile_env.core.movement:RandomWaypointMovement'}"),
        ("nomodule", "classes: {channel: 'no_such_channels:LogDistance'}"),
        ("classes", "classes: {channel: 'mobile_env.core.channels:OkumuraHata'}"),
        ("pmodel", "power: {model: tr38865}"),
        ("pcategory", "power: {model: tr38864, category: 3}"),
        ("pconfig", "power: {model: tr38864, config: 4}"),
        ("pkind", "power: {model: earth, kind: tower}"),
        ("psleep", "power: {model: earth, sleep: [deep_sleep]}"),
        ("demand0", "traffic: {demand: {model: constant, mbps: 0}}"),
        ("demandneg", "traffic: {demand: {model: ftp3, mean_interval_s: -1}}"),
        ("profile_missing", "traffic: {profile: {file: nowhere.csv}}"),
        ("profile_bad", "traffic: {profile: {file: profile.csv}}"),
        ("step0", "power: {model: tr38864}\nstep_seconds: 0"),
    ):
        (folder / f"{name}.yaml").write_text(radio_layout + section + "\n")
    (folder / "bad.csv").write_text("id,time,x,y\na,0,10,oops\n")
    (folder / "profile.csv").write_text("hour,load\n" + "".join(f"{h},0.5\n" for h in range(23)))
    (folder / "off.csv").write_text(
        "id,time,x,y\n" + "".join(f"{u},0,10,10\n{u},5,900,10\n" for u in "abc")
    )
    corrupt = folder / "corrupt"
    corrupt.mkdir()
    (corrupt / "rllib_checkpoint.json").write_text("{not json")
    (folder / "existing.mp4").write_bytes(b"a video the user keeps")
    (folder / "existing.yaml").write_text("a layout the user keeps\n")
    (folder / "nocols.csv").write_text("cell,range\n1,500\n")
    (folder / "nan.csv").write_text("lat,lon\n52.5,13.4\n52.6,east\n")
    (folder / "empty").mkdir()
    (folder / "user_env.py").write_text(USER_ENV)
    return folder


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"")
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture(scope="module")
def outcomes(fixtures: Path, tmp_path_factory) -> dict:
    """Every case run once, a few at a time (each is a fresh `mobrl` process in an empty dir
    of its own), with what the whole batch left in the fixtures dir and in Ray processes."""
    from concurrent.futures import ThreadPoolExecutor

    before, ray_before = _snapshot(fixtures), ray_process_count()

    def run(case: tuple[str, str, str]) -> tuple[str, Any, Path]:
        case_id, argv, _ = case
        cwd = tmp_path_factory.mktemp("case")
        args = [part.replace("{f}", str(fixtures)) for part in argv.split(" ")]
        return case_id, run_mobrl(*args, cwd=cwd, timeout=90), cwd

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = {case_id: (result, cwd) for case_id, result, cwd in pool.map(run, CASES)}
    return {
        "results": results,
        "fixtures_unchanged": _snapshot(fixtures) == before,
        "ray_left": ray_process_count() - ray_before,
    }


@pytest.mark.parametrize(
    "case_id,expected", [(c[0], c[2]) for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(
    outcomes: dict, fixtures: Path, case_id: str, expected: str
) -> None:
    result, cwd = outcomes["results"][case_id]
    printed = result.stdout + result.stderr
    assert result.returncode == 2, printed
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, printed
    assert expected.replace("{f}", str(fixtures)) in lines[0], printed
    assert "Traceback" not in printed
    assert list(cwd.iterdir()) == []  # no run dir, no outputs/, no partial file


def test_the_batch_wrote_nothing_next_to_its_inputs_and_left_no_ray(outcomes: dict) -> None:
    assert outcomes["fixtures_unchanged"]
    assert outcomes["ray_left"] <= 0


def test_the_matrix_is_broad() -> None:
    commands = {argv.split(" ")[0] for _, argv, _ in CASES}
    assert len(CASES) >= 40
    assert {"train", "evaluate", "baselines", "render", "scenarios", "report"} <= commands
    assert any("--resume" in argv for _, argv, _ in CASES)
    assert len({case_id for case_id, _, _ in CASES}) == len(CASES)


def test_every_command_has_a_case() -> None:
    """A new command (or subcommand) joins the matrix with at least one bad input."""
    import typer.main

    from mobrl.cli import app

    commands = set()
    for name, command in typer.main.get_command(app).commands.items():
        subcommands = getattr(command, "commands", None)
        commands |= {f"{name} {sub}" for sub in subcommands} if subcommands else {name}
    covered = {" ".join(argv.split(" ")[:words]) for _, argv, _ in CASES for words in (1, 2)}
    assert commands - covered == set()
