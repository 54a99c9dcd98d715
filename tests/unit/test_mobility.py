"""UE mobility models on arrays: Gauss-Markov's equations and bounds, trace replay, their checks."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

from mobrl.network.mobility import MODELS, MobilityModel, MovementError, model_class
from mobrl.network.mobility.gauss_markov import GaussMarkovMobility
from mobrl.network.mobility.trace import TraceMobility

BIG = 1e6  # a map no UE reaches the edge of in a few steps


class FixedNormals:
    """An rng whose normal draws are given: one step computed by hand."""

    def __init__(self, *rows: list[float]) -> None:
        self.rows = np.array(rows, dtype=float)

    def standard_normal(self, shape: tuple[int, int]) -> np.ndarray:
        assert self.rows.shape == shape
        return self.rows


def _gm(n: int = 3, width: float = BIG, height: float = BIG, velocity: float = 1.5, **params):
    return GaussMarkovMobility(
        {"model": "gauss_markov", **params}, width, height, np.full(n, velocity)
    )


def _run(model: MobilityModel, seed: int, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Every UE's positions over an episode: arrays (steps + 1, n_ues)."""
    rng = np.random.default_rng(seed)
    x, y = model.reset(rng)
    xs, ys = [x.copy()], [y.copy()]
    idx = np.arange(len(x))
    for t in range(steps):
        x[idx], y[idx] = model.step(x, y, idx, t, rng)
        xs.append(x.copy())
        ys.append(y.copy())
    return np.array(xs), np.array(ys)


# -- the registry -------------------------------------------------------------------------


def test_the_registry_names_each_model_by_its_layout_name() -> None:
    assert MODELS == {"gauss_markov": GaussMarkovMobility, "trace": TraceMobility}
    assert "random_waypoint" not in MODELS  # the engine keeps mobile-env's own
    assert model_class("trace") is TraceMobility
    for name, cls in MODELS.items():
        assert issubclass(cls, MobilityModel) and cls.name == name


def test_an_unknown_model_names_the_closest() -> None:
    with pytest.raises(MovementError) as err:
        model_class("gauss_markow")
    assert err.value.key == "movement.model"
    assert "did you mean 'gauss_markov'" in err.value.problem
    assert str(err.value).endswith("Use one of: gauss_markov, trace.")


# -- Gauss-Markov -------------------------------------------------------------------------


def test_reset_places_ues_uniformly_and_starts_at_the_means() -> None:
    model = _gm(n=4, width=200, height=100)
    x, y = model.reset(np.random.default_rng(7))
    same = np.random.default_rng(7)  # the documented draw order: x, y, mean direction
    np.testing.assert_array_equal(x, same.uniform(0, 200, 4))
    np.testing.assert_array_equal(y, same.uniform(0, 100, 4))
    np.testing.assert_array_equal(model.mean_direction, same.uniform(0, 2 * math.pi, 4))
    np.testing.assert_array_equal(model.direction, model.mean_direction)
    np.testing.assert_array_equal(model.speed, [1.5] * 4)


def test_one_step_by_hand() -> None:
    # alpha 0.6: sqrt(1 - 0.36) = 0.8
    model = _gm(n=1, velocity=1.0, alpha=0.6, speed_std=0.5, direction_std=0.25)
    model.speed[:] = 2.0
    model.direction[:] = 0.0
    model.mean_direction[:] = math.pi / 2
    x, y = np.array([500.0]), np.array([600.0])
    nx, ny = model.step(x, y, np.array([0]), 0, FixedNormals([1.0], [-2.0]))
    speed = 0.6 * 2.0 + 0.4 * 1.0 + 0.8 * 0.5 * 1.0  # = 2.0
    direction = 0.6 * 0.0 + 0.4 * math.pi / 2 + 0.8 * 0.25 * -2.0  # = 0.2 pi - 0.4
    assert model.speed[0] == pytest.approx(2.0) == pytest.approx(speed)
    assert model.direction[0] == pytest.approx(direction)
    assert nx[0] == pytest.approx(500.0 + 2.0 * math.cos(0.2 * math.pi - 0.4))
    assert ny[0] == pytest.approx(600.0 + 2.0 * math.sin(0.2 * math.pi - 0.4))
    assert model.mean_direction[0] == math.pi / 2  # no bound reached: the mean stays


def test_two_steps_from_a_seed_follow_the_equations() -> None:
    alpha, s_std, d_std = 0.75, 0.3, 0.5
    model = _gm(n=5, alpha=alpha, speed_std=s_std, direction_std=d_std)
    xs, ys = _run(model, seed=3, steps=2)
    draws = np.random.default_rng(3)
    draws.uniform(0, BIG, 5), draws.uniform(0, BIG, 5)
    mean = draws.uniform(0, 2 * math.pi, 5)
    c = math.sqrt(1 - alpha**2)
    speed, direction = np.full(5, 1.5), mean.copy()
    for t in range(2):
        w = draws.standard_normal((2, 5))
        speed = alpha * speed + (1 - alpha) * 1.5 + c * s_std * w[0]
        direction = alpha * direction + (1 - alpha) * mean + c * d_std * w[1]
        np.testing.assert_allclose(xs[t + 1], xs[t] + speed * np.cos(direction), rtol=1e-12)
        np.testing.assert_allclose(ys[t + 1], ys[t] + speed * np.sin(direction), rtol=1e-12)


def test_alpha_one_keeps_speed_and_direction() -> None:
    model = _gm(n=4, alpha=1.0, speed_std=2.0, direction_std=2.0)
    xs, ys = _run(model, seed=1, steps=10)
    heading = model.mean_direction
    np.testing.assert_array_equal(model.speed, [1.5] * 4)
    np.testing.assert_array_equal(model.direction, heading)
    np.testing.assert_allclose(xs[10] - xs[0], 15 * np.cos(heading), rtol=1e-9)
    np.testing.assert_allclose(ys[10] - ys[0], 15 * np.sin(heading), rtol=1e-9)


def test_alpha_zero_draws_around_the_means_without_memory() -> None:
    model = _gm(n=6, alpha=0.0, speed_std=0.4, direction_std=0.3)
    rng = np.random.default_rng(5)
    x, y = model.reset(rng)
    model.speed[:] = 99.0  # the previous values play no part
    model.direction[:] = 99.0
    draws = np.random.default_rng(5)
    draws.uniform(size=18)  # reset's x, y and mean directions
    w = draws.standard_normal((2, 6))
    model.step(x, y, np.arange(6), 0, rng)
    np.testing.assert_allclose(model.speed, np.maximum(1.5 + 0.4 * w[0], 0), rtol=1e-12)
    np.testing.assert_allclose(model.direction, model.mean_direction + 0.3 * w[1], rtol=1e-12)


def test_the_speed_never_turns_negative() -> None:
    model = _gm(n=1, velocity=0.1, alpha=0.0, speed_std=1.0)
    model.reset(np.random.default_rng(0))
    x, y = np.array([5e5]), np.array([5e5])
    nx, ny = model.step(x, y, np.array([0]), 0, FixedNormals([-3.0], [0.0]))
    assert model.speed[0] == 0.0 and (nx[0], ny[0]) == (5e5, 5e5)


@pytest.mark.parametrize(
    "start,heading,after,new_heading",
    [
        ((199.5, 50.0), 0.0, (198.5, 50.0), math.pi),  # the east bound
        ((0.5, 50.0), math.pi, (1.5, 50.0), 0.0),  # the west bound
        ((100.0, 0.5), -math.pi / 2, (100.0, 1.5), math.pi / 2),  # the south bound
        ((100.0, 99.5), math.pi / 2, (100.0, 98.5), -math.pi / 2),  # the north bound
        ((199.0, 99.0), math.pi / 4, (200 - (199 + 2**0.5 - 200), 100 - (99 + 2**0.5 - 100)),
         -3 * math.pi / 4),  # a corner: both components reverse
    ],
)  # fmt: skip
def test_a_bound_mirrors_the_step_and_the_mean_direction(start, heading, after, new_heading):
    x, y = start
    model = _gm(n=1, width=200, height=100, velocity=2.0, alpha=1.0)
    model.reset(np.random.default_rng(0))
    model.direction[:] = model.mean_direction[:] = heading
    nx, ny = model.step(np.array([x]), np.array([y]), np.array([0]), 0, FixedNormals([0], [0]))
    assert (nx[0], ny[0]) == pytest.approx(after)
    assert math.cos(model.mean_direction[0]) == pytest.approx(math.cos(new_heading), abs=1e-12)
    assert math.sin(model.mean_direction[0]) == pytest.approx(math.sin(new_heading), abs=1e-12)
    assert model.direction[0] == model.mean_direction[0]  # as ns-3: on from the mirrored mean
    assert -math.pi <= model.mean_direction[0] < math.pi


def test_a_step_longer_than_the_map_folds_back_inside() -> None:
    model = _gm(n=1, width=10, height=10, velocity=25.0, alpha=1.0)
    model.reset(np.random.default_rng(0))
    model.direction[:] = model.mean_direction[:] = 0.0
    nx, ny = model.step(np.array([4.0]), np.array([5.0]), np.array([0]), 0, FixedNormals([0], [0]))
    # 4 + 25 = 29: off the east bound at 10 (-> 9 back), the west at 0 (-> 9 on): x = 9, heading
    # east again after two crossings
    assert (nx[0], ny[0]) == pytest.approx((9.0, 5.0))
    assert model.mean_direction[0] == 0.0


def test_ues_stay_inside_the_map_over_many_steps() -> None:
    model = _gm(n=40, width=60, height=20, velocity=4.0, alpha=0.5, speed_std=3.0)
    xs, ys = _run(model, seed=11, steps=2000)
    assert xs.min() >= 0 and xs.max() <= 60 and ys.min() >= 0 and ys.max() <= 20
    assert np.abs(model.mean_direction).max() <= math.pi + 1e-12  # no drift by turns


def test_the_same_seed_gives_the_same_trajectory() -> None:
    first = _run(_gm(n=8, width=200, height=200), seed=4, steps=300)
    again = _run(_gm(n=8, width=200, height=200), seed=4, steps=300)
    other = _run(_gm(n=8, width=200, height=200), seed=5, steps=300)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other[0])


def test_the_mean_speed_of_a_long_run_is_the_velocity() -> None:
    model = _gm(n=50, width=500, height=500, velocity=1.5)
    rng = np.random.default_rng(2)
    x, y = model.reset(rng)
    idx = np.arange(50)
    speeds = []
    for t in range(2000):
        x[idx], y[idx] = model.step(x, y, idx, t, rng)
        speeds.append(model.speed.copy())
    speeds = np.array(speeds)
    assert speeds.mean() == pytest.approx(1.5, abs=0.02)
    assert speeds.std() == pytest.approx(0.2, abs=0.02)  # speed_std is the long-run spread


def test_only_the_ues_stepped_move() -> None:
    model = _gm(n=5)
    rng = np.random.default_rng(0)
    x, y = model.reset(rng)
    before = (model.speed.copy(), model.direction.copy())
    nx, ny = model.step(x, y, np.array([1, 3]), 0, rng)
    assert nx.shape == ny.shape == (2,)
    untouched = [0, 2, 4]
    np.testing.assert_array_equal(model.speed[untouched], before[0][untouched])
    np.testing.assert_array_equal(model.direction[untouched], before[1][untouched])
    assert model.step(x, y, slice(None), 1, rng)[0].shape == (5,)  # the engine's "all of them"


@pytest.mark.parametrize(
    "params,message",
    [
        ({"alpha": 1.5}, "movement.alpha must be in [0, 1], got 1.5. Fix the value."),
        ({"alpha": -0.1}, "movement.alpha must be in [0, 1], got -0.1. Fix the value."),
        ({"speed_std": -1}, "movement.speed_std must be >= 0, got -1. Fix the value."),
        ({"direction_std": -0.5}, "movement.direction_std must be >= 0, got -0.5."),
        ({"alpha": "high"}, "movement.alpha must be a finite number, got 'high'."),
        ({"alpha": True}, "movement.alpha must be a finite number, got True."),
        ({"speed_std": float("nan")}, "movement.speed_std must be a finite number, got nan."),
        ({"alfa": 0.5}, "movement.alfa is not a key of the gauss_markov model (did you mean "
                        "'alpha'?). Use one of: model, width, height, alpha, speed_std, "
                        "direction_std."),
    ],
)  # fmt: skip
def test_gauss_markov_checks(params: dict, message: str) -> None:
    with pytest.raises(MovementError) as err:
        GaussMarkovMobility.check(params, 200, 100, 5, None)
    assert str(err.value).startswith(message)
    assert err.value.key == message.split()[0]
    with pytest.raises(MovementError):  # building one checks too
        _gm(**params)


def test_a_number_yaml_read_as_text_is_taken() -> None:
    GaussMarkovMobility.check({"speed_std": "1e-1"}, 200, 100, 5, None)
    assert _gm(speed_std="1e-1").speed_std == 0.1


def test_the_error_carries_its_parts() -> None:
    with pytest.raises(MovementError) as err:
        GaussMarkovMobility.check({"alpha": 1.5}, 200, 100, 5, None)
    assert (err.value.key, err.value.problem, err.value.fix) == (
        "movement.alpha",
        "must be in [0, 1], got 1.5",
        "Fix the value.",
    )
    assert isinstance(err.value, ValueError)


# -- traces -------------------------------------------------------------------------------

FCD = """<?xml version="1.0" encoding="UTF-8"?>
<fcd-export xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
    <timestep time="0.00">
        <vehicle id="veh0" x="10.00" y="10.00" angle="90.00" type="car" speed="5.00" pos="1.0" lane="e_0" slope="0.00"/>
    </timestep>
    <timestep time="2.00">
        <person id="ped0" x="50.00" y="40.00" angle="0.00" speed="1.20" pos="0.0" edge="e" slope="0.00"/>
        <vehicle id="veh0" x="20.00" y="30.00" angle="90.00" type="car" speed="5.00" pos="11.0" lane="e_0" slope="0.00"/>
        <vehicle id="veh1" x="0.00" y="0.00" angle="90.00" type="car" speed="5.00" pos="0.0" lane="e_0" slope="0.00"/>
    </timestep>
    <timestep time="4.00">
        <person id="ped0" x="52.00" y="40.00" angle="0.00" speed="1.20" pos="2.0" edge="e" slope="0.00"/>
        <vehicle id="veh1" x="8.00" y="4.00" angle="90.00" type="car" speed="5.00" pos="10.0" lane="e_0" slope="0.00"/>
    </timestep>
</fcd-export>
"""  # as SUMO writes it: one element a line

# the same samples as FCD, rows out of time order, an extra column
CSV = """id,time,x,y,speed
veh0,2,20,30,5
veh0,0,10,10,5
ped0,2,50,40,1.2
veh1,2,0,0,5

ped0,4,52,40,1.2
veh1,4,8,4,5
"""


def _trace(
    tmp_path: Path, text: str = FCD, name: str = "fcd.xml", n: int = 3, **params
) -> TraceMobility:
    (tmp_path / name).write_text(text)
    params = {"model": "trace", "file": name, **params}
    return TraceMobility(params, 100, 50, np.full(n, 1.5), base_dir=tmp_path)


def _positions(model: TraceMobility, steps: int) -> list[list[tuple[float, float]]]:
    """Each UE's (x, y) at reset and after each step."""
    rng = np.random.default_rng(0)
    x, y = model.reset(rng)
    out = [list(zip(x.tolist(), y.tolist()))]
    idx = np.arange(len(x))
    for t in range(steps):
        x[idx], y[idx] = model.step(x, y, idx, t, rng)
        out.append(list(zip(x.tolist(), y.tolist())))
    return out


# UEs follow the ids in order of first appearance: veh0 (time 0), ped0 (time 2, before veh1 in
# the file), veh1; one row per step from time 0
EXPECTED = [
    [(10, 10), (50, 40), (0, 0)],  # time 0: ped0 and veh1 held at their first samples
    [(15, 20), (50, 40), (0, 0)],  # time 1: veh0 halfway between its samples
    [(20, 30), (50, 40), (0, 0)],
    [(20, 30), (51, 40), (4, 2)],  # time 3: veh0 held at its last sample
    [(20, 30), (52, 40), (8, 4)],
    [(20, 30), (52, 40), (8, 4)],  # past the file's end: everyone held
    [(20, 30), (52, 40), (8, 4)],
]


@pytest.mark.parametrize("name,text", [("fcd.xml", FCD), ("trace.csv", CSV)])
def test_a_trace_is_replayed_interpolated_and_held(tmp_path: Path, name: str, text: str) -> None:
    model = _trace(tmp_path, text, name)
    assert model.ids == ("veh0", "ped0", "veh1")
    assert _positions(model, 6) == EXPECTED


def test_gzipped_traces_are_read(tmp_path: Path) -> None:
    for name, text in (("fcd.xml.gz", FCD), ("trace.csv.gz", CSV)):
        (tmp_path / name).write_bytes(gzip.compress(text.encode()))
        model = TraceMobility({"file": name}, 100, 50, np.full(3, 1.5), base_dir=tmp_path)
        assert _positions(model, 6) == EXPECTED


def test_start_shifts_the_clock(tmp_path: Path) -> None:
    model = _trace(tmp_path, start=1.5)
    positions = _positions(model, 1)
    assert positions[0][0] == (17.5, 25.0)  # veh0 at time 1.5
    assert positions[1][2] == (2.0, 1.0)  # veh1 at time 2.5


def test_only_the_first_ids_are_followed(tmp_path: Path) -> None:
    model = _trace(tmp_path, n=2)
    assert model.ids == ("veh0", "ped0")
    assert _positions(model, 4)[4] == [(20, 30), (52, 40)]


def test_a_trace_uses_no_randomness_and_steps_some_ues(tmp_path: Path) -> None:
    model = _trace(tmp_path)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    x, y = model.reset(rng)
    nx, ny = model.step(x, y, np.array([2]), 2, rng)
    assert (nx.tolist(), ny.tolist()) == ([4.0], [2.0])
    assert rng.bit_generator.state == state


def test_an_absolute_path_ignores_the_layout_folder(tmp_path: Path) -> None:
    (tmp_path / "fcd.xml").write_text(FCD)
    params = {"file": str(tmp_path / "fcd.xml")}
    model = TraceMobility(params, 100, 50, np.full(3, 1.5), base_dir=tmp_path / "elsewhere")
    assert model.ids == ("veh0", "ped0", "veh1")


def _check_error(tmp_path: Path, params: dict, n_ues: int = 3) -> MovementError:
    with pytest.raises(MovementError) as err:
        TraceMobility.check({"model": "trace", **params}, 100, 50, n_ues, tmp_path)
    return err.value


def test_trace_checks_the_file_and_start(tmp_path: Path) -> None:
    (tmp_path / "fcd.xml").write_text(FCD)
    err = _check_error(tmp_path, {})
    assert (err.key, err.problem) == ("movement.file", "is missing")
    err = _check_error(tmp_path, {"file": "gone.xml"})
    assert err.key == "movement.file"
    assert str(err) == (
        f"movement.file '{tmp_path / 'gone.xml'}' does not exist. Check the path (a relative "
        "one is read from the layout file's folder)."
    )
    err = _check_error(tmp_path, {"file": "fcd.txt"})
    assert str(err) == (
        f"movement.file '{tmp_path / 'fcd.txt'}' has the extension '.txt', which is no trace "
        "format. Use a SUMO FCD .xml file or an id,time,x,y .csv file (either may be .gz)."
    )
    err = _check_error(tmp_path, {"file": 3})
    assert err.problem == "must be the name of a trace file, got 3"
    err = _check_error(tmp_path, {"file": "fcd.xml", "start": -1})
    assert str(err) == "movement.start must be >= 0, got -1. Fix the value."
    err = _check_error(tmp_path, {"file": "fcd.xml", "begin": 0})
    assert err.key == "movement.begin" and "Use one of: model, width, height, file, start" in str(
        err
    )


def test_trace_checks_the_counts_and_the_map(tmp_path: Path) -> None:
    (tmp_path / "fcd.xml").write_text(FCD)
    err = _check_error(tmp_path, {"file": "fcd.xml"}, n_ues=5)
    assert str(err) == (
        f"movement.file '{tmp_path / 'fcd.xml'}' has 3 trace ids for 5 UEs. Set ues.count <= 3, "
        "or add traces to the file."
    )
    (tmp_path / "far.csv").write_text("id,time,x,y\na,0,1,1\nb,0,2,2\nb,7.5,120,20\n")
    err = _check_error(tmp_path, {"file": "far.csv"}, n_ues=2)
    assert err.key == "movement.file"
    assert err.problem.endswith("trace 'b' is at (120, 20) at time 7.5, outside the 100 x 50 m map")
    assert "Enlarge width/height" in err.fix
    TraceMobility.check({"file": "far.csv"}, 100, 50, 1, tmp_path)  # b not followed: fine


@pytest.mark.parametrize(
    "name,text,problem",
    [
        ("bad.xml", "<fcd-export>\n<timestep time='0'>\n</fcd-export>\n",
         "is not valid XML (line 3, column 3: mismatched tag)"),
        ("empty.xml", "", "is not valid XML (line 1, column 1: no element found)"),
        ("net.xml", "<net><edge id='e'/></net>",
         "is no SUMO FCD export (its root is <net>, not <fcd-export>)"),
        ("nox.xml", "<fcd-export><timestep time='0'><vehicle id='v' y='1'/></timestep>"
         "</fcd-export>", ": <vehicle id='v'> at time 0 has no x"),
        ("badx.xml", "<fcd-export><timestep time='0'><person id='p' x='a' y='1'/></timestep>"
         "</fcd-export>", ": <person id='p'> at time 0 has x='a', not a number"),
        ("none.xml", "<fcd-export><timestep time='0'/></fcd-export>", "holds no samples"),
        ("header.csv", "id,t,x,y\na,0,1,1\n", "line 1: the header id,t,x,y lacks time"),
        ("short.csv", "id,time,x,y\na,0,1,1\na,1,2\n", "line 3 has 3 fields, the header 4"),
        ("word.csv", "id,time,x,y\na,0,1,1\na,one,2,2\n", ": line 3 has time='one', not a number"),
        ("noid.csv", "id,time,x,y\n,0,1,1\n", "line 2 has no id"),
        ("twice.csv", "id,time,x,y\na,0,1,1\na,0,2,2\n", "has two samples of 'a' at time 0"),
        ("only.csv", "id,time,x,y\n", "holds no samples"),
    ],
)  # fmt: skip
def test_trace_checks_the_contents(tmp_path: Path, name: str, text: str, problem: str) -> None:
    (tmp_path / name).write_text(text)
    err = _check_error(tmp_path, {"file": name}, n_ues=1)
    assert err.key == "movement.file"
    assert err.problem.startswith(f"'{tmp_path / name}'")
    assert problem in err.problem, err.problem
    with pytest.raises(MovementError):  # building one checks too
        TraceMobility({"file": name}, 100, 50, np.ones(1), base_dir=tmp_path)


def test_an_edited_trace_is_read_again(tmp_path: Path) -> None:
    assert _trace(tmp_path).ids == ("veh0", "ped0", "veh1")
    (tmp_path / "fcd.xml").write_text(FCD.replace("veh1", "bus7") + "\n")  # another size
    model = TraceMobility({"file": "fcd.xml"}, 100, 50, np.full(3, 1.5), base_dir=tmp_path)
    assert model.ids == ("veh0", "ped0", "bus7")
