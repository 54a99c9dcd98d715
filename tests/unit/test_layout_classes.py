"""A layout's `classes:` section: mobile-env's own extension classes by import path
(`mobrl.scenarios.classes`), validated in one line, built into mobile-env's core on its stock
engine, and carried by `env_config` to processes started elsewhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import yaml

from mobrl import scenarios
from mobrl.config import compose
from mobrl.core.errors import UserError
from mobrl.envs.factory import env_config_from, make_env
from mobrl.envs.wrappers import find_core
from mobrl.scenarios import mobile_core
from mobrl.scenarios.kinds import mobile

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "mobile_env_classes" / "logdistance.yaml"

#: a module of classes, one of each kind and some that are wrong (its name is made unique per
#: test session: `sys.modules` keeps what a test imported)
CLASSES = """\
    import numpy as np
    from mobile_env.core.arrival import Arrival
    from mobile_env.core.channels import Channel
    from mobile_env.core.movement import Movement
    from mobile_env.core.schedules import Scheduler
    from mobile_env.core.utilities import Utility


    class Chan(Channel):
        def __init__(self, exponent=3.0, **kwargs):
            super().__init__(**kwargs)
            if exponent <= 0:
                raise ValueError("exponent must be positive")
            self.exponent = exponent

        def power_loss(self, bs, ue):
            return 135.0 + 10 * self.exponent * np.log10(max(bs.point.distance(ue.point), 1.0))


    class Half(Channel):
        pass


    class Kwargs(Chan):
        def __init__(self, **kwargs):
            super().__init__(exponent=kwargs.pop("slope", 3.0), **kwargs)


    class NotAChannel:
        pass


    class Still(Movement):
        def __init__(self, margin=0.0, **kwargs):
            super().__init__(**kwargs)
            self.margin = margin

        def initial_position(self, ue):
            return tuple(self.rng.uniform(self.margin, [self.width, self.height]))

        def move(self, ue):
            return ue.x, ue.y


    class Late(Arrival):
        def __init__(self, delay=2, **kwargs):
            super().__init__(**kwargs)
            self.delay = delay

        def arrival(self, ue):
            return self.delay * ue.ue_id

        def departure(self, ue):
            return self.ep_time


    class Linear(Utility):
        def __init__(self, lower=-20, upper=20, coeffs=None, **kwargs):
            super().__init__(**kwargs)
            self.lower, self.upper = lower, upper

        def utility(self, rate):
            return float(np.clip(rate, self.lower, self.upper))

        def scale(self, u):
            return 2 * (u - self.lower) / (self.upper - self.lower) - 1

        def unscale(self, u):
            return (u + 1) / 2 * (self.upper - self.lower) + self.lower


    class Unbounded(Linear):
        def __init__(self, **kwargs):
            Utility.__init__(self, **kwargs)


    class Equal(Scheduler):
        def share(self, bs, rates):
            return [r / len(rates) for r in rates]
"""

LAYOUT = {
    "width": 200,
    "height": 200,
    "stations": [{"x": 110, "y": 130}, {"x": 65, "y": 80}, {"x": 120, "y": 30}],
    "ues": {"count": 5},
}


@pytest.fixture(autouse=True)
def _own_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a test puts on `sys.path` (validation adds the classes' folders) goes with it; so
    does the engine notice printed once per process."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(mobile_core, "_NOTED", set())


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(folder, name) of the module of classes, and a module that fails to import beside it."""
    folder = tmp_path_factory.mktemp("classes")
    name = f"lc_classes_{uuid.uuid4().hex[:8]}"
    (folder / f"{name}.py").write_text(textwrap.dedent(CLASSES))
    (folder / f"{name}_broken.py").write_text("raise RuntimeError('no network here')\n")
    return folder, name


def write_layout(folder: Path, classes: dict | None, **extra) -> Path:
    path = folder / f"layout_{uuid.uuid4().hex[:6]}.yaml"
    data = {**LAYOUT, **extra}
    if classes is not None:
        data["classes"] = classes
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def with_classes(module: tuple[Path, str], **section) -> Path:
    """A layout beside the module naming `section`'s classes (M: stands for the module)."""
    folder, name = module
    named = {
        k: v.replace("M:", f"{name}:") if isinstance(v, str) else v for k, v in section.items()
    }
    extra = named.pop("_layout", {})
    return write_layout(folder, {"pythonpath": ["."], **named}, **extra)


BAD = [
    (
        "unknown key",
        {"chanel": "M:Chan"},
        "classes.chanel is not a known key (did you mean 'channel'?)",
    ),
    ("not a mapping", None, "classes must be a mapping"),
    ("not an import path", {"channel": "Chan"}, "classes.channel is 'Chan', not an import path"),
    ("a number", {"channel": 3}, "classes.channel is 3, not an import path MODULE:CLASS"),
    ("no such module", {"channel": "lc_nowhere_xyz:Chan"}, "no module named 'lc_nowhere_xyz'"),
    ("module raises", {"channel": "M_broken:Chan"}, "raised RuntimeError: no network here"),
    ("no such class", {"channel": "M:Chann"}, "has no attribute 'Chann'"),
    ("not a subclass", {"channel": "M:NotAChannel"}, "is not a subclass of mobile-env's Channel"),
    ("other base", {"channel": "M:Still"}, "is not a subclass of mobile-env's Channel"),
    ("abstract method", {"channel": "M:Half"}, "does not implement power_loss"),
    ("params alone", {"channel_params": {"exponent": 2}}, "channel_params is given without"),
    (
        "params not a mapping",
        {"channel": "M:Chan", "channel_params": [2]},
        "must be a mapping of arguments",
    ),
    (
        "misspelt param",
        {"channel": "M:Chan", "channel_params": {"exponnt": 2}},
        "exponnt is no argument of",
    ),
    (
        "param set by the layout",
        {"movement": "M:Still", "movement_params": {"width": 5}},
        "set movement.width instead",
    ),
    (
        "seed param",
        {"channel": "M:Chan", "channel_params": {"seed": 5}},
        "classes.channel_params.seed is not the class's",
    ),
    (
        "constructor fails",
        {"channel": "M:Chan", "channel_params": {"exponent": -1}},
        "ValueError: exponent must be positive",
    ),
    ("utility without bounds", {"utility": "M:Unbounded"}, "has no lower and upper"),
    ("pythonpath no folder", {"pythonpath": ["nowhere"]}, "classes.pythonpath names 'nowhere'"),
    # a class and a layout key that picks another model of the same thing
    (
        "channel vs radio",
        {"channel": "M:Chan", "_layout": {"radio": {"channel": "uma"}}},
        "radio.channel is uma, but classes.channel names the channel",
    ),
    (
        "scheduler vs radio",
        {"scheduler": "M:Equal", "_layout": {"radio": {"scheduler": "rate_fair"}}},
        "radio.scheduler is rate_fair, but classes.scheduler",
    ),
    (
        "arrival vs arrival",
        {"arrival": "M:Late", "_layout": {"arrival": {"model": "random", "window": 5}}},
        "arrival.model is random, but classes.arrival",
    ),
    (
        "movement vs model",
        {"movement": "M:Still", "_layout": {"movement": {"model": "gauss_markov"}}},
        "movement.model is gauss_markov, but classes.movement",
    ),
    (
        "classes need stock",
        {"utility": "M:Linear", "_layout": {"radio": {"interference": "full_buffer"}}},
        "does not model this layout's radio section",
    ),
]


@pytest.mark.parametrize(("section", "expected"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_a_bad_classes_entry_is_one_line_naming_key_value_and_fix(
    module: tuple[Path, str], section: dict | None, expected: str
) -> None:
    folder, name = module
    if section is None:
        path = write_layout(folder, None)
        path.write_text(path.read_text() + "classes: logdistance:LogDistance\n")
    else:
        section = {
            k: v.replace("M_", f"{name}_") if isinstance(v, str) else v for k, v in section.items()
        }
        path = with_classes(module, **section)
    with pytest.raises(UserError) as err:
        scenarios.load(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"scenario file '{path}'")
    assert expected.replace("M:", f"{name}:") in message
    assert message.rstrip().endswith(".")


def test_the_classes_reach_mobile_envs_core_with_their_parameters(module) -> None:
    folder, name = module
    path = with_classes(
        module,
        channel="M:Chan",
        channel_params={"exponent": 4.2},
        movement="M:Still",
        movement_params={"margin": 10.0},
        arrival="M:Late",
        arrival_params={"delay": 3},
        utility="M:Linear",
        utility_params={"lower": -5, "upper": 5},
        scheduler="M:Equal",
    )
    layout = scenarios.load(path)
    assert layout["classes"]["pythonpath"] == [str(folder)]
    core = mobile.make_mobile_core(layout, "ma")  # engine=fast asked: stock given
    user = sys.modules[name]
    assert type(core).__name__ == "MComCore"
    assert isinstance(core.channel, user.Chan) and core.channel.exponent == 4.2
    assert isinstance(core.movement, user.Still) and core.movement.margin == 10.0
    # mobrl's own parameters stay: the movement area, the episode length
    assert (core.movement.width, core.movement.height) == (200, 200)
    assert isinstance(core.arrival, user.Late) and core.arrival.delay == 3
    assert core.arrival.ep_time == 100
    assert isinstance(core.utility, user.Linear) and (core.utility.lower, core.utility.upper) == (
        -5,
        5,
    )
    assert isinstance(core.scheduler, user.Equal)
    core.reset()
    core.step({})  # mobile-env's own step with the user's classes
    assert [ue.ue_id for ue in core.active] == [0]  # the others arrive later (delay 3)


def test_parameters_of_an_init_taking_only_kwargs_are_the_classs_to_judge(module) -> None:
    """A class reading its arguments from `**kwargs` gets them unchecked (their names cannot
    be known); a class naming its arguments has them checked (the misspelt case above)."""
    folder, name = module
    layout = scenarios.load(with_classes(module, channel="M:Kwargs", channel_params={"slope": 2}))
    core = mobile.make_mobile_core(layout, "central")
    assert type(core.channel).__name__ == "Kwargs" and core.channel.exponent == 2


def test_the_example_layout_runs_its_channel_on_the_stock_engine(capsys) -> None:
    env_config = env_config_from(compose([f"scenario.path={EXAMPLE}"]))
    assert env_config["engine"] == "stock"
    assert env_config["sampler"] == "multi_agent"  # UE slots need the fast engine
    assert env_config["layout"]["classes"] == {
        "pythonpath": [str(EXAMPLE.parent)],
        "channel": "logdistance:LogDistance",
        "channel_params": {"exponent": 3.7, "reference_loss_db": 134.9},
    }
    env = make_env(env_config)
    core = find_core(env)
    assert type(core.channel).__name__ == "LogDistance" and core.channel.exponent == 3.7
    env.reset(seed=0)
    env.step({agent: 1 for agent in env.possible_agents})
    env.close()
    notes = [line for line in capsys.readouterr().out.splitlines() if "classes" in line]
    assert notes == [
        "note: layout logdistance names its own mobile-env classes (channel=logdistance:"
        "LogDistance): it runs on mobile-env's stock engine, not mobrl's fast engine."
    ]


def test_budget_and_plot_go_through_the_layouts_own_channel_class() -> None:
    """`mobrl scenarios budget` and `plot` of the example read the layout's LogDistance, not
    mobile-env's Okumura-Hata: its loss by hand, PL0 + 10 n log10(d / d0) between the
    integer positions mobile-env's points hold (PL0 134.9 dB at 1 m, n 3.7)."""
    import math

    import numpy as np

    from mobrl.scenarios import budget as lb
    from mobrl.scenarios.commands import _coverage_depth

    data = scenarios.load(EXAMPLE)
    result = lb.budget_at(data, 50.0, 50.0)
    assert result.header["channel"] == "logdistance:LogDistance"
    assert result.header["own_class"] and not result.thermal
    for row in result.rows:
        s = data["stations"][row["station"]]
        d = max(math.hypot(int(s["x"]) - 50, int(s["y"]) - 50), 1.0)
        assert row["path_loss_db"] == pytest.approx(134.9 + 37.0 * math.log10(d), abs=1e-9)
        snr = 10 ** ((30.0 - row["path_loss_db"]) / 10) / 1e-9
        assert row["sinr_db"] == pytest.approx(10 * math.log10(snr), abs=1e-9)
        assert row["rate_bit_s"] == pytest.approx(9e6 * math.log2(1 + snr) if snr > 2e-8 else 0)
    with pytest.raises(UserError, match="its own channel class"):
        lb.budget_at(data, 50.0, 50.0, transmitting="all")
    # the coverage depth: where the class's SNR is above the threshold, at every grid point
    core = mobile.make_mobile_core(data, "ma", "fast")
    core.reset()
    depth = _coverage_depth(data, core)
    ys = np.linspace(0, 200, depth.shape[0])
    xs = np.linspace(0, 200, depth.shape[1])
    i, j = 40, 70
    by_hand = sum(
        134.9 + 37.0 * math.log10(max(math.hypot(int(s["x"]) - int(xs[j]),
                                                 int(s["y"]) - int(ys[i])), 1.0))
        < 30.0 - 10 * math.log10(2e-8 * 1e-9)
        for s in data["stations"]
    )  # fmt: skip
    assert depth[i, j] == by_hand and depth.max() == 2


def test_the_engine_notice_is_said_once_and_only_when_the_engine_switches(capsys) -> None:
    for _ in range(3):
        env_config_from(compose([f"scenario.path={EXAMPLE}"]))
    mobile.make_mobile_core(scenarios.load(EXAMPLE), "central", "fast")
    assert capsys.readouterr().out.count("names its own mobile-env classes") == 1
    mobile_core._NOTED.clear()
    stock = env_config_from(compose([f"scenario.path={EXAMPLE}", "engine=stock"]))
    assert stock["engine"] == "stock" and capsys.readouterr().out == ""


def test_env_config_rebuilds_the_classes_in_a_process_started_elsewhere(
    module, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module is found on the working directory when the layout loads (no pythonpath
    given); a process started in another folder, without it on PYTHONPATH, builds the same
    env from env_config alone (the folder recorded in the layout's classes)."""
    folder, name = module
    path = write_layout(folder, {"channel": f"{name}:Chan", "channel_params": {"exponent": 3.3}})
    monkeypatch.chdir(folder)
    env_config = env_config_from(compose([f"scenario.path={path}", "env=central"]))
    assert env_config["layout"]["classes"]["pythonpath"] == [str(folder)]
    (tmp_path / "env_config.json").write_text(json.dumps(env_config))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = textwrap.dedent(
        """\
        import json, sys
        from mobrl.envs.factory import make_env
        env = make_env(json.load(open(sys.argv[1])))
        env.reset(seed=0)
        print(type(env).__name__, type(env.channel).__module__, env.channel.exponent)
        """
    )
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "env_config.json")],
        cwd=elsewhere,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["MComCore", name, "3.3"]


def test_settings_that_need_mobile_envs_own_utility_are_refused(module) -> None:
    path = with_classes(module, utility="M:Linear")
    base = [f"scenario.path={path}"]
    for override, fix in (
        ("env.reward=marginal", "Use env.reward=mobile"),
        ("env.obs=topk_gain", "Use env.obs=topk"),
        ("env.sampler=ue_slots", "Use env.sampler=auto or multi_agent"),
    ):
        with pytest.raises(UserError, match=fix) as err:
            env_config_from(compose([*base, override]))
        assert "\n" not in str(err.value)
    env_config = env_config_from(compose([*base, "env.reward=utility", "env.obs=topk"]))
    # capped and oracle score link sets with mobile-env's stock utility: not by default here
    from mobrl.evaluation.policies import baselines_for

    assert baselines_for(env_config) == ["random", "noop", "greedy", "greedy_fill", "full"]
    channel_only = env_config_from(compose([f"scenario.path={EXAMPLE}"]))
    assert "oracle" in baselines_for(channel_only)


def test_a_layout_without_classes_keeps_its_data_and_engine(tmp_path: Path) -> None:
    """No `classes` key appears in a layout that does not give one: its env_config (which
    holds the layout) and engine stay what they were."""
    from mobrl.scenarios.schema import DEFAULTS

    assert "classes" not in DEFAULTS
    small = scenarios.load(scenarios.path_of("small"))
    assert "classes" not in small
    env_config = env_config_from(compose(["scenario=small"]))
    assert list(env_config) == [
        "scenario", "kind", "kwargs", "engine", "render_mode", "id", "mode", "layout", "obs",
        "team_reward", "reward", "policies", "sampler", "seed", "ue_metrics",
    ]  # fmt: skip
    assert env_config["engine"] == "fast" and env_config["sampler"] == "ue_slots"
    assert env_config["layout"] == small
    assert type(find_core(make_env(env_config))).__name__ == "FastCore"
    # a layout shown with every default filled in loads back the same, classes or not
    shown = tmp_path / "shown.yaml"
    shown.write_text(yaml.safe_dump(scenarios.load(EXAMPLE), sort_keys=False))
    assert scenarios.load(shown) == scenarios.load(EXAMPLE)
