"""algo=mappo: PPO whose critic sees the team (Yu et al. 2022's MAPPO, for agents that come
and go).

The actors stay decentralised and shared: each agent acts on its own observation, as with
algo=ppo (IPPO). The critic of an agent's step also sees its team: the observations of every
agent its policy plays that observed at the same env step. It encodes each of them with one
network and averages the codes (a permutation-invariant pool, Zaheer et al.'s deep sets), so
it fits any number of agents, and agents that arrive and leave.

Built from RLlib's public extension points only:
- `TeamObservations`, a learner connector piece (`AlgorithmConfig.training(learner_connector=
  ...)`), puts each agent step's team into the train batch (`TEAM`, `TEAM_MASK`), read from
  the multi-agent episodes (`MultiAgentEpisode.env_t_to_agent_t` maps each agent's steps to
  the env's);
- `TeamCriticPPOModule`, PPO's default torch RLModule whose `compute_values` (RLlib's
  `ValueFunctionAPI`, called by GAE and the value loss) pools the team.

A team larger than `algo.critic.team` is a uniform random subset of that size, drawn once per
env step: its mean code estimates the whole team's without bias, and a batch's memory stays
at rows × team × observation size. The team needs the agents of a step together. RLlib's
multi-agent runner keeps them in one episode; mobrl's UE slots (`mobrl.envs.slots`) sample
each UE as a single-agent episode whose id names its env copy's episode, and the slots of a
copy step together, so the piece finds a team there too (`env.sampler=auto` samples UE slots
wherever they apply, as for algo=ppo).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.connectors.connector_v2 import ConnectorV2
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.columns import Columns
from ray.rllib.core.models.base import CRITIC, ENCODER_OUT
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode

from mobrl.core.errors import UserError, closest_first
from mobrl.envs.slots import team_of

if TYPE_CHECKING:
    from omegaconf import DictConfig
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

#: batch columns: each row's team of observations (team × observation) and which are real
TEAM, TEAM_MASK = "team_obs", "team_mask"
#: `algo.critic` keys and their defaults
CRITIC_DEFAULTS: dict[str, Any] = {"team": 16, "hiddens": [64]}


class TeamObservations(ConnectorV2):
    """Learner connector piece: each agent step's team (the observations of the agents its
    policy plays that observed at the same env step, itself included) as `TEAM` rows of
    `team` × observation, zero-padded to the batch's largest team, with `TEAM_MASK` marking
    the real ones. A row no env step maps (none in RLlib's episodes so far) gets a team of
    itself. The learner reports the mean team size a row saw (`team_size_mean`)."""

    def __init__(
        self,
        input_observation_space: Any = None,
        input_action_space: Any = None,
        *,
        team: int = CRITIC_DEFAULTS["team"],
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(input_observation_space, input_action_space, **kwargs)
        self.team = int(team)
        self._rng = np.random.default_rng(seed)

    def __call__(
        self,
        *,
        rl_module: Any,
        batch: dict[str, Any],
        episodes: list[Any],
        explore: bool | None = None,
        shared_data: dict | None = None,
        **kwargs: Any,
    ) -> Any:
        if TEAM in batch or not episodes:
            return batch
        if not isinstance(episodes[0], MultiAgentEpisode):
            return self._slot_teams(batch, episodes, kwargs.get("metrics"))
        plans = [self._episode(episode) for episode in episodes]
        width = max((len(t) for plan in plans for t in plan[1].values()), default=1)
        by_id = {episode.id_: plan for episode, plan in zip(episodes, plans, strict=True)}
        members = rows_seen = 0
        for sa_episode in self.single_agent_episode_iterator(
            episodes, agents_that_stepped_only=False
        ):
            rows, teams = by_id[sa_episode.multi_agent_episode_id]
            own = sa_episode.get_observations(slice(0, len(sa_episode)))
            team, mask = _padded(rows.get(sa_episode.agent_id, {}), teams, own, width)
            self.add_n_batch_items(batch, TEAM, team, len(sa_episode), sa_episode)
            self.add_n_batch_items(batch, TEAM_MASK, mask, len(sa_episode), sa_episode)
            members, rows_seen = members + mask.sum(), rows_seen + len(mask)
        _log_team_size(kwargs.get("metrics"), members, rows_seen)
        return batch

    def _slot_teams(self, batch: dict[str, Any], episodes: list[Any], metrics: Any) -> Any:
        """UE slots (`mobrl.envs.slots`): each slot's episode is one UE's, and its id names
        its copy's episode (`team_of`). The slots of a copy start, step and end together, so
        the pieces of one copy episode in the batch with the same start and length are the
        team, row by row: row t of every member is the same env step."""
        groups: dict[tuple[str, int, int], list[Any]] = defaultdict(list)
        for episode in episodes:
            team = team_of(episode.id_)
            if team is None:
                raise ValueError(
                    f"algo=mappo's critic needs the UEs of each env step together; episode "
                    f"{episode.id_} was not sampled as a UE slot of mobrl's env runner. Use "
                    "env.sampler=multi_agent."
                )
            groups[(team, episode.t_started, len(episode))].append(episode)
        teams: dict[tuple[str, int], np.ndarray] = {}
        for members in groups.values():
            observed = np.stack(
                [_rows(m.get_observations(slice(0, len(m)))) for m in members], axis=1
            )  # rows × members × observation
            if observed.shape[1] > self.team:
                picks = np.stack(
                    [
                        self._rng.choice(observed.shape[1], self.team, replace=False)
                        for _ in range(len(observed))
                    ]
                )
                observed = np.take_along_axis(observed, picks[:, :, None], axis=1)
            for member in members:
                teams[(member.id_, member.t_started)] = observed
        width = max(team.shape[1] for team in teams.values())
        rows_seen = members_seen = 0
        for sa_episode in self.single_agent_episode_iterator(episodes):
            team = teams[(sa_episode.id_, sa_episode.t_started)]
            mask = np.ones(team.shape[:2], dtype=np.float32)
            if team.shape[1] < width:  # zero-padded, as `_padded` pads agents' teams
                team = np.pad(team, ((0, 0), (0, width - team.shape[1]), (0, 0)))
                mask = np.pad(mask, ((0, 0), (0, width - mask.shape[1])))
            self.add_n_batch_items(batch, TEAM, team, len(sa_episode), sa_episode)
            self.add_n_batch_items(batch, TEAM_MASK, mask, len(sa_episode), sa_episode)
            members_seen, rows_seen = members_seen + mask.sum(), rows_seen + len(mask)
        _log_team_size(metrics, members_seen, rows_seen)
        return batch

    def _episode(
        self, episode: MultiAgentEpisode
    ) -> tuple[dict[Any, dict[int, tuple[Any, int]]], dict[tuple[Any, int], np.ndarray]]:
        """Which (module, env step) each agent's rows belong to, and each team: the stacked
        observations of the agents of one module at one env step (a random subset of
        `self.team` where more)."""
        rows: dict[Any, dict[int, tuple[Any, int]]] = {}
        members: dict[tuple[Any, int], list[np.ndarray]] = defaultdict(list)
        for agent, sa_episode in episode.agent_episodes.items():
            observations = sa_episode.get_observations(slice(0, len(sa_episode)))
            mine = rows.setdefault(agent, {})
            for env_t, row in _agent_rows(episode, agent, sa_episode):
                key = (sa_episode.module_id, env_t)
                mine[row] = key
                members[key].append(observations[row])
        teams = {}
        for key, observed in members.items():
            team = np.asarray(observed, dtype=np.float32)
            if len(team) > self.team:
                team = team[self._rng.choice(len(team), self.team, replace=False)]
            teams[key] = team
        return rows, teams


def _rows(observations: Any) -> np.ndarray:
    """Observations as float32 rows (one flat observation each)."""
    observations = np.asarray(observations, dtype=np.float32)
    return observations.reshape(len(observations), -1)


def _log_team_size(metrics: Any, members: float, rows: int) -> None:
    """The learner's metric: the mean number of agents the critic saw per row."""
    if metrics is not None and rows:
        metrics.log_value((ALL_MODULES, "team_size_mean"), members / rows, window=1)


def _agent_rows(episode: MultiAgentEpisode, agent: Any, sa_episode: Any) -> list[tuple[int, int]]:
    """(env step in the chunk, row of the agent's observations) for each observation of
    `agent` in this chunk of `episode`, from RLlib's env-to-agent step mapping (the agent's
    global steps, "S" where it did not observe)."""
    mapping = episode.env_t_to_agent_t[agent]
    data, lookback = list(mapping.data), mapping.lookback
    pairs = []
    for env_t in range(len(data) - lookback):
        agent_t = data[lookback + env_t]
        if agent_t == episode.SKIP_ENV_TS_TAG:
            continue
        row = int(agent_t) - sa_episode.t_started
        if 0 <= row < len(sa_episode):
            pairs.append((env_t, row))
    return pairs


def _padded(
    rows: dict[int, tuple[Any, int]],
    teams: dict[tuple[Any, int], np.ndarray],
    own: np.ndarray,
    width: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One agent's rows of teams, zero-padded to `width`, and their masks."""
    own = _rows(own)
    team = np.zeros((len(own), width, own.shape[1]), dtype=np.float32)
    mask = np.zeros((len(own), width), dtype=np.float32)
    for row in range(len(own)):
        members = teams.get(rows[row]) if row in rows else None
        if members is None:
            members = own[row : row + 1]
        team[row, : len(members)] = members.reshape(len(members), -1)
        mask[row, : len(members)] = 1.0
    return team, mask


class TeamCriticPPOModule(DefaultPPOTorchRLModule):
    """PPO's default torch RLModule with a critic that pools the team (`TEAM`): each member's
    observation through one encoder (`team`), the codes averaged over the real members, and
    the value a linear map of the agent's own critic embedding with that mean. Without a team
    column (an agent alone) the team is the agent itself. The actor is PPO's, untouched."""

    def setup(self) -> None:
        import torch.nn as nn

        super().setup()
        if self.inference_only:
            return
        hiddens = [
            int(h) for h in self.model_config.get("team_hiddens", CRITIC_DEFAULTS["hiddens"])
        ]
        width = int(np.prod(self.observation_space.shape))
        layers: list[Any] = []
        for size in hiddens:
            layers += [nn.Linear(width, size), nn.Tanh()]
            width = size
        self.team = nn.Sequential(*layers)
        self.vf = nn.Linear(int(self.catalog.latent_dims[0]) + width, 1)

    def get_non_inference_attributes(self) -> list[str]:
        return [*super().get_non_inference_attributes(), "team"]

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        import torch

        if embeddings is None:
            if hasattr(self.encoder, "critic_encoder"):
                embeddings = self.encoder.critic_encoder(batch)[ENCODER_OUT]
            else:
                embeddings = self.encoder(batch)[ENCODER_OUT][CRITIC]
        team, mask = batch.get(TEAM), batch.get(TEAM_MASK)
        if team is None:
            obs = batch[Columns.OBS]
            team = obs.reshape(obs.shape[0], 1, -1)
            mask = torch.ones(obs.shape[0], 1, device=obs.device)
        codes = self.team(team.float())
        weights = mask.float().unsqueeze(-1)
        pooled = (codes * weights).sum(-2) / weights.sum(-2).clamp(min=1.0)
        return self.vf(torch.cat([embeddings, pooled], dim=-1)).squeeze(-1)


def critic_settings(cfg: DictConfig) -> dict[str, Any]:
    """`algo.critic` with its defaults, each key and value checked in one line."""
    from omegaconf import OmegaConf

    given = OmegaConf.to_container(cfg.algo.get("critic") or {}, resolve=True)
    for key in given:  # type: ignore[union-attr]
        if key not in CRITIC_DEFAULTS:
            close = closest_first(str(key), CRITIC_DEFAULTS)[0]
            raise UserError(
                f"'algo.critic.{key}' is not a setting of algo=mappo's critic. Did you mean "
                f"'algo.critic.{close}'? Its settings: {', '.join(CRITIC_DEFAULTS)}."
            )
    settings = {**CRITIC_DEFAULTS, **given}  # type: ignore[dict-item]
    team, hiddens = settings["team"], settings["hiddens"]
    if not isinstance(team, int) or isinstance(team, bool) or team < 1:
        raise UserError(f"algo.critic.team={team} must be a whole number >= 1. Use e.g. 16.")
    if (
        not isinstance(hiddens, list)
        or not hiddens
        or not all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in hiddens)
    ):
        raise UserError(
            f"algo.critic.hiddens={hiddens} must be a list of layer sizes >= 1. Use e.g. [64]."
        )
    return settings


def configure(algo: AlgorithmConfig, cfg: DictConfig, model: Any) -> None:
    """PPO's `algo` as MAPPO: the team-critic RLModule for every policy (with `model`, RLlib's
    DefaultModelConfig, and the critic's layers) and the team in the learner's batches."""
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    settings = critic_settings(cfg)
    if model.use_lstm:
        raise UserError(
            "algo=mappo's critic pools the team at each step; a recurrent model "
            "(algo.model.use_lstm) is not supported. Remove it, or use algo=ppo."
        )
    config = {**dataclasses.asdict(model), "team_hiddens": list(settings["hiddens"])}
    seed = int(cfg.run.seed)
    algo.rl_module(
        rl_module_spec=RLModuleSpec(module_class=TeamCriticPPOModule), model_config=config
    )
    algo.learners(learner_connector=partial(_team_connector, team=settings["team"], seed=seed))


def _team_connector(obs_space: Any, act_space: Any, *, team: int, seed: int) -> TeamObservations:
    """The learner connector builder RLlib calls with the spaces (`learner_connector`)."""
    return TeamObservations(obs_space, act_space, team=team, seed=seed)
