"""algo=mappo: each agent step's team in the learner's batch is the observations of the
agents that observed at that env step (checked against RLlib's own per-env-step view of the
episode, with UEs that arrive and leave and episodes cut across fragments), and the critic
pools it without regard to order or padding. Real RLlib env runners in this process, no Ray
cluster."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray.rllib")
import torch  # noqa: E402
from ray.rllib.connectors.learner import AddOneTsToEpisodesAndTruncate  # noqa: E402
from ray.rllib.core.columns import Columns  # noqa: E402
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner  # noqa: E402

from mobrl.core.errors import UserError  # noqa: E402
from mobrl.training.mappo import TEAM, TEAM_MASK, TeamObservations  # noqa: E402


def _config(overrides: list[str]) -> tuple[Any, Any]:
    from mobrl.config import compose
    from mobrl.envs import factory
    from mobrl.training.algos import build_algorithm_config

    cfg = compose(["env=ma", "run=smoke", "algo=mappo", *overrides])
    factory.register()
    return cfg, build_algorithm_config(cfg, factory.ENV_NAME, factory.env_config_from(cfg))


def _episodes(overrides: list[str], steps: int, fragments: int) -> list[Any]:
    """Multi-agent episodes of random actions, `fragments` samples of `steps` env steps."""
    _, config = _config(overrides)
    runner = MultiAgentEnvRunner(config=config)
    episodes = []
    for _ in range(fragments):
        episodes += runner.sample(num_timesteps=steps, random_actions=True)
    runner.stop()
    return episodes


def _rllib_teams(episode: Any) -> tuple[dict[int, list[np.ndarray]], dict[Any, list[int]]]:
    """RLlib's view: the observations at each env step of the chunk
    (`MultiAgentEpisode.get_observations(env_steps=True)`), and the env step of each agent's
    observations in order."""
    at_step: dict[int, list[np.ndarray]] = {}
    steps_of: dict[Any, list[int]] = defaultdict(list)
    for env_t in range(len(episode) + 1):
        observed = episode.get_observations(indices=env_t, env_steps=True)
        at_step[env_t] = [np.asarray(o, dtype=np.float32) for o in observed.values()]
        for agent in observed:
            steps_of[agent].append(env_t)
    return at_step, steps_of


def _same_set(team: np.ndarray, members: list[np.ndarray]) -> bool:
    ours = sorted(map(bytes, np.asarray(team, dtype=np.float32)))
    return ours == sorted(map(bytes, members))


def _run(piece: TeamObservations, episodes: list[Any]) -> dict[str, Any]:
    batch: dict[str, Any] = {}
    AddOneTsToEpisodesAndTruncate()(rl_module=None, batch=batch, episodes=episodes, shared_data={})
    return piece(rl_module=None, batch=batch, episodes=episodes, shared_data={})


def test_each_row_sees_the_agents_of_its_env_step() -> None:
    """dense_urban: UEs arrive and leave, and episodes are cut across fragments (chunks with
    a lookback). Every row of every agent (its final observation included, as PPO's learner
    adds it for the bootstrap value) gets exactly the observations RLlib's episode holds for
    that env step."""
    episodes = _episodes(["scenario=dense_urban"], 70, 2)
    truth = [_rllib_teams(episode) for episode in episodes]
    assert any(episode.env_t_started > 0 for episode in episodes)  # a continued chunk
    batch = _run(TeamObservations(team=1000), episodes)
    sizes, rows = set(), 0
    for episode, (at_step, steps_of) in zip(episodes, truth, strict=True):
        for agent, sa_episode in episode.agent_episodes.items():
            key = (episode.id_, agent, sa_episode.module_id)
            team, mask = batch[TEAM][key][0], batch[TEAM_MASK][key][0]
            assert len(team) == len(sa_episode) == len(steps_of[agent])
            own = sa_episode.get_observations(slice(0, len(sa_episode)))
            for row, env_t in enumerate(steps_of[agent]):
                real = team[row][mask[row] == 1.0]
                assert _same_set(real, at_step[env_t])
                assert any(np.array_equal(member, own[row]) for member in real)
                sizes.add(len(real))
                rows += 1
    assert rows > 1000 and len(sizes) > 5  # teams of many sizes: UEs came and went


def test_a_team_above_the_cap_is_one_subset_per_env_step() -> None:
    """small (5 UEs) with a cap of 3: every row's team has 3 members, all of that env step,
    and the agents of one env step share the same subset."""
    episodes = _episodes(["scenario=small", "env.sampler=multi_agent"], 60, 1)
    truth = [_rllib_teams(episode) for episode in episodes]
    batch = _run(TeamObservations(team=3, seed=1), episodes)
    for episode, (at_step, steps_of) in zip(episodes, truth, strict=True):
        shared: dict[int, set] = {}
        for agent, sa_episode in episode.agent_episodes.items():
            key = (episode.id_, agent, sa_episode.module_id)
            team, mask = batch[TEAM][key][0], batch[TEAM_MASK][key][0]
            assert team.shape[1] == 3 and (mask == 1.0).all()
            for row, env_t in enumerate(steps_of[agent]):
                members = set(map(bytes, team[row]))
                assert members <= set(map(bytes, at_step[env_t]))
                assert shared.setdefault(env_t, members) == members


def _slot_episodes(
    overrides: list[str], steps: int, fragments: int
) -> tuple[list[Any], list[np.ndarray], int]:
    """UE-slot episodes of `fragments` samples of `steps` slot steps (algo=mappo samples UE
    slots where they apply), the vector env's observation after its reset and each step (slot
    `copy * n_ues + ue` is UE `ue` of copy `copy`), and n_ues."""
    from mobrl.envs.slot_runner import UESlotEnvRunner

    _, config = _config(overrides)
    runner = config.env_runner_cls(config=config)
    assert isinstance(runner, UESlotEnvRunner) and runner.lean_reason is None
    env = runner.env.unwrapped
    seen: list[np.ndarray] = []
    reset, step = env.reset, env.step

    def reset_recorded(**kwargs: Any) -> Any:
        out = reset(**kwargs)
        seen.append(out[0].copy())
        return out

    def step_recorded(actions: Any) -> Any:
        out = step(actions)
        seen.append(out[0].copy())
        return out

    env.reset, env.step = reset_recorded, step_recorded
    episodes = []
    for _ in range(fragments):
        episodes += runner.sample(num_timesteps=steps)
    runner.stop()
    return episodes, seen, env.n_ues


def _vector_rows(episode: Any, seen: list[np.ndarray], n_ues: int) -> tuple[int, int]:
    """The copy of a slot's episode piece and the vector step its first observation came
    from, found by the piece's observations alone (its slot from the id's copy and UE)."""
    from mobrl.envs.slots import TEAM_SEP

    head, ue = episode.id_.rsplit(TEAM_SEP, 1)  # PPO's learner appends "_<i>" to each id
    copy = int(head.split(".")[-2])
    slot = copy * n_ues + int(ue.split("_")[0])
    own = np.asarray(episode.get_observations(slice(0, len(episode))), dtype=np.float32)
    starts = [
        k
        for k in range(len(seen) - len(own) + 1)
        if all(np.array_equal(seen[k + r][slot], own[r]) for r in range(len(own)))
    ]
    assert len(starts) == 1, (episode.id_, starts)
    return copy, starts[0]


def test_ue_slots_give_each_row_the_ues_of_its_copy_at_its_env_step() -> None:
    """algo=mappo on `small` samples UE slots (mobrl's lean runner; two env copies), and every
    row of every slot's episode (pieces cut across fragments, the bootstrap observation included) gets the
    observations of its env copy's UEs at that vector step, as the vector env returned them."""
    episodes, seen, n_ues = _slot_episodes(
        ["scenario=small", "run.resources.num_envs_per_env_runner=2"], 1200, 2
    )
    assert any(episode.t_started > 0 for episode in episodes)  # a continued piece
    assert {_vector_rows(episode, seen, n_ues)[0] for episode in episodes} == {0, 1}
    batch = _run(TeamObservations(team=1000), episodes)
    rows = 0
    for episode in episodes:
        copy, start = _vector_rows(episode, seen, n_ues)
        (team,), (mask,) = batch[TEAM][(episode.id_,)], batch[TEAM_MASK][(episode.id_,)]
        assert team.shape[:2] == (len(episode), n_ues) and (mask == 1.0).all()
        for row in range(len(episode)):
            copy_obs = seen[start + row][copy * n_ues : (copy + 1) * n_ues]
            assert _same_set(team[row], list(copy_obs))
            rows += 1
    assert rows >= 2400 + len(episodes)


def test_ue_slots_above_the_cap_share_one_subset_per_env_step() -> None:
    """small's 5 UEs with a cap of 3: each row's team is 3 of its copy's UEs at that step,
    the same 3 for every UE of the copy."""
    episodes, seen, n_ues = _slot_episodes(
        ["scenario=small", "run.resources.num_envs_per_env_runner=2"], 300, 1
    )
    batch = _run(TeamObservations(team=3, seed=1), episodes)
    shared: dict[tuple[int, int], set] = {}
    for episode in episodes:
        copy, start = _vector_rows(episode, seen, n_ues)
        (team,) = batch[TEAM][(episode.id_,)]
        assert team.shape[1] == 3
        for row in range(len(episode)):
            members = set(map(bytes, team[row]))
            copy_obs = seen[start + row][copy * n_ues : (copy + 1) * n_ues]
            assert members <= set(map(bytes, copy_obs))
            assert shared.setdefault((copy, start + row), members) == members


def test_episodes_of_another_sampler_are_refused_by_name() -> None:
    """A single-agent episode that is no UE slot's would leave the critic without its team:
    the piece says so rather than train a critic that sees each agent alone."""
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    episode = SingleAgentEpisode(observations=[np.zeros(3, np.float32)], len_lookback_buffer=0)
    with pytest.raises(ValueError, match="env.sampler=multi_agent"):
        TeamObservations()(rl_module=None, batch={}, episodes=[episode], shared_data={})


def _module() -> Any:
    """The learner's module of `small`'s shared policy (not the env runners' inference-only
    one)."""
    _, config = _config(["scenario=small", "env.sampler=multi_agent"])
    runner = MultiAgentEnvRunner(config=config)
    spec = config.get_multi_rl_module_spec(spaces=runner.get_spaces(), inference_only=False)
    runner.stop()
    return spec.build()["shared"]


def test_the_critic_pools_the_team_regardless_of_order_and_padding() -> None:
    module = _module()
    torch.manual_seed(0)
    rows, width = 6, int(np.prod(module.observation_space.shape))
    obs = torch.rand(rows, width)
    team = torch.rand(rows, 4, width)
    mask = torch.ones(rows, 4)
    with torch.no_grad():
        value = module.compute_values({Columns.OBS: obs, TEAM: team, TEAM_MASK: mask})
        shuffled = module.compute_values(
            {Columns.OBS: obs, TEAM: team[:, [2, 0, 3, 1]], TEAM_MASK: mask}
        )
        padded = module.compute_values(
            {
                Columns.OBS: obs,
                TEAM: torch.cat([team, torch.rand(rows, 3, width)], dim=1),
                TEAM_MASK: torch.cat([mask, torch.zeros(rows, 3)], dim=1),
            }
        )
        other = team.clone()
        other[:, 1] = torch.rand(rows, width)
        changed = module.compute_values({Columns.OBS: obs, TEAM: other, TEAM_MASK: mask})
        alone = module.compute_values({Columns.OBS: obs})
        itself = module.compute_values(
            {Columns.OBS: obs, TEAM: obs.unsqueeze(1), TEAM_MASK: torch.ones(rows, 1)}
        )
    assert value.shape == (rows,)
    torch.testing.assert_close(shuffled, value, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(padded, value, rtol=1e-5, atol=1e-6)
    assert (changed - value).abs().min() > 0  # a teammate's observation moves the value
    torch.testing.assert_close(alone, itself)  # no team column: the agent alone


def test_the_actor_is_ppos_and_env_runners_carry_no_critic() -> None:
    """The acting network is PPO's (the team encoder is left out of the inference-only module
    that env runners, evaluation and export use)."""
    module = _module()
    assert "team" in module.get_non_inference_attributes()
    state = module.get_state(inference_only=True)
    assert state and not any(key.startswith(("team.", "vf.")) for key in state)
    assert any(key.startswith("team.") for key in module.get_state())


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        (["scenario=small", "env=central"], "has one agent"),
        (["scenario=small", "algo.critic.team=0"], "algo.critic.team=0"),
        (["scenario=small", "algo.critic.hiddens=[]"], "algo.critic.hiddens"),
    ],
)
def test_bad_settings_are_one_line(overrides: list[str], words: str) -> None:
    from mobrl.config import compose
    from mobrl.training.checks import check_settings

    with pytest.raises(UserError, match=words.replace("[", r"\[").replace(".", r"\.")):
        check_settings(compose(["env=ma", "run=smoke", "algo=mappo", *overrides]))


def test_the_learner_pipeline_adds_the_team_first() -> None:
    """algo=mappo's learner connector starts with the team (before RLlib's default pieces
    turn episodes into columns); algo=ppo's has none."""
    for algo, expected in (("mappo", True), ("ppo", False)):
        _, config = _config(["scenario=small", f"algo={algo}", "env.sampler=multi_agent"])
        runner = MultiAgentEnvRunner(config=config)
        env = runner.env.unwrapped
        spaces = (env.observation_space, env.action_space)
        runner.stop()
        pipeline = config.build_learner_connector(*spaces)
        names = [type(piece).__name__ for piece in pipeline.connectors]
        assert (names[0] == "TeamObservations") is expected, names


def test_mappo_reads_ppos_presets_and_no_others() -> None:
    """MAPPO's hyperparameters are PPO's: PPO's preset for the task applies by default,
    `preset=ppo/...` too (imitation included, which fits the actor MAPPO shares with PPO);
    another algorithm's preset is refused in one line naming PPO's."""
    from mobrl.config import compose
    from mobrl.training.checks import check_settings

    check_settings(compose(["scenario=small", "algo=mappo", "preset=ppo/small/ma_imitate"]))
    # without a preset named, MAPPO takes PPO's for the task, as PPO does
    for overrides, preset in (
        (["scenario=small"], "ppo/small/ma"),
        (["scenario=cartpole"], "ppo/cartpole"),
        (["scenario=uma19"], "ppo/any_layout/ma"),
    ):
        assert compose([*overrides, "algo=mappo"]).preset.name == preset
    with pytest.raises(UserError, match="tuned for algo=dqn.*ppo/"):
        check_settings(compose(["scenario=small", "algo=mappo", "preset=dqn/cartpole"]))
