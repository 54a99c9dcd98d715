"""`mobrl.energy`: the base-station power models against their sources' numbers, computed by
hand here (TR 38.864 Tables 5.1-3 to 5.1-5; EARTH, Auer et al. 2011, eq. 1 and Table II)."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.core.errors import UserError
from mobrl.energy import MODELS, model, station_power

#: TR 38.864 Table 5.1-3, typed from the table: (category, set) -> deep, light, micro, DL, UL
TABLE_5_1_3 = {
    (1, 1): [1, 25, 55, 280, 110],
    (1, 2): [1, 25, 50, 200, 90],
    (1, 3): [1, 25, 38, 152, 80],
    (2, 1): [1, 2.1, 5.5, 32, 6.5],
    (2, 2): [1, 2.1, 5.0, 26, 5.8],
    (2, 3): [1, 2.1, 3.0, 17.6, 4.2],
}
STATES = ["deep_sleep", "light_sleep", "micro_sleep", "active", "active_ul"]


@pytest.mark.parametrize(("category", "config"), sorted(TABLE_5_1_3))
def test_tr38864_at_full_load_is_table_5_1_3(category, config) -> None:
    got = station_power("tr38864", STATES, 1.0, category=category, config=config)
    assert got.tolist() == TABLE_5_1_3[category, config]


def test_tr38864_between_micro_sleep_and_active_with_the_load() -> None:
    # category 1, set 1: micro sleep 55, active DL 280; a quarter of the resources in use
    # for the step: 55 + 0.25 x 225 = 111.25; none: micro sleep's 55
    got = station_power("tr38864", "active", [0.0, 0.25, 1.0])
    assert got.tolist() == [55.0, 111.25, 280.0]
    # sleep states ignore the load; states and loads broadcast together
    both = station_power("tr38864", [["deep_sleep"], ["active"]], [0.0, 0.5])
    assert both.tolist() == [[1.0, 1.0], [55.0, 167.5]]


def test_tr38864_transitions_are_tables_5_1_4_and_5_1_5() -> None:
    tr = model("tr38864")
    # (seconds, extra energy in relative power x s): 50 ms / 1,000 rel x ms, and so on
    expected = {
        (1, "deep_sleep"): (0.05, 1.0),
        (1, "light_sleep"): (0.006, 0.09),
        (2, "deep_sleep"): (10.0, 17.0),
        (2, "light_sleep"): (0.64, 1.088),
        (1, "micro_sleep"): (0.0, 0.0),
        (2, "active"): (0.0, 0.0),
    }
    for (category, state), (seconds, energy) in expected.items():
        found = tr.transition(state, tr.check({"category": category}))
        assert (found.seconds, found.energy) == pytest.approx((seconds, energy), abs=1e-12)


@pytest.mark.parametrize(
    ("kind", "n_trx", "p_max", "p0", "slope", "p_sleep"),
    [
        ("macro", 6, 20.0, 130.0, 4.7, 75.0),
        ("rrh", 6, 20.0, 84.0, 2.8, 56.0),
        ("micro", 2, 6.3, 56.0, 2.6, 39.0),
        ("pico", 2, 0.13, 6.8, 4.0, 4.3),
        ("femto", 2, 0.05, 4.8, 8.0, 2.9),
    ],
)
def test_earth_is_eq_1_for_every_kind_at_any_load(kind, n_trx, p_max, p0, slope, p_sleep):
    loads = np.array([0.0, 0.1, 0.37, 0.5, 1.0])
    got = station_power("earth", "active", loads, kind=kind)
    assert got == pytest.approx(n_trx * (p0 + slope * loads * p_max), rel=1e-12)
    assert station_power("earth", "sleep", 0.7, kind=kind) == pytest.approx(n_trx * p_sleep)


def test_earth_by_hand() -> None:
    # a macro station: 6 x (130 + 4.7 x 20) = 1,344 W full, 6 x (130 + 4.7 x 10) = 1,062 W at
    # half load, 6 x 130 = 780 W idle, 6 x 75 = 450 W asleep
    got = station_power("earth", ["active", "active", "active", "sleep"], [1.0, 0.5, 0.0, 0.0])
    assert got.tolist() == [1344.0, 1062.0, 780.0, 450.0]


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (lambda: station_power("tr38865", "active"), "unknown power.model 'tr38865'"),
        (lambda: station_power("tr38864", "active", category=3), "power.category=3 is not"),
        (lambda: station_power("tr38864", "active", config=4), "power.config=4 is not"),
        (lambda: station_power("earth", "active", kind="mega"), "unknown power.kind 'mega'"),
        (lambda: station_power("earth", "deep_sleep"), "unknown state of power model earth"),
        (lambda: station_power("earth", "active", kind="micro", category=1), "power key"),
        (lambda: station_power("tr38864", "active", 1.5), "load 1.5 is not a share"),
        (lambda: station_power("tr38864", "active", -0.1), "load -0.1 is not a share"),
    ],
)
def test_bad_input_is_one_line(call, said) -> None:
    with pytest.raises(UserError, match=said.replace("(", r"\(")) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_every_model_lists_active_first_and_answers_every_state() -> None:
    for name, found in MODELS.items():
        assert found.states[0] == "active" and found.name == name
        got = station_power(name, list(found.states), 0.5)
        assert got.shape == (len(found.states),) and (got > 0).all()


def test_the_power_command_tells_every_state_and_writes_json(tmp_path) -> None:
    import json

    from rich.console import Console

    from mobrl.scenarios.power import power

    console = Console(record=True, width=120)
    out = tmp_path / "power.json"
    power("tr38864", {"category": 2, "config": 3, "kind": None}, out, console)
    text = console.export_text()
    assert "tr38864 (category=2, config=3): power in relative (deep sleep = 1)" in text
    data = json.loads(out.read_text())
    rows = {row["state"]: row for row in data["rows"]}
    # Table 5.1-3, category 2, set 3: micro sleep 3.0, active DL 17.6: at half load 10.3
    assert rows["active"]["load 0.5"] == pytest.approx(10.3)
    assert rows["deep_sleep"]["wake s"] == 10.0 and rows["deep_sleep"]["wake energy"] == 17.0
    assert data["settings"] == {"category": 2, "config": 3}
