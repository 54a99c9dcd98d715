"""`mobrl scenarios generate | import`: site generators, CSV import and projection, the files
they write (loadable, reproducible from the command in their header), the city-scale
built-ins."""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.core.errors import UserError
from mobrl.scenarios.generate import (
    Options,
    generate_command,
    hex_block,
    hex_sites,
    import_command,
    nearest_distances,
    random_sites,
)
from mobrl.scenarios.sitefile import read_sites


def _stations(path: Path) -> np.ndarray:
    return np.array([(s["x"], s["y"]) for s in scenarios.load(path)["stations"]])


def _recorded(path: Path) -> list[str]:
    """The command in a generated file's header, as arguments after `mobrl`."""
    lines = path.read_text().splitlines()
    made = lines.index("# made by (run it again to reproduce this file):")
    args = shlex.split(lines[made + 1].removeprefix("#"))
    assert args[:2] == ["mobrl", "scenarios"]
    return args[1:]


def _run(args: list[str]) -> None:
    from typer.testing import CliRunner

    from mobrl.cli import app

    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("n", [1, 2, 7, 19, 100, 400])
def test_hex_grid_has_the_count_and_inter_site_distance(n: int) -> None:
    sites = hex_sites(n, 90.0)
    assert sites.shape == (n, 2) and len(np.unique(sites.round(6), axis=0)) == n
    if n > 1:  # every site has a neighbour exactly one ISD away, none nearer
        np.testing.assert_allclose(nearest_distances(sites), 90.0)
    # filled ring by ring: the first n of a larger grid, none farther out than a site left out
    rings = hex_sites(3 * 12 * 13 + 1, 90.0)  # 12 whole rings
    np.testing.assert_array_equal(rings[:n], sites)
    assert np.hypot(*sites.T).max() <= np.hypot(*rings[n:].T).min() + 1e-9


def test_hex_block_fills_a_rectangle() -> None:
    block = hex_block(10, 10, 90.0)
    assert block.shape == (100, 2)
    np.testing.assert_allclose(nearest_distances(block), 90.0)
    np.testing.assert_allclose(np.ptp(block, axis=0), [9.5 * 90, 9 * 90 * np.sqrt(3) / 2])


def test_generated_hex_file_has_the_count_and_isd_centred_on_the_map(tmp_path: Path) -> None:
    out = tmp_path / "net.yaml"
    generate_command("hex:19", 120.0, Options("50", out))
    data, xy = scenarios.load(out), _stations(out)
    assert len(xy) == 19 and data["ues"]["count"] == 50
    np.testing.assert_allclose(nearest_distances(xy), 120.0, atol=0.15)  # 0.1 m rounding
    # the map is the extent plus half an ISD each side; the grid sits in its middle
    assert (data["width"], data["height"]) == (4 * 120 + 120, 536)  # ceil(4 * 103.9 + 120)
    np.testing.assert_allclose(xy.mean(axis=0), [data["width"] / 2, data["height"] / 2], atol=1)
    assert data["station_defaults"] == scenarios.DEFAULTS["station_defaults"]
    assert data["movement"]["width"] == data["width"]  # UEs move over the whole map


def test_poisson_count_scales_with_density_and_is_seeded() -> None:
    size = (2000.0, 1000.0)  # 2 km²
    sparse = [len(random_sites("poisson", 50, size, s)) for s in range(20)]
    dense = [len(random_sites("poisson", 400, size, s)) for s in range(20)]
    assert abs(np.mean(sparse) - 100) < 10 and abs(np.mean(dense) - 800) < 30
    a, b = random_sites("poisson", 100, size, 3), random_sites("poisson", 100, size, 3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, random_sites("poisson", 100, size, 4))
    assert ((a >= 0) & (a <= size)).all()
    assert len(random_sites("uniform", 37, size, 0)) == 37


def test_ue_density_and_station_overrides(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    opts = Options("500/km2", out, size="2000x1000", seed=5, station={"tx_power": 36.0})
    generate_command("poisson:100", None, opts)
    data = scenarios.load(out)
    assert data["ues"]["count"] == 1000 and data["seed"] == 5
    assert data["station_defaults"]["tx_power"] == 36 and data["stations"][0]["tx_power"] == 36


def test_generated_file_is_reproduced_by_its_recorded_command(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    _run(["scenarios", "generate", "--sites", "poisson:150", "--size", "800x600", "--ues",
          "40", "--seed", "7", "--bandwidth", "2e7", "--out", str(out)])  # fmt: skip
    args = _recorded(out)
    assert "--seed" in args and "--bandwidth" in args
    again = tmp_path / "again.yaml"
    _run([*args[: args.index("--out")], "--out", str(again)])
    assert scenarios.load(again) == scenarios.load(out)


@pytest.mark.parametrize(("name", "stations", "ues"), [("city", 100, 1000), ("metro", 400, 4000)])
def test_city_scale_builtins_are_what_their_command_makes(
    tmp_path: Path, name: str, stations: int, ues: int
) -> None:
    path = scenarios.path_of(name)
    data = scenarios.load(path)  # validated, reachability included
    assert (len(data["stations"]), data["ues"]["count"]) == (stations, ues)
    np.testing.assert_allclose(nearest_distances(_stations(path)), 90.0, atol=0.15)
    args = _recorded(path)
    assert args[args.index("--out") + 1] == f"scenarios/{name}.yaml"
    again = tmp_path / f"{name}.yaml"
    _run([*args[: args.index("--out")], "--out", str(again)])
    assert again.read_text() == path.read_text().replace(f"scenarios/{name}.yaml", str(again))


def test_city_steps_on_the_fast_engine() -> None:
    """The smaller built-in builds and steps (the larger shares its generator and engine)."""
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    core = make_mobile_core("city", "ma", "fast")
    obs, _ = core.reset()
    assert len(obs) == 1000
    obs, rewards, *_ = core.step({ue: 1 + ue % 100 for ue in obs})
    assert len(rewards) == 1000 and np.isfinite(list(rewards.values())).all()


def test_import_metres_keeps_distances(tmp_path: Path) -> None:
    csv = tmp_path / "sites.csv"
    csv.write_text("X (m), Y (m),tx_power\n1000,5000,30\n1100,5000,33\n1050,5080,30\n")
    out = tmp_path / "sites.yaml"
    import_command(csv, Options("20", out))
    data, xy = scenarios.load(out), _stations(out)
    np.testing.assert_allclose(xy - xy[0], [[0, 0], [100, 0], [50, 80]])
    assert [s["tx_power"] for s in data["stations"]] == [30, 33, 30]
    assert data["ues"]["count"] == 20 and _recorded(out)[:3] == ["scenarios", "import", str(csv)]


@pytest.mark.parametrize(
    ("header", "rows", "expected"),
    [  # 0.01° of latitude ≈ 1,112 m at 50° N; 0.01° of longitude at 60° N ≈ 558 m
        ("lat,lon", ["50.00,8.0", "50.01,8.0"], 1112.0),
        ("Latitude,Longitude", ["-50.00,8.0", "-50.01,8.0"], 1112.0),
        ("radio,mcc,lon,lat,range", ["LTE,1,10.00,60.0,5", "LTE,1,10.01,60.0,5"], 558.0),
        ("lng,lat", ["179.995,0", "-179.995,0"], 1113.2),  # across the antimeridian
    ],
)
def test_import_latlon_projects_to_metres(
    tmp_path: Path, header: str, rows: list[str], expected: float
) -> None:
    csv = tmp_path / "cells.csv"
    csv.write_text("\n".join([header, *rows]) + "\n")
    xy = read_sites(csv).xy
    assert abs(np.hypot(*(xy[1] - xy[0])) - expected) < 1.5


def test_import_merges_cells_of_one_mast(tmp_path: Path) -> None:
    csv = tmp_path / "cells.csv"
    csv.write_text("lat,lon\n52.52,13.40\n52.52,13.40\n52.53,13.40\n")
    sites = read_sites(csv)
    assert len(sites.xy) == 2 and "1 line at an earlier line's position merged" in sites.notes


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty. Give a header line"),
        ("lat,lon\n", "has a header but no stations"),
        ("a,b\n1,2\n", "has no x,y or lat,lon columns (found: a, b)"),
        ("x;y\n1;2\n", "(the file must be comma-separated)"),
        ("lat,lon\n50,8\n50,abc\n", "column lon, line 3 holds 'abc', not a number"),
        ("x,y\n1,\n", "column y, line 2 is empty"),
        ("lat,lon\n95,8\n", "column lat, line 2 holds 95, beyond ±90°"),
        ("x,y,height\n1,2,0\n", "column height, line 2 holds 0; height must be > 0"),
    ],
)
def test_bad_csv_is_a_one_line_error_naming_column_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(text)
    with pytest.raises(UserError) as err:
        import_command(csv, Options("5", tmp_path / "out.yaml"))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize(
    ("sites", "isd", "options", "message"),
    [
        ("hexagon:5", None, {}, "not a known site generator"),
        ("hex:0", None, {}, "--sites 'hex:0': '0' is not a whole number >= 1"),
        ("hex:4x", None, {}, "Write e.g. --sites hex:10x10"),
        ("poisson:-3", None, {"size": "100x100"}, "is not a positive number"),
        ("poisson:100", None, {}, "needs --size WxH"),
        ("uniform:5", 90.0, {"size": "100x100"}, "--isd applies to hex sites"),
        ("hex:100", None, {"size": "100x100"}, "more than --size 100x100"),
        ("hex:7", None, {"size": "100"}, "--size '100' is not WIDTHxHEIGHT"),
        ("hex:7", None, {"size": "0x100"}, "--size '0x100': '0' is not a positive number"),
        ("hex:7", None, {"ues": "many"}, "--ues: 'many' is not a whole number"),
        ("hex:7", None, {"ues": "0/km2"}, "--ues '0/km2': '0' is not a positive number"),
        ("hex:7", None, {"out": "net.yml.txt"}, "is not a .yaml file"),
        ("poisson:0.001", None, {"size": "100x100"}, "drew no station"),
    ],
)
def test_bad_generate_options_name_the_fix(
    tmp_path: Path, sites: str, isd: float | None, options: dict, message: str
) -> None:
    fields = {"ues": "10", "out": "net.yaml", **options}
    fields["out"] = tmp_path / fields["out"]
    with pytest.raises(UserError) as err:
        generate_command(sites, isd, Options(**fields))
    assert message in str(err.value), str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    out = tmp_path / "net.yaml"
    out.write_text("mine\n")
    with pytest.raises(UserError, match="already exists. Add --force to replace it"):
        generate_command("hex:7", None, Options("10", out))
    assert out.read_text() == "mine\n"
    generate_command("hex:7", None, Options("10", out, force=True))
    assert yaml.safe_load(out.read_text())["ues"]["count"] == 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net.yaml"]  # no temporary left


def test_a_layout_too_large_for_the_machine_is_refused_naming_what_fits(
    tmp_path: Path, monkeypatch
) -> None:
    """Before anything starts: one env copy may take at most half the machine's memory; the
    error names the UE count that fits with the layout's stations, and what does fit loads."""
    from mobrl.scenarios import memory

    monkeypatch.setattr(memory, "machine_bytes", lambda: 2 * 2**30)  # a 2 GiB machine
    city = yaml.safe_load((scenarios.builtin_dir() / "city.yaml").read_text())
    fits = (2**30 - memory.BASE_BYTES) // (memory.BYTES_PER_PAIR * 100)
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump({**city, "ues": {**city["ues"], "count": 10 * fits}}))
    with pytest.raises(UserError) as err:
        scenarios.load(big)
    message = str(err.value)
    assert "\n" not in message and "ues.count" in message and "2.0 GiB" in message
    assert f"Use at most {fits:,} UEs with 100 stations" in message
    ok = tmp_path / "ok.yaml"
    ok.write_text(yaml.safe_dump({**city, "ues": {**city["ues"], "count": fits}}))
    assert scenarios.load(ok)["ues"]["count"] == fits
    assert scenarios.summary(scenarios.load(ok))["memory"].endswith(" MB")
