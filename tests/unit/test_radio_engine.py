"""The fast engine's radio model (docs/radio.md, from "The radio section of a layout file" on)
held to values computed here by hand: SINRs under each interference mode, the schedulers'
rates, joint transmission, the threshold and the spectral cap (mobrl.radio.links); the
proportional-fair shares against Kelly's optimality conditions; received powers against
TR 38.901's formulas; the spatially consistent fields; and the engine's step against the
service arithmetic the references, `topk_gain` and `env.reward=marginal` predict with."""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.evaluation.oracle import step_utility
from mobrl.network.service import greedy_links, link_state, links_after, toggle_gains_at, toward
from mobrl.radio.config import DEFAULTS
from mobrl.radio.fields import CELLS, ShadowFields, StationFields, pool
from mobrl.radio.links import (
    LinkModel,
    RadioService,
    joint_sinr,
    link_rates,
    link_sinr,
    reach_sinr,
    rx_from_sinr,
    transmitting,
)
from mobrl.radio.schedulers import scheduler
from mobrl.scenarios.kinds.mobile import make_mobile_core

C = 299_792_458.0  # m/s

# --- 1. link_sinr / link_rates on a 2-station, 3-UE case, by hand ---------------------------
#
# received powers (mW), station rows, UE columns
RX = np.array(
    [
        [1e-6, 2e-7, 1e-8],  # station 0: 20 MHz, noise 2e-8 mW
        [1e-6, 1e-8, 5e-7],  # station 1: 10 MHz, noise 1e-8 mW
    ]
)
NOISE = np.array([[2e-8], [1e-8]])  # per station (the thermal noise grows with the band)
BW = np.array([[20.0], [10.0]])  # rate of 1 bit/s/Hz over all resources (MHz: Mbit/s)
THR = np.full((1, 3), 10 ** (-7 / 10))  # -7 dB = 0.1995
CAP = 7.4063  # no link here reaches it (the best: log2(101) = 6.66)

# SNR = rx / N
SNR = [
    [1e-6 / 2e-8, 2e-7 / 2e-8, 1e-8 / 2e-8],  # 50, 10, 0.5
    [1e-6 / 1e-8, 1e-8 / 1e-8, 5e-7 / 1e-8],  # 100, 1, 50
]
# both stations transmit: the other station's power at the UE interferes
FULL = [
    [50 / 51, 20 / 3, 1 / 52],  # 1e-6/(2e-8+1e-6), 2e-7/(2e-8+1e-8), 1e-8/(2e-8+5e-7)
    [100 / 101, 1 / 21, 25.0],  # 1e-6/(1e-8+1e-6), 1e-8/(1e-8+2e-7), 5e-7/(1e-8+1e-8)
]
# only station 0 transmits: its own links see noise only, station 1's links see station 0
ONLY_0 = [[50.0, 10.0, 0.5], [100 / 101, 1 / 21, 25.0]]
# only station 1 transmits
ONLY_1 = [[50 / 51, 20 / 3, 1 / 52], [100.0, 1.0, 50.0]]

# link sets (station, UE)
BOTH = np.array([[1, 1, 0], [1, 0, 1]], dtype=bool)  # UE 0 at both, UE 1 at 0, UE 2 at 1
UE1_AT_0 = np.array([[0, 1, 0], [0, 0, 0]], dtype=bool)
UE2_AT_1 = np.array([[0, 0, 0], [0, 0, 1]], dtype=bool)
NONE_LINKED = np.zeros((2, 3), dtype=bool)
WITH_WEAK = np.array([[1, 1, 1], [1, 0, 1]], dtype=bool)  # BOTH + UE 2 at station 0
UE0_BOTH_UE1_AT_0 = np.array([[1, 1, 0], [1, 0, 0]], dtype=bool)


def _model(interference: str, sched: str = "resource_fair", joint: str = "sum_rates", cap=CAP):
    return LinkModel(interference, sched, joint, cap)


def _ue_rates(model: LinkModel, conn: np.ndarray) -> np.ndarray:
    return link_rates(model, RX, NOISE, BW, THR, conn).sum(axis=0)


@pytest.mark.parametrize(
    "interference, conn, expected",
    [
        ("none", BOTH, SNR),
        ("none", NONE_LINKED, SNR),
        ("full_buffer", NONE_LINKED, FULL),
        ("full_buffer", UE1_AT_0, FULL),
        ("active", BOTH, FULL),  # both stations serve someone
        ("active", UE1_AT_0, ONLY_0),  # station 1 is idle: silent
        ("active", UE2_AT_1, ONLY_1),
        ("active", NONE_LINKED, SNR),  # nobody transmits
    ],
)
def test_link_sinr_by_hand(interference: str, conn: np.ndarray, expected) -> None:
    on = transmitting(_model(interference), conn)
    sinr = link_sinr(RX, NOISE, on)
    np.testing.assert_allclose(sinr, np.array(expected), rtol=1e-13, atol=0)


def _pf_two(ra: float, rb: float) -> tuple[float, float]:
    """UE 0's shares (a at station A, b at B) when it links to A and B and each station also
    serves one single-link UE: max log(a rA + b rB) + log(1 - a) + log(1 - b). Interior
    (rA/2 <= rB <= 2 rA): rA / R = 1 / (1 - a) and rB / R = 1 / (1 - b) with R = a rA + b rB
    give R = (rA + rB) / 3, a = 1 - R / rA, b = 1 - R / rB; else UE 0 bids only on its better
    station, where it gets 1/2."""
    if ra > 2 * rb:
        return 0.5, 0.0
    if rb > 2 * ra:
        return 0.0, 0.5
    r = (ra + rb) / 3
    return 1 - r / ra, 1 - r / rb


def _sum_rates_expected(f00, f10, f01, f12):
    """Per-UE rates for the link set BOTH from the links' full rates, by scheduler."""
    a, b = _pf_two(f00, f10)
    return {
        "resource_fair": [f00 / 2 + f10 / 2, f01 / 2, f12 / 2],
        # equal rates per station: 1 / (1/f + 1/g) for each of its two links
        "rate_fair": [
            1 / (1 / f00 + 1 / f01) + 1 / (1 / f10 + 1 / f12),
            1 / (1 / f00 + 1 / f01),
            1 / (1 / f10 + 1 / f12),
        ],
        "proportional_fair": [a * f00 + b * f10, (1 - a) * f01, (1 - b) * f12],
    }


# full rates (bandwidth x log2(1 + SINR)) of the links of BOTH
NONE_FULL = (20 * math.log2(51), 10 * math.log2(101), 20 * math.log2(11), 10 * math.log2(51))
FB_FULL = (
    20 * math.log2(1 + 50 / 51),
    10 * math.log2(1 + 100 / 101),
    20 * math.log2(1 + 20 / 3),
    10 * math.log2(26),
)


@pytest.mark.parametrize("sched", ["resource_fair", "rate_fair", "proportional_fair"])
@pytest.mark.parametrize(
    "interference, full",
    [("none", NONE_FULL), ("full_buffer", FB_FULL), ("active", FB_FULL)],
)
def test_sum_rates_by_hand(interference: str, full, sched: str) -> None:
    expected = _sum_rates_expected(*full)[sched]
    np.testing.assert_allclose(_ue_rates(_model(interference, sched), BOTH), expected, rtol=1e-9)


def test_the_hand_cases_cover_both_pf_regimes() -> None:
    # none: rA/rB = 113.4/66.6 = 1.70 and full_buffer: 19.72/9.93 = 1.986: interior; the
    # corner below: rA = 5 > 2 rB = 2
    assert 0 < _pf_two(*NONE_FULL[:2])[1] < 1 and 0 < _pf_two(*FB_FULL[:2])[1] < 1
    pf = scheduler("proportional_fair")
    b, u = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 2])  # sorted by UE, then station
    interior = pf.shares(b, u, np.array([3.0, 4.0, 7.0, 9.0]), 2, 3)
    # rA = 3, rB = 4: R = 7/3, a = 1 - 7/9 = 2/9, b = 1 - 7/12 = 5/12
    np.testing.assert_allclose(interior, [2 / 9, 5 / 12, 7 / 9, 7 / 12], rtol=1e-9)
    corner = pf.shares(b, u, np.array([5.0, 1.0, 3.0, 2.0]), 2, 3)
    np.testing.assert_allclose(corner, [0.5, 0.0, 0.5, 1.0], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "interference, conn, expected",
    [
        # station 1 idle under `active`: UE 1 sees its SNR 10; full_buffer: 20/3
        ("none", UE1_AT_0, [0, 20 * math.log2(11), 0]),
        ("active", UE1_AT_0, [0, 20 * math.log2(11), 0]),
        ("full_buffer", UE1_AT_0, [0, 20 * math.log2(1 + 20 / 3), 0]),
        ("active", UE2_AT_1, [0, 0, 10 * math.log2(51)]),
        ("full_buffer", UE2_AT_1, [0, 0, 10 * math.log2(26)]),
    ],
)
def test_an_idle_station_does_not_interfere_under_active(interference, conn, expected) -> None:
    for sched in ("resource_fair", "rate_fair", "proportional_fair"):
        rates = _ue_rates(_model(interference, sched), conn)
        np.testing.assert_allclose(rates, expected, rtol=1e-12, atol=0)


def test_received_powers_from_sinrs_by_hand() -> None:
    """Two stations, full buffer: s0 = r0 / (n + r1), s1 = r1 / (n + r0). With n = 1,
    r0 = 4, r1 = 1: s0 = 2, s1 = 0.2; from the SINRs, I = (2/3 + 1/6) / (1 - 2/3 - 1/6) = 5
    and r0 = 2/3 (1 + 5) = 4, r1 = 1/6 (1 + 5) = 1."""
    model = LinkModel("full_buffer", "resource_fair", "sum_rates", None)
    sinr = np.array([[2.0], [0.2]])
    np.testing.assert_allclose(rx_from_sinr(model, sinr, np.ones((2, 1)), NONE_LINKED[:, :1]),
                               [[4.0], [1.0]], rtol=1e-12)  # fmt: skip
    # shares that sum to 1 or more have no received powers
    assert np.isnan(
        rx_from_sinr(model, np.full((2, 1), 1.0), np.ones((2, 1)), NONE_LINKED[:, :1])
    ).all()


@pytest.mark.parametrize("interference", ["none", "full_buffer", "active"])
@pytest.mark.parametrize("joint", ["sum_rates", "noncoherent"])
def test_received_powers_from_sinrs_invert_the_sinrs(interference: str, joint: str) -> None:
    """`rx_from_sinr` is `reach_sinr`'s inverse under every interference and joint
    transmission, with stations not heard, idle and linked (what /v1/decide does with a
    UE's reported SINRs)."""
    model = LinkModel(interference, "proportional_fair", joint, None)
    rng = np.random.default_rng(7)
    rx = 10 ** rng.uniform(-12, -6, (7, 40))
    rx[rng.random(rx.shape) < 0.2] = 0.0  # not heard
    noise = 1e-10 * rng.uniform(1, 2, (7, 1))  # per station: bandwidths differ
    conn = (rng.random(rx.shape) < 0.15) & (rx > 0)
    conn[3] = False  # an idle station
    back = rx_from_sinr(model, reach_sinr(model, rx, noise, conn), noise, conn)
    np.testing.assert_allclose(back, rx, rtol=1e-9, atol=0)


def test_a_link_below_the_threshold_carries_nothing() -> None:
    # WITH_WEAK adds UE 2 at station 0: SNR 0.5 (above -7 dB), but under full_buffer
    # 1e-8 / (2e-8 + 5e-7) = 1/52 = -17 dB: below, so the link carries nothing
    f00, f10, f01, f12 = FB_FULL
    weak = link_rates(_model("full_buffer"), RX, NOISE, BW, THR, WITH_WEAK)
    assert weak[0, 2] == 0.0
    # resource_fair: the dead link still holds its third of station 0
    np.testing.assert_allclose(weak.sum(axis=0), [f00 / 3 + f10 / 2, f01 / 3, f12 / 2], rtol=1e-12)
    # rate_fair and proportional_fair: it takes nothing either (the same as without it)
    for sched in ("rate_fair", "proportional_fair"):
        expected = _sum_rates_expected(*FB_FULL)[sched]
        np.testing.assert_allclose(
            _ue_rates(_model("full_buffer", sched), WITH_WEAK), expected, rtol=1e-9
        )
    # without interference the same link is above the threshold: 20 log2(1.5) / 3
    plain = link_rates(_model("none"), RX, NOISE, BW, THR, WITH_WEAK)
    assert plain[0, 2] == pytest.approx(20 * math.log2(1.5) / 3, rel=1e-12)
    # and a threshold above a link's SINR silences it: 16 dB = 39.8 > SNR 10 of UE 1
    high = link_rates(_model("none"), RX, NOISE, BW, np.full((1, 3), 10**1.6), BOTH)
    assert high[0, 1] == 0.0 and high[0, 0] > 0 and high[1, 2] > 0


def test_the_spectral_efficiency_cap() -> None:
    # cap 6 bit/s/Hz: log2(51) = 5.67 stays, log2(101) = 6.66 is cut to 6
    capped = _ue_rates(_model("none", cap=6.0), BOTH)
    np.testing.assert_allclose(
        capped,
        [20 * math.log2(51) / 2 + 10 * 6.0 / 2, 20 * math.log2(11) / 2, 10 * math.log2(51) / 2],
        rtol=1e-12,
    )
    # no cap (mobile-env's Okumura-Hata default): log2(1 + SNR) as it is
    free = _ue_rates(_model("none", cap=None), BOTH)
    assert free[0] == pytest.approx(20 * math.log2(51) / 2 + 10 * math.log2(101) / 2, rel=1e-12)
    # noncoherent: UE 0's joint SINR 100 -> min(6.66, 6) = 6, on its smallest share (5 MHz)
    joint = _ue_rates(_model("none", joint="noncoherent", cap=6.0), BOTH)
    assert joint[0] == pytest.approx(5 * 6.0, rel=1e-12)


@pytest.mark.parametrize(
    "interference, conn, expected",
    [
        # UE 0: (1e-6 + 1e-6) / max(2e-8, 1e-8) = 100 (the noise of the wider band)
        ("none", BOTH, [100.0, 10.0, 50.0]),
        # nobody else transmits for UE 0; UE 1: 2e-7/(2e-8+1e-8); UE 2: 5e-7/(1e-8+1e-8)
        ("full_buffer", BOTH, [100.0, 20 / 3, 25.0]),
        ("active", BOTH, [100.0, 20 / 3, 25.0]),
        ("none", UE1_AT_0, [0.0, 10.0, 0.0]),  # unlinked UEs: 0
        ("active", UE1_AT_0, [0.0, 10.0, 0.0]),  # station 1 silent
        ("full_buffer", UE1_AT_0, [0.0, 20 / 3, 0.0]),
    ],
)
def test_joint_sinr_by_hand(interference, conn, expected) -> None:
    sinr = joint_sinr(_model(interference, joint="noncoherent"), RX, NOISE, conn)
    np.testing.assert_allclose(sinr, expected, rtol=1e-13, atol=0)


def test_noncoherent_rates_by_hand() -> None:
    lg = math.log2
    nc = lambda interference, sched: _model(interference, sched, "noncoherent")  # noqa: E731
    # resource_fair, no interference: halves everywhere; UE 0 gets min(20/2, 10/2) = 5 MHz
    # at its joint SINR 100, UE 1 10 MHz at 10, UE 2 5 MHz at 50
    rf = link_rates(nc("none", "resource_fair"), RX, NOISE, BW, THR, BOTH)
    np.testing.assert_allclose(rf.sum(axis=0), [5 * lg(101), 10 * lg(11), 5 * lg(51)], rtol=1e-12)
    # UE 0's rate is counted on its two links in equal parts
    assert rf[0, 0] == pytest.approx(rf[1, 0]) and rf[0, 0] == pytest.approx(5 * lg(101) / 2)
    # full_buffer: UE 1 at 20/3, UE 2 at 25; UE 0 unchanged (both its stations are its own)
    fb = _ue_rates(nc("full_buffer", "resource_fair"), BOTH)
    np.testing.assert_allclose(fb, [5 * lg(101), 10 * lg(23 / 3), 5 * lg(26)], rtol=1e-12)
    # against sum_rates: UE 0 would add 10 log2(51) + 5 log2(101) (SNRs 50 and 100)
    sr = _ue_rates(_model("none"), BOTH)
    assert sr[0] == pytest.approx(10 * lg(51) + 5 * lg(101), rel=1e-12)
    # rate_fair: each link's share as if it carried the joint SINR's full rate
    f00, f01, f10, f12 = 20 * lg(101), 20 * lg(11), 10 * lg(101), 10 * lg(51)
    s00, s10 = f01 / (f00 + f01), f12 / (f10 + f12)  # shares inversely prop. to rate
    rate = _ue_rates(nc("none", "rate_fair"), BOTH)
    np.testing.assert_allclose(
        rate,
        [min(20 * s00, 10 * s10) * lg(101), (1 - s00) * f01, (1 - s10) * f12],
        rtol=1e-12,
    )
    # proportional_fair: UE 0's stations serve it together, so it has no links to trade and
    # each station gives its UEs equal time (PF's allocation for UEs of one station):
    # station 0 halves between UEs 0 and 1, station 1 is UE 0's alone; UE 0 gets
    # min(20/2, 10) = 10 MHz at SINR 100, UE 1 10 MHz at 10
    pf = _ue_rates(nc("none", "proportional_fair"), UE0_BOTH_UE1_AT_0)
    np.testing.assert_allclose(pf, [10 * lg(101), 10 * lg(11), 0.0], rtol=1e-12)


def test_several_link_sets_at_once_are_each_alone() -> None:
    sets = np.stack([BOTH, WITH_WEAK, UE1_AT_0, UE2_AT_1, NONE_LINKED, UE0_BOTH_UE1_AT_0])
    for combo in itertools.product(
        ("none", "full_buffer", "active"),
        ("resource_fair", "rate_fair", "proportional_fair"),
        ("sum_rates", "noncoherent"),
    ):
        model = _model(*combo)
        service = RadioService(model, RX, np.broadcast_to(NOISE, RX.shape), BW, THR)
        batch = service.link_rates(sets)
        for k, conn in enumerate(sets):
            np.testing.assert_array_equal(batch[k], service.link_rates(conn), err_msg=str(combo))


# --- 2. proportional_fair is Kelly's optimum ------------------------------------------------


def _random_instance(rng: np.random.Generator, n_bs: int, n_ue: int):
    """Links of n_ue UEs with 1-3 stations each (sorted by UE, then station), rates > 0."""
    b, u = [], []
    for ue in range(n_ue):
        k = int(rng.integers(1, 4))
        for st in sorted(rng.choice(n_bs, size=min(k, n_bs), replace=False).tolist()):
            b.append(st)
            u.append(ue)
    rate = np.exp(rng.uniform(math.log(0.1), math.log(100.0), size=len(b)))
    return np.array(b), np.array(u), rate


def _log_objective(b, u, rate, share, n_ue) -> float:
    return float(np.log(np.bincount(u, weights=share * rate, minlength=n_ue)).sum())


def _proportional_response(b, u, rate, n_bs, n_ue, rounds=2000) -> np.ndarray:
    """Shares after `rounds` of proportional response dynamics (Wu & Zhang 2007): each UE
    bids its budget of 1 in proportion to what each link gave it."""
    x = 1.0 / np.bincount(u, minlength=n_ue)[u]
    for _ in range(rounds):
        share = x / np.bincount(b, weights=x, minlength=n_bs)[b]
        got = share * rate
        x = got / np.bincount(u, weights=got, minlength=n_ue)[u]
    return x / np.bincount(b, weights=x, minlength=n_bs)[b]


def _check_kelly(b, u, rate, n_bs, n_ue) -> None:
    share = scheduler("proportional_fair").shares(b, u, rate, n_bs, n_ue)
    # every station with a carrying link is fully used
    linked = np.bincount(b, minlength=n_bs) > 0
    used_up = np.bincount(b, weights=share, minlength=n_bs)[linked]
    np.testing.assert_allclose(used_up, 1.0, rtol=1e-9)
    # KKT of max sum log R_u s.t. sum_u s_bu = 1: r_bu / R_u <= lambda_b, with equality on
    # every link with a share (lambda_b: the station's largest r / R)
    total = np.bincount(u, weights=share * rate, minlength=n_ue)
    ratio = rate / total[u]
    lam = np.zeros(n_bs)
    np.maximum.at(lam, b, ratio)
    used = share > 1e-6
    np.testing.assert_allclose(ratio[used], lam[b[used]], rtol=1e-6)
    # moving a little share between two links of a station never raises the objective
    value = _log_objective(b, u, rate, share, n_ue)
    eps = 1e-7
    for i, j in itertools.permutations(range(len(b)), 2):
        if b[i] != b[j] or share[j] < eps:
            continue
        moved = share.copy()
        moved[i] += eps
        moved[j] -= eps
        assert _log_objective(b, u, rate, moved, n_ue) <= value + 1e-12
    # and no allocation the proportional response dynamics reach is better
    other = _proportional_response(b, u, rate, n_bs, n_ue)
    assert value >= _log_objective(b, u, rate, other, n_ue) - 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_proportional_fair_satisfies_kellys_conditions(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(8):
        n_bs, n_ue = int(rng.integers(2, 8)), int(rng.integers(3, 13))
        _check_kelly(*_random_instance(rng, n_bs, n_ue), n_bs, n_ue)


def test_proportional_fair_on_a_slowly_converging_instance() -> None:
    # UEs 0 and 2 share all three stations; UE 1 is alone at station 2 (found by a random
    # search): block coordinate descent creeps here (2e-4 a sweep); the exact solve settles it
    b = np.array([0, 1, 2, 2, 0, 1, 2])
    u = np.array([0, 0, 0, 1, 2, 2, 2])
    rate = np.array([15.3, 25.4, 53.3, 0.8, 6.2, 10.3, 0.4])
    _check_kelly(b, u, rate, 3, 3)


def test_proportional_fair_when_a_neighbours_neighbour_still_moves() -> None:
    # 7 stations, 9 UEs (found by a random search): a UE whose stations were still for a sweep
    # must move again when a UE two stations away moves a bid onto one of them
    b = np.array([2, 4, 6, 1, 5, 4, 5, 3, 0, 2, 4, 1, 5, 6, 0, 6])
    u = np.array([0, 0, 0, 1, 1, 2, 3, 4, 5, 5, 5, 6, 6, 7, 8, 8])
    rate = np.array([2, 4, 5, 39, 8, 6, 16, 4, 2, 13, 24, 3, 2, 4, 2, 30], dtype=float)
    _check_kelly(b, u, rate, 7, 9)


def test_proportional_fair_on_large_networks_and_in_a_batch() -> None:
    """Networks whose exact solves run sparse (large groups) or stacked (many creeping
    groups of one shape, with cycles of positive bids to walk), alone and all as one batch:
    every used station fully shared, Kelly's equal rate ratios on every link with a share, and
    in the batch each network's shares alone, to the bit."""
    rng = np.random.default_rng(7)
    pf = scheduler("proportional_fair")
    nets = [
        (*_random_instance(rng, n_bs, n_ue), n_bs, n_ue) for n_bs, n_ue in ((30, 240), (60, 90))
    ]
    slow = (np.array([0, 1, 2, 2, 0, 1, 2]), np.array([0, 0, 0, 1, 2, 2, 2]))
    slow_rate = np.array([15.3, 25.4, 53.3, 0.8, 6.2, 10.3, 0.4])
    nets += [(*slow, slow_rate * rng.uniform(0.97, 1.03, 7), 3, 3) for _ in range(24)]
    alone = []
    for b, u, rate, n_bs, n_ue in nets:
        share = pf.shares(b, u, rate, n_bs, n_ue)
        linked = np.bincount(b, minlength=n_bs) > 0
        used_up = np.bincount(b, weights=share, minlength=n_bs)[linked]
        np.testing.assert_allclose(used_up, 1.0, rtol=1e-9)
        ratio = rate / np.bincount(u, weights=share * rate, minlength=n_ue)[u]
        lam = np.zeros(n_bs)
        np.maximum.at(lam, b, ratio)
        used = share > 1e-6
        np.testing.assert_allclose(ratio[used], lam[b[used]], rtol=1e-6)
        alone.append(share)
    offsets = np.cumsum([(0, 0)] + [(n[3], n[4]) for n in nets[:-1]], axis=0)
    b = np.concatenate([n[0] + o[0] for n, o in zip(nets, offsets)])
    u = np.concatenate([n[1] + o[1] for n, o in zip(nets, offsets)])
    rate = np.concatenate([n[2] for n in nets])
    together = pf.shares(b, u, rate, sum(n[3] for n in nets), sum(n[4] for n in nets))
    np.testing.assert_array_equal(together, np.concatenate(alone))


def test_proportional_fair_with_one_link_per_ue_is_round_robin() -> None:
    b, u = np.array([0, 1, 0, 2, 0]), np.arange(5)
    share = scheduler("proportional_fair").shares(b, u, np.array([5.0, 1, 2, 3, 9]), 3, 5)
    np.testing.assert_allclose(share, [1 / 3, 1, 1 / 3, 1, 1 / 3], rtol=1e-12)


# --- 3. received power by hand (TR 38.901 Table 7.4.1-1) -------------------------------------


def _pl_38901(kind: str, d2d: float, fc: float, h_bs: float, h_ut: float, los: bool) -> float:
    d2d = max(d2d, 10.0)  # below 10 m the formula is read at 10 m
    d3d = math.sqrt(d2d**2 + (h_bs - h_ut) ** 2)
    bp = 4 * (h_bs - 1) * (h_ut - 1) * fc * 1e9 / C  # hE = 1 m
    if kind == "uma":
        a, slope, k = 28.0, 22.0, 9.0
    else:
        a, slope, k = 32.4, 21.0, 9.5
    if d2d <= bp:
        pl_los = a + slope * math.log10(d3d) + 20 * math.log10(fc)
    else:
        pl_los = (
            a
            + 40 * math.log10(d3d)
            + 20 * math.log10(fc)
            - k * math.log10(bp**2 + (h_bs - h_ut) ** 2)
        )
    if los:
        return pl_los
    if kind == "uma":
        nlos = 13.54 + 39.08 * math.log10(d3d) + 20 * math.log10(fc) - 0.6 * (h_ut - 1.5)
    else:
        nlos = 35.3 * math.log10(d3d) + 22.4 + 21.3 * math.log10(fc) - 0.3 * (h_ut - 1.5)
    return max(pl_los, nlos)


def _p_los(kind: str, d2d: float) -> float:
    """Table 7.4.2-1, outdoor UEs at 1.5 m (C'(hUT) = 0)."""
    d2d = max(d2d, 10.0)
    if d2d <= 18:
        return 1.0
    scale = 63.0 if kind == "uma" else 36.0
    return 18 / d2d + math.exp(-d2d / scale) * (1 - 18 / d2d)


SITES = {"uma": (46.0, 25.0), "umi": (30.0, 10.0)}  # tx power dBm, station height m
#: the engine computes received powers in single precision: within 1e-4 dB of the formulas in
#: double (a few units in the last place of a 100 dB loss), a relative 2e-5 in mW
F32_DB, F32_REL = 1e-4, 2e-5
# UE positions (one per UE of the tiny layout): under 10 m from station 0, both sides of the
# breakpoints (UMa 560 m, UMi 210 m)
POS_X = np.array([203.0, 230.0, 260.0, 320.0, 400.0, 500.0, 650.0, 700.0, 850.0, 1200.0, 1450.0])
POS_Y = np.array([501.0, 520.0, 470.0, 600.0, 300.0, 500.0, 900.0, 500.0, 420.0, 950.0, 20.0])
STATIONS = ((200.0, 500.0), (900.0, 400.0))


def _tiny_layout(kind: str, shadowing: bool, **radio) -> dict:
    tx, h = SITES[kind]
    raw = {
        "width": 1500.0,
        "height": 1000.0,
        "seed": 3,
        "episode_length": 20,
        "station_defaults": {"bandwidth": 2e7, "frequency": 3500.0, "tx_power": tx, "height": h},
        "stations": [{"x": 200.0, "y": 500.0}, {"x": 900.0, "y": 400.0}],
        "ues": {"count": len(POS_X), "height": 1.5, "velocity": 1.5},
        "radio": {"channel": kind, "shadowing": shadowing, **radio},
        "movement": {"model": "random_waypoint"},
        "arrival": {"model": "always"},
    }
    return scenarios.validate(raw, Path("tiny.yaml"))


@pytest.mark.parametrize("kind", ["uma", "umi"])
def test_received_power_is_38901_by_hand(kind: str) -> None:
    core = make_mobile_core(_tiny_layout(kind, False), "ma")
    core.reset()
    radio = core._radio
    rx_dbm, loss, sf, los = radio.rx_dbm(POS_X, POS_Y)
    assert not sf.any()
    tx, h_bs = SITES[kind]
    field = radio.los_field.at(POS_X, POS_Y)
    for b, (sx, sy) in enumerate(STATIONS):
        for i, (x, y) in enumerate(zip(POS_X.tolist(), POS_Y.tolist())):
            d2d = math.hypot(x - sx, y - sy)
            # the LOS state: the station's uniform field there below Pr_LOS at that distance
            assert bool(los[b, i]) == (float(field[b, i]) < _p_los(kind, d2d))
            pl = _pl_38901(kind, d2d, 3.5, h_bs, 1.5, bool(los[b, i]))
            assert loss[b, i] == pytest.approx(pl, abs=F32_DB)
            assert rx_dbm[b, i] == pytest.approx(tx - pl, abs=F32_DB)
    assert los.any() and not los.all()  # both states are checked
    # the engine's own received powers (mW) at the UEs' positions
    expected = 10 ** (radio.rx_dbm(core._x, core._y)[0] / 10)
    np.testing.assert_allclose(core._rx, expected, rtol=F32_REL)
    # thermal noise over 20 MHz with a 9 dB noise figure; threshold -7 dB; rates in Mbit/s
    noise_dbm = -174 + 10 * math.log10(2e7) + 9
    np.testing.assert_allclose(radio.noise, 10 ** (noise_dbm / 10), rtol=1e-12)
    np.testing.assert_allclose(radio.thr, 10 ** (-7 / 10), rtol=1e-12)
    np.testing.assert_allclose(radio.bw, 20.0)
    # at reset nobody is linked: under `none` the SINR is the SNR
    np.testing.assert_allclose(core._snr, core._rx / radio.noise, rtol=1e-12)


@pytest.mark.parametrize("kind", ["uma", "umi"])
def test_shadowing_is_the_difference(kind: str) -> None:
    plain = make_mobile_core(_tiny_layout(kind, False), "ma")
    shadowed = make_mobile_core(_tiny_layout(kind, True), "ma")
    plain.reset()
    shadowed.reset()
    rx0, loss0, _, los0 = plain._radio.rx_dbm(POS_X, POS_Y)
    rx1, loss1, sf, los1 = shadowed._radio.rx_dbm(POS_X, POS_Y)
    # the same seed draws the same LOS windows first: the same LOS states and path loss
    np.testing.assert_array_equal(los0, los1)
    np.testing.assert_allclose(loss0, loss1, atol=1e-12)
    assert np.abs(sf).max() > 0.1
    np.testing.assert_allclose(rx0 - rx1, sf, atol=F32_DB)
    tx = SITES[kind][0]
    np.testing.assert_allclose(rx1, tx - loss1 - sf, atol=F32_DB)


@pytest.mark.parametrize("interference", ["active", "full_buffer"])
def test_the_engines_sinr_reads_who_transmits_at_the_end_of_the_step(interference) -> None:
    core = make_mobile_core(_tiny_layout("uma", True, interference=interference), "ma")
    core.reset()
    r = core._radio
    on = np.ones(2, dtype=bool) if interference == "full_buffer" else np.zeros(2, dtype=bool)
    rng = np.random.default_rng(0)
    for _ in range(10):
        other = core._rx[::-1]  # two stations: the other one's power
        expected = core._rx / (r.noise + np.where(on[::-1, None], other, 0.0))
        np.testing.assert_allclose(core._snr, expected, rtol=1e-12)
        core.step_arrays(rng.integers(0, 3, size=len(POS_X)))
        if interference == "active":
            on = core._conn.any(axis=1)


# --- 4. spatially consistent fields ---------------------------------------------------------


def test_a_field_realisation_is_unit_gaussian_with_exponential_correlation() -> None:
    d_corr = 50.0
    fields = StationFields(d_corr, 3, 3000.0, 3000.0)
    fields.redraw(np.random.default_rng(1))
    step = 25.0
    xs = np.arange(0.0, 2950.0, step)
    gx, gy = np.meshgrid(xs, xs, indexing="ij")
    x, y = gx.ravel(), gy.ravel()
    values = fields.at(x, y)
    for row in values:
        assert abs(row.mean()) < 0.1
        assert 0.85 < row.std() < 1.15
    # correlation d_corr apart, along x and along y: exp(-1) = 0.37
    for dx, dy in ((d_corr, 0.0), (0.0, d_corr)):
        shifted = fields.at(x + dx, y + dy)
        for a, b in zip(values, shifted):
            assert 0.2 < np.corrcoef(a, b)[0, 1] < 0.55
    # far apart: practically independent
    far = fields.at(x + 10 * d_corr, y)
    assert abs(np.corrcoef(values[0], far[0])[0, 1]) < 0.15
    # the whole periodic grid
    whole = pool(8.0)
    assert whole.size == CELLS * CELLS
    assert abs(whole.mean()) < 0.1 and 0.9 < whole.std() < 1.1
    # the LOS field is uniform: mean 1/2, std 1/sqrt(12)
    uniform = StationFields(d_corr, 1, 3000.0, 3000.0, uniform=True)
    uniform.redraw(np.random.default_rng(2))
    u = uniform.at(x, y)[0]
    assert u.min() >= 0 and u.max() <= 1
    assert abs(u.mean() - 0.5) < 0.05 and abs(u.std() - 12**-0.5) < 0.04


def test_a_fields_table_reads_the_windows_values() -> None:
    # the per-episode table (cells as rows, stations side by side) holds the same values
    # as the windows it is copied from, at positions on and off the map
    table = StationFields(50.0, 4, 945.0, 792.0, uniform=True)
    in_place = StationFields(50.0, 4, 945.0, 792.0, uniform=True, table=False)
    for field in (table, in_place):
        field.redraw(np.random.default_rng(7))
    assert table.table is not None and in_place.table is None
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-20, 965, 500), rng.uniform(-20, 812, 500)
    assert np.array_equal(table.at(x, y), in_place.at(x, y))


def test_shadow_fields_have_the_models_sigmas() -> None:
    shadow = ShadowFields(37.0, 50.0, 4.0, 6.0, 2, 2500.0, 2233.0)
    shadow.redraw(np.random.default_rng(5))
    xs = np.arange(0.0, 2500.0, 20.0)
    ys = np.arange(0.0, 2233.0, 20.0)
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    x, y = gx.ravel(), gy.ravel()
    for los, sigma in ((True, 4.0), (False, 6.0)):
        sf = shadow.at(x, y, np.full((2, x.size), los))
        for row in sf:
            assert abs(row.mean()) < 0.1 * sigma
            assert 0.85 * sigma < row.std() < 1.15 * sigma


def _channel_at(core, x: np.ndarray, y: np.ndarray):
    rx, _, sf, los = core._radio.rx_dbm(x, y)
    return rx.copy(), np.asarray(sf).copy(), np.broadcast_to(los, rx.shape).copy()


def test_los_and_shadowing_are_fixed_by_position_episode_and_seed() -> None:
    data = scenarios.load(scenarios.path_of("uma19"))
    core = make_mobile_core(data, "ma")
    core.reset()
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 2500, 57), rng.uniform(0, 2233, 57)  # one position per UE
    first = _channel_at(core, x, y)
    # two UEs at one spot see the same LOS state and shadowing
    twin = _channel_at(core, np.repeat(x[:29], 2)[:57], np.repeat(y[:29], 2)[:57])
    for part, alone in zip(twin, first):
        np.testing.assert_array_equal(part[:, 0:56:2], part[:, 1:56:2])
        np.testing.assert_array_equal(part[:, 0:56:2], alone[:, :28])  # whichever UE it is
    # the same position later in the episode: the same channel
    for _ in range(5):
        core.step_arrays(rng.integers(0, 20, size=57))
    for a, b in zip(first, _channel_at(core, x, y)):
        np.testing.assert_array_equal(a, b)
    # the engine's UEs read the same function of position
    rx, _, _ = _channel_at(core, core._x, core._y)
    np.testing.assert_allclose(core._rx, 10 ** (rx / 10), rtol=F32_REL)
    # the next episode: a new channel
    core.reset()
    again = _channel_at(core, x, y)
    assert not np.array_equal(first[0], again[0])
    assert (first[2] != again[2]).any()  # some LOS state changes
    # a fresh core of the same seed: the first episode's channel, whichever policy played
    fresh = make_mobile_core(data, "ma")
    fresh.reset()
    for a, b in zip(first, _channel_at(fresh, x, y)):
        np.testing.assert_array_equal(a, b)
    # another seed: another channel
    other = make_mobile_core(data, "ma", kwargs={"seed": 1})
    other.reset()
    assert not np.array_equal(first[0], _channel_at(other, x, y)[0])


# --- 5. the engine's step is the service arithmetic's prediction ----------------------------

COMBOS = list(
    itertools.product(
        ("none", "full_buffer", "active"),
        ("resource_fair", "rate_fair", "proportional_fair"),
        ("sum_rates", "noncoherent"),
    )
)


def _layout(name: str, interference: str, sched: str, joint: str) -> dict:
    data = copy.deepcopy(scenarios.load(scenarios.path_of(name)))
    data["radio"].update(interference=interference, scheduler=sched, joint_transmission=joint)
    return data


def _random_actions(state, rng: np.random.Generator) -> np.ndarray:
    """Per UE: keep (half the time) or toggle a station it holds or can reach; a UE with
    three links leaves one (many UEs end up with 2-3 links, a few with none)."""
    act = np.zeros(state.conn.shape[1], dtype=np.int64)
    for ue in np.flatnonzero(state.active):
        joins = np.flatnonzero(state.reach[:, ue] & ~state.conn[:, ue]) + 1
        leaves = np.flatnonzero(state.conn[:, ue]) + 1
        if len(leaves) >= 3:
            act[ue] = rng.choice(leaves)
        elif rng.random() < 0.5 and len(joins) + len(leaves):
            act[ue] = rng.choice(np.concatenate([joins, leaves]))
    return act


@pytest.mark.parametrize("interference, sched, joint", COMBOS)
@pytest.mark.parametrize("name", ["uma19", "umi_dense"])
def test_the_step_is_the_predicted_one(name, interference, sched, joint) -> None:
    core = make_mobile_core(_layout(name, interference, sched, joint), "ma")
    core.reset()
    rng = np.random.default_rng(11)
    multi = 0
    for _ in range(20):
        state = link_state(core)
        act = _random_actions(state, rng)
        predicted = step_utility(state, act)
        conn = links_after(state, act)
        per_ue = state.ue_utilities(conn)
        core.step_arrays(act)
        active = core._active_mask
        assert predicted == pytest.approx(np.nanmean(core._util[active]), abs=1e-12)
        np.testing.assert_allclose(core._util[active], per_ue[active], rtol=0, atol=1e-12)
        multi += int((conn.sum(axis=0) > 1).sum())
    assert multi > 0  # UEs with several links were scored


def test_the_central_reward_is_the_predicted_step_utility() -> None:
    core = make_mobile_core(
        _layout("uma19", "active", "proportional_fair", "noncoherent"), "central"
    )
    core.reset()
    rng = np.random.default_rng(2)
    for _ in range(10):
        state = link_state(core)
        act = _random_actions(state, rng)
        predicted = step_utility(state, act)
        _, reward, *_ = core.step(act)
        assert reward == pytest.approx(predicted, abs=1e-12)


# --- 6. topk_gain and env.reward=marginal are exact under interference -----------------------

GAIN_COMBOS = [
    ("active", "proportional_fair", "sum_rates"),
    ("full_buffer", "rate_fair", "noncoherent"),
    ("active", "resource_fair", "noncoherent"),
    ("none", "resource_fair", "sum_rates"),  # separable: toggle_gains' closed form
]


def _slots(snr: np.ndarray, linked: np.ndarray, ue: int, k: int) -> list[int]:
    """A UE's k slots: its linked stations, then the others, each strongest first (ties:
    lower id)."""
    stations = range(snr.shape[0])
    key = lambda b: (-snr[b, ue], b)  # noqa: E731
    mine = sorted((b for b in stations if linked[b, ue]), key=key)
    rest = sorted((b for b in stations if not linked[b, ue]), key=key)
    return (mine + rest)[:k]


@pytest.mark.parametrize("interference, sched, joint", GAIN_COMBOS)
def test_topk_gain_is_each_toggles_exact_change(interference, sched, joint) -> None:
    k = 3
    core = make_mobile_core(
        _layout("uma19", interference, sched, joint), "ma", obs="topk_gain", topk=k
    )
    core.reset()
    rng = np.random.default_rng(4)
    checked = 0
    for step in range(8):
        if step >= 2:
            state = link_state(core)
            total = float(state.utility_sum(state.conn))
            gains = core.observe_all()[:, 5 * k + 2 :]
            linked = core._conn & core._reach
            where = np.zeros(state.conn.shape, dtype=bool)
            for ue in np.flatnonzero(state.active):
                for j, b in enumerate(_slots(core._snr, linked, ue, k)):
                    act = np.zeros(len(state.active), dtype=np.int64)
                    act[ue] = b + 1
                    # the toggle alone, scored whole (0 where it is not possible)
                    expected = float(state.utility_sum(links_after(state, act))) - total
                    assert gains[ue, j] == pytest.approx(expected, abs=2e-6)
                    where[b, ue] = True
                    checked += expected != 0.0
            # in float64, the batch of toggles is each toggle alone
            batch = toggle_gains_at(state, state.conn, where)
            b_idx, u_idx = np.nonzero(where & state.reach)
            for b, ue in zip(b_idx.tolist(), u_idx.tolist()):
                conn = state.conn.copy()
                conn[b, ue] = ~conn[b, ue]
                alone = float(state.utility_sum(conn)) - total
                assert batch[b, ue] == pytest.approx(alone, abs=1e-12)
        core.step_arrays(rng.integers(0, k + 1, size=57))
    assert checked > 0


@pytest.mark.parametrize("interference, sched, joint", GAIN_COMBOS)
def test_marginal_reward_is_sum_with_minus_sum_without(interference, sched, joint) -> None:
    core = make_mobile_core(_layout("uma19", interference, sched, joint), "ma", reward="marginal")
    core.reset()
    rng = np.random.default_rng(8)
    contributions = 0
    for _ in range(12):
        state = link_state(core)
        act = _random_actions(state, rng)
        conn = links_after(state, act)
        total = float(state.utility_sum(conn))
        expected = np.zeros(len(state.active))
        for ue in np.flatnonzero(state.active):
            without = conn.copy()
            without[:, ue] = False
            expected[ue] = total - float(state.utility_sum(without))
        rewards, _ = core.step_arrays(act)
        np.testing.assert_allclose(rewards, expected, rtol=0, atol=1e-12)
        contributions += int(np.count_nonzero(np.abs(expected) > 1e-9))
    assert contributions > 0


def _column_candidates(state) -> tuple[np.ndarray, np.ndarray]:
    """Every active UE's every other column the step allows (toggle one station), and no
    links at all."""
    from mobrl.network.service import toggle

    b, ue = np.nonzero((state.reach | state.conn) & state.active[None, :])
    cols = state.conn[:, ue].T.copy()
    toggle(cols, state.reach[:, ue].T, np.arange(len(ue)), b)
    leave = np.flatnonzero(state.active)
    none = np.zeros((len(leave), state.conn.shape[0]), dtype=bool)
    return np.concatenate([ue, leave]), np.concatenate([cols, none])


@pytest.mark.parametrize(
    "interference, sched, joint",
    [
        ("active", "proportional_fair", "sum_rates"),
        ("full_buffer", "resource_fair", "sum_rates"),
        ("active", "rate_fair", "sum_rates"),
        ("active", "proportional_fair", "noncoherent"),
    ],
)
def test_local_rates_are_the_whole_networks(interference, sched, joint) -> None:
    """A UE's change scored on the components it touches (mobrl.radio.local) gives every UE
    the rate the whole network gives it: the UEs it lists, and the rest keep theirs."""
    from mobrl.network.service import column_changes
    from mobrl.radio.local import full_rates, keeps_powers, local_rates

    core = make_mobile_core(_layout("umi_dense", interference, sched, joint), "ma")
    core.reset()
    rng = np.random.default_rng(6)
    scored = spread = 0
    for step in range(7):
        state = link_state(core)
        if step != 1:  # from no links (every change switches a station on), then any links
            ues, cols = _column_candidates(state)
            found = local_rates(state.radio, state.conn, ues, cols)
            sets = np.repeat(state.conn[None], len(ues), axis=0)
            sets[np.arange(len(ues)), :, ues] = cols
            whole = state.rates(sets)
            base = state.rates(state.conn)
            powers = full_rates(state.radio, state.conn)
            same = keeps_powers(state.radio, state.conn, ues, cols)
            for i in np.flatnonzero(found.scored):
                if same[i]:  # the same stations transmit: the same SINRs
                    np.testing.assert_array_equal(full_rates(state.radio, sets[i]), powers)
                mine = found.cand == i
                listed = found.ue[mine]
                assert ues[i] in listed
                np.testing.assert_allclose(found.rate[mine], whole[i, listed], rtol=1e-13)
                rest = np.setdiff1d(np.arange(len(base)), listed)
                np.testing.assert_array_equal(whole[i, rest], base[rest])
            scored += int(found.scored.sum())
            spread += int((found.scored & ~same).sum())
            if joint == "noncoherent":
                assert not found.scored.any()
            # the summed and own changes equal each set scored whole
            total, own = column_changes(state, state.conn, ues, cols, split=True)
            after = state.utility(whole) * state.active
            now = state.utility(base) * state.active
            np.testing.assert_allclose(total, after.sum(axis=1) - now.sum(), rtol=0, atol=1e-12)
            idx = np.arange(len(ues))
            np.testing.assert_allclose(own, after[idx, ues] - now[ues], rtol=0, atol=1e-12)
        core.step_arrays(_random_actions(state, rng))
    assert scored > 0 or joint == "noncoherent"
    # changes that switch a station on or off were scored too
    assert spread > 0 or interference != "active" or joint == "noncoherent"


def test_local_rates_are_the_same_bits_in_any_batch(monkeypatch) -> None:
    """The candidates' networks are scored in batches (of candidates, of links); a copy's
    arithmetic does not depend on the others', so any batch size gives the same bits, on
    states where some changes switch a station on or off and UEs hold several links under
    proportional fair."""
    import mobrl.radio.local as local

    core = make_mobile_core(_layout("umi_dense", "active", "proportional_fair", "sum_rates"), "ma")
    core.reset()
    rng = np.random.default_rng(3)
    checked = switching = 0
    for _ in range(5):
        core.step_arrays(_random_actions(link_state(core), rng))
        state = link_state(core)
        ues, cols = _column_candidates(state)
        switching += int((~local.keeps_powers(state.radio, state.conn, ues, cols)).sum())
        found = []
        for chunk, links in ((1, 1), (7, 500), (100_000, 10**9)):
            monkeypatch.setattr(local, "CHUNK_CANDIDATES", chunk)
            monkeypatch.setattr(local, "CHUNK_LINKS", links)
            found.append(local.local_rates(state.radio, state.conn, ues, cols))
        for other in found[1:]:
            for key in ("scored", "cand", "ue", "rate"):
                np.testing.assert_array_equal(getattr(other, key), getattr(found[0], key))
        checked += int((state.conn.sum(axis=0) > 1).sum() > 0)
    assert checked  # some states had UEs with several links
    assert switching  # and changes scored on every link


def test_components_are_labelled_as_scipys() -> None:
    """The components a change is scored on (compiled union-find) carry the labels scipy's
    `connected_components` gives the graph of stations and UEs: on random link sets with
    idle stations, UEs without links and one component spanning the network."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    from mobrl.radio._union_find import label_components

    rng = np.random.default_rng(0)
    sizes = set()
    for _ in range(400):
        n_bs, n_ue = int(rng.integers(1, 25)), int(rng.integers(0, 60))
        conn = rng.random((n_bs, n_ue)) < rng.choice([0.0, 0.02, 0.1, 0.5])
        lu, lb = np.nonzero(conn.T)
        graph = coo_matrix((np.ones(len(lb)), (lb, n_bs + lu)), shape=(n_bs + n_ue,) * 2)
        expected = connected_components(graph, directed=False)
        n_comp, label = label_components(lb, lu, n_bs, n_ue)
        assert n_comp == expected[0]
        np.testing.assert_array_equal(label, expected[1])
        sizes.add(min(n_comp, 2) if n_bs + n_ue > 1 else -1)
    assert {1, 2} <= sizes  # one component and several


# --- 7. interference matters ----------------------------------------------------------------


def _greedy_episode(interference: str) -> float:
    core = make_mobile_core(_layout("uma19", interference, "proportional_fair", "sum_rates"), "ma")
    core.reset()
    means, done = [], False
    while not done:
        state = link_state(core)
        _, done = core.step_arrays(toward(state, greedy_links(state)))
        means.append(np.nanmean(core._util[core._active_mask]))
    return float(np.mean(means))


def test_interference_lowers_greedys_utility() -> None:
    none, active, full = (_greedy_episode(m) for m in ("none", "active", "full_buffer"))
    assert active < none - 0.05
    assert full <= active + 1e-12


# --- 8. mobile-env's default is untouched ----------------------------------------------------


def _macro_episode(data: dict, steps: int = 30) -> tuple[object, list[np.ndarray]]:
    core = make_mobile_core(data, "ma")
    core.reset()
    rng = np.random.default_rng(5)
    out = []
    for _ in range(steps):
        core.step_arrays(rng.integers(0, core.NUM_STATIONS + 1, size=len(core._ue_list)))
        out.append(core._macro.copy())
    return core, out


@pytest.mark.parametrize(
    "section",
    [
        dict(DEFAULTS),
        {
            "channel": "okumura_hata",
            "shadowing": False,
            "interference": "none",
            "scheduler": "resource_fair",
            "joint_transmission": "sum_rates",
        },
        # the table's defaults of the thermal-noise keys, written out
        {"channel": "okumura_hata", "noise_figure_db": 9, "sinr_threshold_db": -7},
    ],
)
def test_a_radio_section_of_the_defaults_is_mobile_envs_model(section: dict) -> None:
    path = scenarios.path_of("medium")
    raw = yaml.safe_load(path.read_text())
    plain = scenarios.validate(copy.deepcopy(raw), path)
    raw["radio"] = section
    explicit = scenarios.validate(raw, path)
    core, with_section = _macro_episode(explicit)
    assert core._radio is None
    _, without = _macro_episode(plain)
    for a, b in zip(with_section, without):
        np.testing.assert_array_equal(a, b)
