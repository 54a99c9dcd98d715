"""Radio models (mobrl.radio): path loss and LOS probability against TR 38.901's equations
computed here by hand with `math`, free space against Friis, okumura_hata against mobile-env."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from mobrl.radio import (
    CHANNELS,
    SPEED_OF_LIGHT,
    channel,
    los_probability,
    path_loss_db,
    shadowing_sigma_db,
    thermal_noise_dbm,
)

C = 299_792_458.0  # m/s, written out again: the references share nothing with mobrl.radio
FREQUENCIES_GHZ = (2.0, 3.5, 6.0, 28.0)
DISTANCES_M = (10.0, 35.0, 120.0, 400.0, 1000.0, 2500.0, 4900.0)


# --- scalar references, straight from TR 38.901 V17.0.0 Table 7.4.1-1 and Table 7.4.2-1 ---


def _breakpoint(fc_ghz: float, h_bs: float, h_ut: float) -> float:
    return 4.0 * (h_bs - 1.0) * (h_ut - 1.0) * fc_ghz * 1e9 / C  # hE = 1 m, fc in Hz


def ref_uma(d2d: float, fc: float, h_bs: float, h_ut: float, los: bool) -> float:
    d3d = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    bp = _breakpoint(fc, h_bs, h_ut)
    if d2d <= bp:
        pl_los = 28.0 + 22.0 * math.log10(d3d) + 20.0 * math.log10(fc)
    else:
        pl_los = (
            28.0
            + 40.0 * math.log10(d3d)
            + 20.0 * math.log10(fc)
            - 9.0 * math.log10(bp**2 + (h_bs - h_ut) ** 2)
        )
    if los:
        return pl_los
    nlos = 13.54 + 39.08 * math.log10(d3d) + 20.0 * math.log10(fc) - 0.6 * (h_ut - 1.5)
    return max(pl_los, nlos)


def ref_umi(d2d: float, fc: float, h_bs: float, h_ut: float, los: bool) -> float:
    d3d = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    bp = _breakpoint(fc, h_bs, h_ut)
    if d2d <= bp:
        pl_los = 32.4 + 21.0 * math.log10(d3d) + 20.0 * math.log10(fc)
    else:
        pl_los = (
            32.4
            + 40.0 * math.log10(d3d)
            + 20.0 * math.log10(fc)
            - 9.5 * math.log10(bp**2 + (h_bs - h_ut) ** 2)
        )
    if los:
        return pl_los
    nlos = 35.3 * math.log10(d3d) + 22.4 + 21.3 * math.log10(fc) - 0.3 * (h_ut - 1.5)
    return max(pl_los, nlos)


def ref_los_uma(d2d: float, h_ut: float) -> float:
    if d2d <= 18.0:
        return 1.0
    c_prime = 0.0 if h_ut <= 13.0 else ((h_ut - 13.0) / 10.0) ** 1.5
    p = (18.0 / d2d + math.exp(-d2d / 63.0) * (1.0 - 18.0 / d2d)) * (
        1.0 + c_prime * 5.0 / 4.0 * (d2d / 100.0) ** 3 * math.exp(-d2d / 150.0)
    )
    # the table's product exceeds 1 just past 18 m for hUT > 13 m; mobrl caps it at 1
    return min(p, 1.0)


def ref_los_umi(d2d: float) -> float:
    if d2d <= 18.0:
        return 1.0
    return 18.0 / d2d + math.exp(-d2d / 36.0) * (1.0 - 18.0 / d2d)


def ref_friis(d2d: float, fc: float, h_bs: float, h_ut: float) -> float:
    d3d = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    return 20.0 * math.log10(4.0 * math.pi * d3d * fc * 1e9 / C)


# --- worked examples ---


def test_worked_examples() -> None:
    # UMa LOS, d2D = 100 m, 3.5 GHz, hBS 25 m, hUT 1.5 m:
    #   d3D = sqrt(100^2 + 23.5^2) = 102.72414516...
    #   d'BP = 4 * 24 * 0.5 * 3.5e9 / c = 560.38767993... m, so PL1 applies:
    #   PL = 28 + 22 * 2.01167... + 20 * 0.54407... = 83.13815667...
    assert path_loss_db("uma", 100.0, 3.5, 25.0, 1.5, True) == pytest.approx(
        83.1381566769, abs=1e-6
    )
    # UMa LOS, d2D = 1000 m (beyond d'BP): d3D = 1000.27608689...,
    #   PL2 = 28 + 40 log10(d3D) + 20 log10(3.5) - 9 log10(560.3877^2 + 23.5^2) = 109.40649435...
    assert path_loss_db("uma", 1000.0, 3.5, 25.0, 1.5, True) == pytest.approx(
        109.4064943460, abs=1e-6
    )
    # UMa NLOS there: 13.54 + 39.08 log10(d3D) + 20 log10(3.5) = 141.66604605... (> LOS)
    assert path_loss_db("uma", 1000.0, 3.5, 25.0, 1.5, False) == pytest.approx(
        141.6660460500, abs=1e-6
    )
    # UMi LOS, d2D = 100 m, 28 GHz, hBS 10 m: d3D = 100.36059984..., d'BP = 1681.16303980... m,
    #   PL1 = 32.4 + 21 log10(d3D) + 20 log10(28) = 103.37598884...
    assert path_loss_db("umi", 100.0, 28.0, 10.0, 1.5, True) == pytest.approx(
        103.3759888423, abs=1e-6
    )
    # free space, 100 m, 3.5 GHz, hBS 25 m: 20 log10(4 pi 102.7241 * 3.5e9 / c) = 83.56259483...
    assert path_loss_db("free_space", 100.0, 3.5, 25.0, 1.5) == pytest.approx(
        83.5625948269, abs=1e-6
    )
    # LOS probability at 100 m: UMa, hUT 1.5: 0.18 + exp(-100/63) * 0.82 = 0.34767083684...
    assert los_probability("uma", 100.0, 1.5) == pytest.approx(0.3476708368, abs=1e-8)
    #   UMa, hUT 20 m: C' = 0.7^1.5 = 0.58566201857..., times (1 + C' * 1.25 * exp(-2/3))
    #   = 0.47834679144...
    assert los_probability("uma", 100.0, 20.0) == pytest.approx(0.4783467914, abs=1e-8)
    #   UMi: 0.18 + exp(-100/36) * 0.82 = 0.23098474969...
    assert los_probability("umi", 100.0, 1.5) == pytest.approx(0.2309847497, abs=1e-8)


# --- path loss against the references ---


@pytest.mark.parametrize("los", [True, False])
@pytest.mark.parametrize("fc", FREQUENCIES_GHZ)
@pytest.mark.parametrize(("name", "ref", "h_bs"), [("uma", ref_uma, 25.0), ("umi", ref_umi, 10.0)])
def test_path_loss_matches_the_standard(name, ref, h_bs, fc, los) -> None:
    for h_ut in (1.5, 5.0):
        for d in DISTANCES_M:
            got = path_loss_db(name, d, fc, h_bs, h_ut, los)
            assert got == pytest.approx(ref(d, fc, h_bs, h_ut, los), abs=1e-6), (d, h_ut)
            # the same numbers as an array, and from the Channel's own method
            assert path_loss_db(name, np.array([d]), fc, h_bs, h_ut, los)[0] == got
            assert CHANNELS[name].path_loss_db(d, fc, h_bs, h_ut, los) == got


def test_the_distances_cover_both_sides_of_every_breakpoint() -> None:
    """The grid above tests PL1 and PL2 at every frequency, for both models."""
    for h_bs in (25.0, 10.0):
        for fc in FREQUENCIES_GHZ:
            bp = _breakpoint(fc, h_bs, 1.5)
            assert min(DISTANCES_M) <= bp < max(DISTANCES_M), (h_bs, fc, bp)


def test_the_two_los_slopes_meet_at_the_breakpoint() -> None:
    """At d2D = d'BP, d'BP^2 + (hBS - hUT)^2 = d3D^2: 40 - 22 - 2 * 9 = 0 (UMa) and
    40 - 21 - 2 * 9.5 = 0 (UMi), so PL1 = PL2 and the LOS loss has no jump."""
    for name, h_bs in (("uma", 25.0), ("umi", 10.0)):
        for fc in FREQUENCIES_GHZ:
            bp = _breakpoint(fc, h_bs, 1.5)
            below = path_loss_db(name, bp * (1 - 1e-12), fc, h_bs, 1.5, True)
            above = path_loss_db(name, bp * (1 + 1e-12), fc, h_bs, 1.5, True)
            assert above == pytest.approx(below, abs=1e-6)


def test_nlos_is_never_below_los() -> None:
    d = np.geomspace(10.0, 5000.0, 60)[:, None, None]
    fc = np.array(FREQUENCIES_GHZ)[None, :, None]
    h_ut = np.array([1.5, 8.0, 22.5])[None, None, :]
    for name in ("uma", "umi"):
        los = path_loss_db(name, d, fc, None, h_ut, True)
        nlos = path_loss_db(name, d, fc, None, h_ut, False)
        assert los.shape == nlos.shape == (60, 4, 3)
        assert np.all(nlos >= los)
        assert np.any(nlos > los)


def test_default_heights_are_the_standard_ones() -> None:
    assert path_loss_db("uma", 300.0, 3.5) == path_loss_db("uma", 300.0, 3.5, 25.0, 1.5, True)
    assert path_loss_db("umi", 300.0, 3.5) == path_loss_db("umi", 300.0, 3.5, 10.0, 1.5, True)


def test_free_space_is_friis_and_ignores_los() -> None:
    for fc in FREQUENCIES_GHZ:
        for d in (1.0, *DISTANCES_M):
            want = ref_friis(d, fc, 25.0, 1.5)
            assert path_loss_db("free_space", d, fc, 25.0, 1.5, True) == pytest.approx(
                want, abs=1e-6
            )
            assert path_loss_db("free_space", d, fc, 25.0, 1.5, False) == pytest.approx(
                want, abs=1e-6
            )
    assert np.all(los_probability("free_space", np.array([0.0, 10.0, 5000.0])) == 1.0)


def test_okumura_hata_is_mobile_envs_loss_to_the_bit() -> None:
    from mobile_env.core.channels import OkumuraHata
    from mobile_env.core.entities import BaseStation, UserEquipment

    from mobrl.network.channel import loss_terms

    for freq_mhz, bs_height, ue_height in ((2500.0, 50.0, 1.5), (900.0, 30.0, 2.0)):
        bs = BaseStation(0, (3.0, 7.0), 9e6, freq_mhz, 30.0, bs_height)
        ue = UserEquipment(0, 1.5, 2.0, 1e-9, ue_height)
        distances, stock = [], []
        for x in range(0, 200, 9):
            for y in range(0, 200, 13):
                ue.x, ue.y = x + 0.6, y + 0.2  # mobile-env truncates positions to integers
                distances.append(bs.point.distance(ue.point))
                stock.append(OkumuraHata().power_loss(bs, ue))
        fc = freq_mhz / 1000.0
        ours = path_loss_db("okumura_hata", np.array(distances), fc, bs_height, ue_height, False)
        assert np.array_equal(ours, np.array(stock))
        assert path_loss_db("okumura_hata", distances[5], fc, bs_height, ue_height) == stock[5]
        t1, t2 = loss_terms(freq_mhz, bs_height, ue_height)
        assert np.array_equal(ours, t1 + t2 * np.log10(np.array(distances) + 1e-16))
    # no LOS state: `los` changes nothing, and there is no LOS probability
    assert path_loss_db("okumura_hata", 100.0, 2.5, 50.0, 1.5, True) == path_loss_db(
        "okumura_hata", 100.0, 2.5, 50.0, 1.5, False
    )
    with pytest.raises(ValueError, match="okumura_hata has no LOS state"):
        los_probability("okumura_hata", 100.0)


# --- LOS probability ---


def test_los_probability_matches_the_standard() -> None:
    for d in (0.0, 1.0, 10.0, 17.999, 18.0, 18.001, 18.2, 20.0, 50.0, 100.0, 300.0, 2000.0):
        assert los_probability("umi", d, 1.5) == pytest.approx(ref_los_umi(d), abs=1e-8), d
        for h_ut in (1.5, 10.0, 13.0, 15.0, 20.0, 23.0):
            assert los_probability("uma", d, h_ut) == pytest.approx(
                ref_los_uma(d, h_ut), abs=1e-8
            ), (d, h_ut)


def test_los_probability_at_the_18_m_edge() -> None:
    assert los_probability("uma", 18.0, 1.5) == 1.0
    assert los_probability("umi", 18.0, 1.5) == 1.0
    # just past it the probability starts falling (hUT <= 13 m: C' = 0)
    assert los_probability("uma", 18.5, 1.5) < 1.0
    assert los_probability("umi", 18.5, 1.5) < 1.0
    # a UE at 23 m: the table's product is 1.0065 at 18.001 m; capped at 1
    raw = (18 / 18.001 + math.exp(-18.001 / 63) * (1 - 18 / 18.001)) * (
        1 + 1.25 * 0.18001**3 * math.exp(-18.001 / 150)
    )
    assert raw > 1.0
    assert los_probability("uma", 18.001, 23.0) == 1.0


def test_uma_los_probability_rises_with_ue_height_above_13_m() -> None:
    p = los_probability("uma", 150.0, np.array([1.5, 13.0, 18.0, 23.0]))
    assert p[0] == p[1] < p[2] < p[3]


# --- broadcasting and return types ---


def test_broadcasting() -> None:
    d = np.array([[20.0], [200.0], [2000.0]])  # (3, 1)
    fc = np.array([[2.0, 3.5, 6.0, 28.0]])  # (1, 4)
    for name in CHANNELS:
        out = path_loss_db(name, d, fc, 20.0, 1.5, False)
        assert out.shape == (3, 4)
        for i in range(3):
            for j in range(4):
                assert out[i, j] == path_loss_db(name, d[i, 0], fc[0, j], 20.0, 1.5, False)
    # a bool array of LOS states broadcasts too
    los = np.array([True, False])[:, None, None]
    assert path_loss_db("uma", d, fc, 25.0, 1.5, los).shape == (2, 3, 4)
    assert los_probability("uma", d, np.array([1.5, 20.0])).shape == (3, 2)
    assert los_probability("umi", d, np.array([1.5, 20.0])).shape == (3, 2)


def test_scalars_in_give_numpy_floats_out() -> None:
    assert isinstance(path_loss_db("uma", 100.0, 3.5), np.float64)
    assert isinstance(los_probability("umi", 100.0), np.float64)
    assert isinstance(shadowing_sigma_db("uma", True), np.float64)
    assert isinstance(thermal_noise_dbm(9e6, 9.0), np.float64)


def test_bad_inputs_fail_with_their_name() -> None:
    with pytest.raises(ValueError, match="distance_2d_m"):
        path_loss_db("uma", -1.0, 3.5)
    with pytest.raises(ValueError, match="frequency_ghz"):
        path_loss_db("uma", 100.0, 0.0)
    with pytest.raises(ValueError, match="bandwidth_hz"):
        thermal_noise_dbm(0.0)


# --- the registry, shadowing, noise ---


def test_the_registry() -> None:
    assert list(CHANNELS) == ["uma", "umi", "free_space", "okumura_hata"]
    for name, model in CHANNELS.items():
        assert model.name == name
        assert channel(name) is model
        assert model.source
        assert model.has_shadowing == (model.sigma_los_db is not None)
    uma, umi = CHANNELS["uma"], CHANNELS["umi"]
    # Table 7.4.1-1 sigmas, Table 7.5-6 Part-1 SF decorrelation, Table 7.6.3.1-2 LOS state
    assert (uma.sigma_los_db, uma.sigma_nlos_db) == (4.0, 6.0)
    assert (uma.sf_decorrelation_los_m, uma.sf_decorrelation_nlos_m) == (37.0, 50.0)
    assert (umi.sigma_los_db, umi.sigma_nlos_db) == (4.0, 7.82)
    assert (umi.sf_decorrelation_los_m, umi.sf_decorrelation_nlos_m) == (10.0, 13.0)
    assert uma.los_decorrelation_m == umi.los_decorrelation_m == 50.0
    assert (uma.default_bs_height_m, umi.default_bs_height_m) == (25.0, 10.0)
    assert uma.min_distance_2d_m == umi.min_distance_2d_m == 10.0
    assert uma.has_los_state and umi.has_los_state
    for name in ("free_space", "okumura_hata"):
        model = CHANNELS[name]
        assert not model.has_los_state and not model.has_shadowing
        assert model.sigma_nlos_db is None and model.los_decorrelation_m is None
        assert model.sf_decorrelation_los_m is None and model.sf_decorrelation_nlos_m is None
        assert model.min_distance_2d_m == 1.0
    assert SPEED_OF_LIGHT == C


@pytest.mark.parametrize(
    ("typo", "closest"),
    [("free-space", "free_space"), ("okumura", "okumura_hata"), ("UMa", "uma"), ("umii", "umi")],
)
def test_an_unknown_model_names_the_closest_one(typo: str, closest: str) -> None:
    for call in (lambda: channel(typo), lambda: path_loss_db(typo, 100.0, 3.5)):
        with pytest.raises(ValueError) as err:
            call()
        message = str(err.value)
        assert "\n" not in message
        assert f"'{typo}'" in message
        assert f"the closest is '{closest}'" in message
        assert message.split("Choose one of: ")[1].startswith(f"{closest}, ")  # closest first
        assert all(name in message for name in CHANNELS)


def test_shadowing_sigma() -> None:
    assert shadowing_sigma_db("uma", True) == 4.0
    assert shadowing_sigma_db("uma", False) == 6.0
    assert shadowing_sigma_db("umi", False) == 7.82
    assert np.array_equal(shadowing_sigma_db("umi", np.array([True, False])), [4.0, 7.82])
    for name in ("free_space", "okumura_hata"):
        with pytest.raises(ValueError, match=f"{name} has no shadowing sigma"):
            shadowing_sigma_db(name, True)


def test_thermal_noise() -> None:
    # 9 MHz (mobile-env's default bandwidth), NF 9 dB: 10 log10(9e6) = 69.54242509...,
    # so -174 + 69.54242509 + 9 = -95.45757491 dBm
    assert thermal_noise_dbm(9e6, 9.0) == pytest.approx(-174.0 + 69.5424250944 + 9.0, abs=1e-9)
    assert thermal_noise_dbm(1.0) == -174.0
    assert thermal_noise_dbm(np.array([1e6, 1e8]), 0.0) == pytest.approx([-114.0, -94.0])


def test_importing_mobrl_radio_stays_light() -> None:
    """No Ray, torch or mobile-env behind `import mobrl.radio`: scripts and notebooks use it
    for a link budget without paying for them."""
    code = (
        "import sys, mobrl.radio; "
        "print(sorted(m for m in ('ray', 'torch', 'mobile_env', 'pandas', 'scipy') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
