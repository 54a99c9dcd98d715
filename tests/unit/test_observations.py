"""`env.obs=extended`: mobile-env's observation plus per-station range and load, the same on
both engines, and what each added column means."""

from __future__ import annotations

import numpy as np
import pytest

from mobrl.config import validate_command_line
from mobrl.envs.factory import env_config_from, make_env, make_mobile_core
from mobrl.errors import UserError


@pytest.mark.parametrize("mode", ["ma", "central"])
def test_extended_observation_is_the_same_on_both_engines(mode: str) -> None:
    fast = make_mobile_core("small", mode, "fast", {"seed": 3}, obs="extended")
    stock = make_mobile_core("small", mode, "stock", {"seed": 3}, obs="extended")
    assert fast.observation_space == stock.observation_space
    obs_f, _ = fast.reset()
    obs_s, _ = stock.reset()
    rng = np.random.default_rng(0)
    for _ in range(40):
        if mode == "ma":
            assert obs_f.keys() == obs_s.keys()
            for ue in obs_f:
                np.testing.assert_allclose(obs_f[ue], obs_s[ue], atol=1e-6)
            action = {ue: int(rng.integers(0, fast.NUM_STATIONS + 1)) for ue in obs_f}
        else:
            np.testing.assert_allclose(obs_f, obs_s, atol=1e-6)
            action = rng.integers(0, fast.NUM_STATIONS + 1, size=len(fast.users))
        obs_f, *_ = fast.step(action)
        obs_s, *_ = stock.step(action)


def test_added_columns_are_range_and_load_of_each_station() -> None:
    core = make_mobile_core("medium", "ma", "fast", {"seed": 1}, obs="extended")
    plain = make_mobile_core("medium", "ma", "fast", {"seed": 1})
    n_bs, n_ues = core.NUM_STATIONS, len(core.users)
    obs, _ = core.reset()
    base, _ = plain.reset()
    rng = np.random.default_rng(1)
    for _ in range(30):
        action = {ue: int(rng.integers(0, n_bs + 1)) for ue in obs}
        obs, *_ = core.step(action)
        base, *_ = plain.step(action)
        stations = [core.stations[b] for b in sorted(core.stations)]
        for ue_id, row in obs.items():
            width = base[ue_id].size
            np.testing.assert_array_equal(row[:width], base[ue_id])  # mobile-env's part first
            reach, load = row[width : width + n_bs], row[width + n_bs :]
            ue = core.users[ue_id]
            expected_reach = [float(core.check_connectivity(bs, ue)) for bs in stations]
            served = [len(core.connections.get(bs, ())) / n_ues for bs in stations]
            np.testing.assert_array_equal(reach, expected_reach)
            np.testing.assert_allclose(load, np.array(expected_reach) * served, atol=1e-6)
    space = core.observation_space[min(core.users)]
    assert space.shape == (plain.observation_space[min(plain.users)].shape[0] + 2 * n_bs,)


def test_env_obs_reaches_the_env_and_a_typo_is_a_user_error() -> None:
    env_config = env_config_from(validate_command_line(["scenario=small", "env.obs=extended"]))
    assert env_config["obs"] == "extended"
    env = make_env({**env_config, "sampler": "multi_agent"})
    obs, _ = env.reset()
    assert next(iter(obs.values())).shape == (4 * 3 + 1 + 2 * 3,)  # 3 stations
    with pytest.raises(UserError, match="unknown env.obs 'extnded'. Did you mean 'extended'"):
        validate_command_line(["env.obs=extnded"])
