"""Every mobile layout as a PettingZoo ParallelEnv: PettingZoo's own API and seed tests, UEs
that come and go (dense_urban), and the CLI's one-line errors."""

from __future__ import annotations

import warnings

import pytest

import mobrl

pettingzoo_test = pytest.importorskip("pettingzoo.test")

LAYOUTS = ["small", "medium", "large", "dense_urban", "highway"]


@pytest.mark.parametrize("obs", ["mobile", "topk"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pettingzoo_api_and_seed_tests_pass(layout: str, obs: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PettingZoo reports API slips as warnings
        pettingzoo_test.parallel_api_test(mobrl.parallel_env(layout, obs=obs), num_cycles=120)
        pettingzoo_test.parallel_seed_test(lambda: mobrl.parallel_env(layout, obs=obs))


def test_ues_that_come_and_go_join_and_leave_agents() -> None:
    env = mobrl.parallel_env("dense_urban", obs="topk")
    env.reset(seed=3)
    seen, finished = [set(env.agents)], set()
    for _ in range(100):
        before = set(env.agents)
        obs, rewards, terms, truncs, infos = env.step(
            {a: env.action_space(a).sample() for a in env.agents}
        )
        assert set(obs) == set(rewards) == set(truncs) >= before  # every live UE, and arrivals
        assert not (set(env.agents) & finished)  # no UE comes back
        finished |= {a for a in truncs if truncs[a]}
        seen.append(set(env.agents))
        if not env.agents:
            break
    assert any(after - before for before, after in zip(seen, seen[1:]))  # arrivals
    assert any(before - after for before, after in zip(seen[:-2], seen[1:-1]))  # departures
    assert seen[-1] == set() and finished <= set(env.possible_agents)


def test_same_seed_same_episode_and_bad_input_is_one_line() -> None:
    def episode(seed: int) -> list[float]:
        env = mobrl.parallel_env("small", obs="topk")
        env.reset(seed=seed)
        total = []
        while env.agents:
            _, rewards, *_ = env.step({a: 1 for a in env.agents})  # toggle the strongest
            total.append(sum(rewards.values()))
        return total

    assert episode(5) == episode(5) != episode(6)
    with pytest.raises(mobrl.UserError, match="not one"):
        mobrl.parallel_env("cartpole")
    with pytest.raises(mobrl.UserError, match="Did you mean 'small'"):
        mobrl.parallel_env("smal")
    with pytest.raises(mobrl.UserError, match="env.obs"):
        mobrl.parallel_env("small", obs="top")
    with pytest.raises(mobrl.UserError, match="Drop env.decide"):
        mobrl.parallel_env("small", "env.decide=in_turns", obs="topk")
