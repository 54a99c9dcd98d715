"""`mobrl scenarios budget` and the SINR map of `mobrl scenarios plot`, through `mobrl` processes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from tests.conftest import run_mobrl
from tests.unit.test_budget import shannon_mbit_s, uma_by_hand, uma_los_probability


def test_the_json_holds_the_engines_numbers(tmp_path: Path) -> None:
    """A UE of a core of uma19 (episode seed 5) placed at --at, with stations 0, 3 and 5
    transmitting, has exactly the received powers and SINRs the command wrote."""
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    out = tmp_path / "out" / "budget.json"
    result = run_mobrl(
        "scenarios", "budget", "uma19", "--at", "1400.5,990", "--seed", "5",
        "--transmitting", "0,3,5", "--json", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    written = json.loads(out.read_text())
    head, rows = written["header"], written["rows"]
    assert head["layout"] == "uma19" and head["seed"] == 5 and head["transmitting"] == [0, 3, 5]
    assert (head["channel"], head["interference"], head["x_m"]) == ("uma", "active", 1400.5)
    assert head["frequency_mhz"] == [3500.0] and head["noise_figure_db"] == 9.0
    assert len(rows) == 19 and [r["transmits"] for r in rows].count(True) == 3
    assert rows == sorted(rows, key=lambda r: -r["rx_power_dbm"])  # strongest first
    core = make_mobile_core("uma19", "ma", "fast", {"seed": 5})
    core.reset()
    core._x[0], core._y[0] = 1400.5, 990.0
    core._conn[:] = False
    core._conn[[0, 3, 5], 1] = True  # UE 1's links: under `active`, stations 0, 3, 5 transmit
    core._compute_snr()
    for row in rows:
        b = row["station"]
        assert row["rx_power_mw"] == pytest.approx(core._rx[b, 0], rel=1e-9, abs=0)
        # the engine computes in single precision: its dBm and its mW agree to 1e-4 dB
        assert row["rx_power_dbm"] == pytest.approx(10 * math.log10(core._rx[b, 0]), abs=1e-4)
        assert row["sinr_db"] == pytest.approx(10 * math.log10(core._snr[b, 0]), abs=1e-9)
    # the printed header and table
    text = result.stdout
    assert "link budget of uma19" in text and "episode seed 5" in text
    assert "-174 dBm/Hz + 10 log10(2e+07 Hz) + 9 dB NF = -91.99 dBm" in text
    assert "threshold: SINR -7 dB; spectral efficiency capped at 7.4063 bit/s/Hz" in text
    assert "interferers: stations 0, 3, 5" in text
    for column in ("P(LOS)", "path loss (dB)", "shadowing (dB)", "SINR (dB)", "rate (Mbit/s)"):
        assert column in text
    assert f"json: {out}" in text


def test_a_row_matches_tr_38901_by_hand(tmp_path: Path) -> None:
    """A user's layout in ./scenarios/ (UMa, no shadowing, full buffer): path loss, LOS
    probability, noise, SINR and the capped Shannon rate from the standard's equations."""
    (tmp_path / "scenarios").mkdir()
    layout = {
        "width": 400, "height": 200, "episode_length": 10, "seed": 0,
        "station_defaults": {"bandwidth": 2e7, "frequency": 3500, "tx_power": 46, "height": 25},
        "stations": [{"x": 100, "y": 100}, {"x": 300, "y": 100}],
        "ues": {"count": 2, "height": 1.5, "velocity": 1.5},
        "radio": {"channel": "uma", "shadowing": False, "interference": "full_buffer"},
    }  # fmt: skip
    (tmp_path / "scenarios" / "tiny.yaml").write_text(yaml.safe_dump(layout))
    result = run_mobrl(
        "scenarios", "budget", "tiny", "--at", "230,140", "--json", "b.json", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "b.json").read_text())
    noise_mw = 10 ** ((-174 + 10 * math.log10(20e6) + 9) / 10)
    rx = {}
    for row in written["rows"]:
        s = layout["stations"][row["station"]]
        d2d = math.hypot(230 - s["x"], 140 - s["y"])
        assert row["los_probability"] == pytest.approx(uma_los_probability(d2d), rel=1e-12)
        # the engine's arithmetic is single precision: 1e-4 dB
        assert row["path_loss_db"] == pytest.approx(uma_by_hand(d2d, row["los"]), abs=1e-4)
        rx[row["station"]] = 10 ** ((46 - row["path_loss_db"]) / 10)
    for row in written["rows"]:
        sinr_db = 10 * math.log10(rx[row["station"]] / (noise_mw + rx[1 - row["station"]]))
        assert row["sinr_db"] == pytest.approx(sinr_db, abs=1e-4)
        assert row["rate_mbit_s"] == pytest.approx(shannon_mbit_s(sinr_db), rel=1e-5)
    assert written["header"]["transmitting"] == "all"  # full buffer: the layout's default
    assert "tiny" in result.stdout and "every station (full buffer)" in result.stdout


def test_mobile_envs_channel_prints_its_own_units(tmp_path: Path) -> None:
    result = run_mobrl("scenarios", "budget", "small", "--at", "100,100")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "okumura_hata (mobile-env's default" in text and "no LOS state" in text
    assert "rate (bit/s, mobile-env's unit)" in text and "SNR (dB)" in text
    assert "P(LOS)" not in text and "shadowing (dB)" not in text
    assert "noise: 1e-09 mW = -90.00 dBm" in text and "interferers: none (the SNR)" in text


@pytest.mark.parametrize(
    "args,message",
    [
        (["uma19", "--at", "12;3"], "--at '12;3' is not a position X,Y in metres. Write two"),
        (["uma19", "--at", "3000,10"], "--at 3000,10 is off the map of uma19 (2500 x 2233 m)"),
        (["uma19", "--at", "10,10", "--transmitting", "0,25"], "names station 25, which uma19"),
        (["umaa19", "--at", "10,10"], "unknown scenario 'umaa19'. Did you mean 'uma19'?"),
        (["cartpole", "--at", "1,1"], "'cartpole' is not a mobile-env layout"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = run_mobrl("scenarios", "budget", *args, "--json", "b.json", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().count("\n") == 0 and message in result.stderr, result.stderr
    assert not (tmp_path / "b.json").exists()


def test_plot_of_a_radio_layout_shows_its_sinr_map(tmp_path: Path) -> None:
    """uma19 is drawn over its best-SINR map; the same layout without its radio section keeps
    mobile-env's coverage picture."""
    import imageio.v3 as iio

    (tmp_path / "scenarios").mkdir()
    plain = yaml.safe_load(scenarios.path_of("uma19").read_text())
    del plain["radio"]
    (tmp_path / "scenarios" / "uma19_plain.yaml").write_text(yaml.safe_dump(plain))
    images = {}
    for name in ("uma19", "uma19_plain"):
        out = tmp_path / f"{name}.png"
        result = run_mobrl("scenarios", "plot", name, "--out", str(out), cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        images[name] = iio.imread(out)[..., :3]
    with_map, without = images["uma19"], images["uma19_plain"]
    assert with_map.shape == without.shape == (700, 900, 3)
    assert (with_map != without).any(axis=-1).mean() > 0.3  # the map covers the plot
    # viridis' dark end (its lowest SINRs) is in the picture, not in mobile-env's
    dark = np.array([68, 1, 84])
    assert (np.abs(with_map.astype(int) - dark).sum(axis=-1) < 30).any()
    assert not (np.abs(without.astype(int) - dark).sum(axis=-1) < 30).any()
