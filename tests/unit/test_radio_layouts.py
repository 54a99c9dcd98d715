"""The radio section as layouts carry it: defaults, what reaches the engine, generated files,
and link sets computed alone or together giving the same numbers."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from mobrl import scenarios
from mobrl.radio.config import DEFAULTS, RadioConfig
from mobrl.radio.links import LinkModel, link_rates
from mobrl.radio.schedulers import SCHEDULERS
from mobrl.radio.schedulers import proportional_fair as pf


def test_every_layout_without_a_radio_section_runs_mobile_envs_model() -> None:
    for name in ("small", "medium", "large", "dense_urban", "highway", "city", "metro"):
        data = scenarios.load(scenarios.path_of(name))
        assert data["radio"] == DEFAULTS and RadioConfig.of(data["radio"]).is_stock
        assert scenarios.beyond_mobile_env(data) == {}
        assert "mobrl" not in scenarios.build_config(data)[2]


def test_a_section_repeating_the_defaults_is_mobile_envs_model(tmp_path: Path) -> None:
    raw = yaml.safe_load((scenarios.builtin_dir() / "small.yaml").read_text())
    raw["radio"] = {"channel": "okumura_hata", "interference": "none", "shadowing": False}
    data = scenarios.validate(raw, tmp_path / "x.yaml")
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    assert make_mobile_core(data, "ma")._radio is None


@pytest.mark.parametrize("name", ["uma19", "umi_dense", "city_interference"])
def test_the_radio_layouts_reach_the_engine(name: str) -> None:
    data = scenarios.load(scenarios.path_of(name))
    cfg = RadioConfig.of(data["radio"])
    assert cfg.thermal and cfg.shadowing and cfg.interference == "active"
    assert cfg.scheduler == "proportional_fair"
    extra = scenarios.beyond_mobile_env(data)
    assert extra["radio"]["channel"] == data["radio"]["channel"]
    assert extra["movement"]["model"] == "gauss_markov"


def test_generate_writes_the_radio_and_movement_sections(tmp_path: Path) -> None:
    from mobrl.scenarios.generate import Options, generate_command, parse_pairs

    out = tmp_path / "net.yaml"
    radio = parse_pairs(["channel=umi", "shadowing=true", "interference=full_buffer"], "--radio")
    movement = parse_pairs(["model=gauss_markov", "alpha=0.5"], "--movement")
    assert radio == {"channel": "umi", "shadowing": True, "interference": "full_buffer"}
    options = Options("20", out, seed=3, station={"height": 10.0}, radio=radio, movement=movement)
    line = generate_command("hex:7", 200.0, options)
    assert "7 stations, 20 UEs" in line
    text = out.read_text()
    # the header's command makes the same file again
    assert "--radio channel=umi --radio shadowing=true" in text
    assert "--movement model=gauss_markov --movement alpha=0.5" in text
    data = scenarios.load(out)
    assert data["radio"]["channel"] == "umi" and data["radio"]["shadowing"] is True
    assert data["movement"]["alpha"] == 0.5
    # mobile-env's noise and threshold do not apply under a thermal-noise channel
    assert "noise" not in yaml.safe_load(text)["ues"]


def _instance(rng: np.random.Generator, n_bs: int, n_ue: int):
    """Links sorted by UE, then station: each UE 1-3 stations, rates in [1, 100)."""
    b, u = [], []
    for ue in range(n_ue):
        k = int(rng.integers(1, 4))
        stations = np.sort(rng.choice(n_bs, k, replace=False))
        b += stations.tolist()
        u += [ue] * k
    return np.array(b), np.array(u), rng.uniform(1, 100, len(b))


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_a_network_gets_the_same_shares_alone_or_in_a_batch(name: str) -> None:
    """Link sets scored together (the references' batches) are disjoint copies of the network:
    each set's shares are bit for bit those it gets alone, so a prediction is the env's."""
    rng = np.random.default_rng(0)
    sched = SCHEDULERS[name]
    sets = [_instance(rng, 9, 20) for _ in range(5)]
    alone = [sched.shares(b, u, r, 9, 20) for b, u, r in sets]
    b = np.concatenate([s[0] + 9 * k for k, s in enumerate(sets)])
    u = np.concatenate([s[1] + 20 * k for k, s in enumerate(sets)])
    together = sched.shares(b, u, np.concatenate([s[2] for s in sets]), 45, 100)
    assert np.array_equal(np.concatenate(alone), together)


def test_proportional_fair_ends_on_the_exact_optimum() -> None:
    """Each group of UEs with several links ends solved exactly (a forest solve, not the
    descent's 1e-10): every used station fully shared and Kelly's equal rate ratios to 1e-12,
    on instances whose groups hold most of the UEs, with ties and a link carrying nothing."""
    rng = np.random.default_rng(1)
    cases = [_instance(rng, 12, 40) for _ in range(6)]
    b, u, r = _instance(rng, 6, 30)
    r[::7] = 0.0
    r[1::5] = r[2::5][: len(r[1::5])]  # equal rates on neighbouring links
    cases.append((b, u, r))
    for b, u, r in cases:
        n_bs, n_ue = 12, int(u.max()) + 1
        share = pf.SCHEDULER.shares(b, u, r, n_bs, n_ue)
        assert (share[r == 0] == 0).all()
        carry = r > 0
        linked = np.bincount(b[carry], minlength=n_bs) > 0
        used_up = np.bincount(b, weights=share, minlength=n_bs)[linked]
        np.testing.assert_allclose(used_up, 1.0, rtol=1e-13)
        total = np.bincount(u, weights=share * r, minlength=n_ue)
        ratio = np.where(carry, r / total[u], 0.0)
        lam = np.zeros(n_bs)
        np.maximum.at(lam, b, ratio)
        used = share > 0
        np.testing.assert_allclose(ratio[used], lam[b[used]], rtol=1e-12)


def test_link_rates_of_many_sets_are_each_sets_rates() -> None:
    rng = np.random.default_rng(2)
    rx = rng.uniform(1e-9, 1e-6, (5, 8))
    noise = np.full((5, 8), 1e-9)
    bw, thr = np.full((5, 1), 20.0), np.full((1, 8), 0.2)
    sets = rng.random((6, 5, 8)) < 0.3
    for interference, scheduler, joint in (
        ("active", "proportional_fair", "sum_rates"),
        ("full_buffer", "rate_fair", "noncoherent"),
        ("none", "resource_fair", "noncoherent"),
    ):
        model = LinkModel(interference, scheduler, joint, 7.4063)
        together = link_rates(model, rx, noise, bw, thr, sets)
        for k in range(len(sets)):
            alone = link_rates(model, rx, noise, bw, thr, copy.deepcopy(sets[k]))
            assert np.array_equal(alone, together[k])
