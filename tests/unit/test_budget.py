"""Link budgets and SINR maps (mobrl.scenarios.budget, sinr_maps): the engine's numbers, TR 38.901
by hand."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.core.errors import UserError
from mobrl.scenarios import budget as lb
from mobrl.scenarios import sinr_maps
from mobrl.scenarios.kinds.mobile import make_mobile_core

C = 299_792_458.0


def tiny_layout(tmp_path: Path, radio: dict, stations: list[dict], name: str = "tiny") -> dict:
    """A validated 400 x 200 m layout with the given stations (3.5 GHz, 20 MHz, 46 dBm, 25 m)."""
    data = {
        "width": 400, "height": 200, "episode_length": 10, "seed": 0,
        "station_defaults": {"bandwidth": 2e7, "frequency": 3500, "tx_power": 46, "height": 25},
        "stations": stations,
        "ues": {"count": 2, "height": 1.5, "velocity": 1.5},
        "radio": radio,
    }  # fmt: skip
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return scenarios.load(path)


def uma_by_hand(d2d: float, los: bool, fc_ghz: float = 3.5, h_bs: float = 25.0) -> float:
    """TR 38.901 Table 7.4.1-1 UMa path loss (dB), hUT = 1.5 m, hE = 1 m."""
    h_ut = 1.5
    d3d = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    d_bp = 4 * (h_bs - 1.0) * (h_ut - 1.0) * fc_ghz * 1e9 / C
    if d2d <= d_bp:
        pl_los = 28.0 + 22 * math.log10(d3d) + 20 * math.log10(fc_ghz)
    else:
        pl_los = (
            28.0 + 40 * math.log10(d3d) + 20 * math.log10(fc_ghz)
            - 9 * math.log10(d_bp**2 + (h_bs - h_ut) ** 2)
        )  # fmt: skip
    if los:
        return pl_los
    pl_nlos = 13.54 + 39.08 * math.log10(d3d) + 20 * math.log10(fc_ghz) - 0.6 * (h_ut - 1.5)
    return max(pl_los, pl_nlos)


def uma_los_probability(d2d: float) -> float:
    """TR 38.901 Table 7.4.2-1 UMa, hUT <= 13 m."""
    return 1.0 if d2d <= 18 else 18 / d2d + math.exp(-d2d / 63) * (1 - 18 / d2d)


def shannon_mbit_s(sinr_db: float, bw_mhz: float = 20.0, threshold_db: float = -7.0) -> float:
    if sinr_db <= threshold_db:
        return 0.0
    return bw_mhz * min(math.log2(1 + 10 ** (sinr_db / 10)), 7.4063)


def test_uma_rows_match_tr_38901_by_hand(tmp_path: Path) -> None:
    radio = {"channel": "uma", "shadowing": False, "interference": "full_buffer"}
    data = tiny_layout(tmp_path, radio, [{"x": 100, "y": 100}, {"x": 300, "y": 100}])
    noise_dbm = -174 + 10 * math.log10(20e6) + 9  # -91.99 dBm
    for x, y in [(120.0, 100.0), (200.0, 130.0), (330.5, 20.25)]:
        b = lb.budget_at(data, x, y)
        assert b.header["transmitting"] == "all" and b.header["noise_dbm"] == [
            pytest.approx(noise_dbm, abs=1e-12)
        ]
        rx_mw = {}
        for row in b.rows:
            s = data["stations"][row["station"]]
            d2d = math.hypot(s["x"] - x, s["y"] - y)
            assert row["distance_2d_m"] == pytest.approx(d2d, rel=1e-12)
            assert row["distance_3d_m"] == pytest.approx(math.hypot(d2d, 23.5), rel=1e-12)
            assert row["los_probability"] == pytest.approx(uma_los_probability(d2d), rel=1e-12)
            # the engine's arithmetic is single precision: 1e-4 dB
            assert row["path_loss_db"] == pytest.approx(uma_by_hand(d2d, row["los"]), abs=1e-4)
            assert row["shadowing_db"] == 0.0
            assert row["rx_power_dbm"] == pytest.approx(46 - row["path_loss_db"], abs=1e-4)
            rx_mw[row["station"]] = 10 ** (row["rx_power_dbm"] / 10)
        for row in b.rows:
            other = rx_mw[1 - row["station"]]  # full buffer: the other station interferes
            sinr = rx_mw[row["station"]] / (10 ** (noise_dbm / 10) + other)
            assert row["sinr_db"] == pytest.approx(10 * math.log10(sinr), abs=1e-4)
            assert row["rate_mbit_s"] == pytest.approx(shannon_mbit_s(row["sinr_db"]), rel=1e-12)
        assert [r["rx_power_dbm"] for r in b.rows] == sorted(
            (r["rx_power_dbm"] for r in b.rows), reverse=True
        )


def test_a_strong_link_is_capped_at_the_highest_spectral_efficiency(tmp_path: Path) -> None:
    data = tiny_layout(tmp_path, {"channel": "uma"}, [{"x": 100, "y": 100}])
    (row,) = lb.budget_at(data, 115.0, 100.0).rows  # 15 m: 57 dB SNR even in NLOS
    assert row["sinr_db"] > 10 * math.log10(2**7.4063 - 1)
    assert row["rate_mbit_s"] == pytest.approx(20 * 7.4063, rel=1e-15)
    assert row["transmits"] is False  # interference none: the SNR


def _core_after(data: dict, seed: int, x: float, y: float, on: list[int] | str) -> object:
    """A core of `data` (episode `seed`) whose UE 0 stands at (x, y) and whose UE 1 holds
    links to the stations `on` (interference active: they transmit; "all": every one)."""
    core = make_mobile_core(data, "ma", "fast", {"seed": seed})
    core.reset()
    core._x[0], core._y[0] = x, y
    core._conn[:] = False
    core._conn[slice(None) if on == "all" else on, 1] = True
    core._compute_snr()
    return core


@pytest.mark.parametrize(
    "name,x,y,transmitting",
    [
        ("uma19", 1300.25, 1100.5, "all"),
        ("uma19", 17.0, 2201.0, [0, 3, 5]),
        ("uma19", 1250.0, 1120.0, "none"),  # 3.5 m from station 0: below 10 m
        ("umi_dense", 512.5, 400.0, "all"),
    ],
)
def test_rows_equal_the_engines_numbers(name: str, x: float, y: float, transmitting) -> None:
    """A UE of a core at (x, y), with the same stations transmitting, has exactly the
    budget's received powers and SINRs."""
    data = scenarios.load(scenarios.path_of(name))
    b = lb.budget_at(data, x, y, seed=7, transmitting=transmitting)
    core = _core_after(data, 7, x, y, [] if transmitting == "none" else transmitting)
    by_station = {r["station"]: r for r in b.rows}
    for s in range(len(data["stations"])):
        row = by_station[s]
        assert row["rx_power_mw"] == pytest.approx(core._rx[s, 0], rel=1e-12, abs=0)
        assert row["sinr_db"] == pytest.approx(10 * np.log10(core._snr[s, 0]), abs=1e-9)
        assert row["above_threshold"] == bool(core._reach[s, 0])
    if x == 1250.0:
        assert any("read at 10 m" in n for n in b.notes)


def test_mobile_envs_channel_gives_its_snr_and_rates() -> None:
    """okumura_hata (no radio section): mobile-env's SNR of the fast engine, its rate units."""
    from mobrl.network import channel

    data = scenarios.load(scenarios.path_of("small"))
    b = lb.budget_at(data, 100.7, 99.2)
    assert b.header["transmitting"] == "none" and "mobile-env" in b.header["rate_unit"]
    assert "los" not in b.rows[0] and "shadowing_db" not in b.rows[0]
    core = _core_after(data, 0, 100.7, 99.2, [])
    for row in b.rows:
        s = data["stations"][row["station"]]
        assert 10 ** (row["sinr_db"] / 10) == pytest.approx(core._snr[row["station"], 0], 1e-12)
        t1, t2 = channel.loss_terms(2500.0, 50.0, 1.5)
        d = math.hypot(int(s["x"]) - 100, int(s["y"]) - 99)  # truncated positions
        assert row["path_loss_db"] == pytest.approx(t1 + t2 * math.log10(d), abs=1e-9)
        snr = 10 ** (row["sinr_db"] / 10)
        full = 9e6 * math.log2(1 + snr) if snr > 2e-8 else 0.0
        assert row["rate_bit_s"] == pytest.approx(full, rel=1e-12)


def test_the_seed_fixes_the_episodes_fields() -> None:
    data = scenarios.load(scenarios.path_of("uma19"))
    one = lb.budget_at(data, 900.0, 900.0, seed=1)
    again = lb.budget_at(data, 900.0, 900.0, seed=1)
    other = lb.budget_at(data, 900.0, 900.0, seed=2)
    assert one.rows == again.rows
    assert [r["shadowing_db"] for r in one.rows] != [r["shadowing_db"] for r in other.rows]


@pytest.mark.parametrize(
    "text,message",
    [
        ("12;3", "--at '12;3' is not a position X,Y"),
        ("1,2,3", "is not a position X,Y"),
        ("inf,3", "is not a position X,Y"),
        ("", "is not a position X,Y"),
    ],
)
def test_bad_positions(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        lb.parse_at(text)


def test_positions_and_interferers_are_checked() -> None:
    assert lb.parse_at(" 120.5, 80") == (120.5, 80.0)
    data = {"width": 200, "height": 100}
    lb.check_on_map(200.0, 0.0, data, "x")  # the edges are on the map
    with pytest.raises(UserError, match=r"--at 201,5 is off the map of x \(200 x 100 m\)"):
        lb.check_on_map(201.0, 5.0, data, "x")
    assert lb.parse_transmitting(None, 3, "x") is None
    assert lb.parse_transmitting("ALL", 3, "x") == "all"
    assert lb.parse_transmitting("2, 0,2", 3, "x") == [0, 2]
    with pytest.raises(UserError, match="names station 3, which x does not have"):
        lb.parse_transmitting("0,3", 3, "x")
    with pytest.raises(UserError, match="neither all, none nor station ids"):
        lb.parse_transmitting("some", 3, "x")


def test_sinr_map_is_the_best_rows_sinr_at_its_grid_points() -> None:
    core = make_mobile_core("uma19", "ma", "fast", {"seed": 4})
    core.reset()
    assert sinr_maps.shows_sinr_map(core)
    smap = sinr_maps.sinr_map(core, points=21)
    assert smap.values_db.shape == (21, 21) and smap.extent == (0.0, 2500.0, 0.0, 2233.0)
    assert smap.threshold_db == -7.0
    for i, j in [(0, 0), (10, 10), (20, 3), (7, 19)]:
        x, y = j * 2500.0 / 20, i * 2233.0 / 20
        best = lb.link_budget(core, x, y, "all").rows
        expected = max(r["sinr_db"] for r in best)
        assert smap.values_db[i, j] == pytest.approx(expected, abs=1e-4)  # float32
    # mobile-env's model and a radio section that keeps its SNR keep the coverage drawing
    stock = make_mobile_core("small", "ma", "fast")
    stock.reset()
    assert not sinr_maps.shows_sinr_map(stock)


def test_sinr_map_of_many_stations_is_computed_in_chunks(monkeypatch) -> None:
    core = make_mobile_core("umi_dense", "ma", "fast")
    core.reset()
    whole = sinr_maps.sinr_map(core, points=30)
    monkeypatch.setattr(
        sinr_maps, "_MAP_PAIRS", 19 * 7
    )  # 7 points at a time, the last chunk padded
    np.testing.assert_array_equal(sinr_maps.sinr_map(core, points=30).values_db, whole.values_db)
