"""Does mobile-env's per-UE reward pay one UE for hurting the others? Measured in one run.

Every UE follows the `greedy` heuristic, except one that follows `full` (connect to every
station in range). Over the same episode seeds, the script compares that UE's own return and
the team's return (the sum over UEs, what `mobrl evaluate` scores) with all-greedy play. A
positive own gain with a negative team gain is the social dilemma behind `env.team_reward`.
Usage:

    python scripts/incentives.py [medium] [--seeds 10] [--ues all|0,3,7]
"""

from __future__ import annotations

import argparse

import numpy as np


def play(env_config: dict, seed: int, deviator: str | None) -> tuple[dict[str, float], float]:
    """Per-UE returns and the team return of one episode: greedy UEs, `deviator` plays full."""
    from mobrl.envs.wrappers import find_core, ue_id
    from mobrl.evaluation.policies import FullPolicy, GreedyPolicy
    from mobrl.evaluation.rollout import episode_env

    greedy, full = GreedyPolicy(), FullPolicy()
    env = episode_env(env_config, seed)
    obs, _ = env.reset(seed=seed)
    core = find_core(env)
    own: dict[str, float] = {}
    team = 0.0
    while True:
        actions = {
            agent: (full if agent == deviator else greedy).ue_action(core, core.users[ue_id(agent)])
            for agent in obs
        }
        obs, rewards, _, truncated, _ = env.step(actions)
        for agent, value in rewards.items():
            own[agent] = own.get(agent, 0.0) + value
        team += sum(rewards.values())
        if truncated["__all__"]:
            env.close()
            return own, team


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenario", nargs="?", default="medium")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--ues", default="all", help="UE ids that deviate: all or e.g. 0,3,7")
    args = parser.parse_args()

    from rich.console import Console
    from rich.table import Table

    from mobrl.config import compose
    from mobrl.envs.factory import env_config_from

    env_config = env_config_from(compose([f"scenario={args.scenario}", "env=ma"]))
    base = [play(env_config, seed, None) for seed in range(args.seeds)]
    table = Table(title=f"{args.scenario}: one UE plays full, the others greedy")
    for column in ("UE", "own gain", "team gain", "seeds"):
        table.add_column(column, justify="right")
    from mobrl.envs.wrappers import ue_id

    agents = sorted(base[0][0], key=ue_id)
    if args.ues != "all":
        agents = [f"ue_{ue.strip()}" for ue in args.ues.split(",")]
    gains = {}
    for agent in agents:
        own_gain, team_gain = [], []
        for seed, (own0, team0) in enumerate(base):
            own1, team1 = play(env_config, seed, agent)
            own_gain.append(own1.get(agent, 0.0) - own0.get(agent, 0.0))
            team_gain.append(team1 - team0)
        gains[agent] = (float(np.mean(own_gain)), float(np.mean(team_gain)))
        table.add_row(agent, f"{gains[agent][0]:+.2f}", f"{gains[agent][1]:+.2f}", str(args.seeds))
    own_mean, team_mean = np.mean(list(gains.values()), axis=0)
    table.add_section()
    table.add_row("mean", f"{own_mean:+.2f}", f"{team_mean:+.2f}", str(args.seeds))
    Console().print(table)
    better_alone = sum(own > 0 > team for own, team in gains.values())
    print(f"{better_alone} of {len(gains)} UEs gain alone by playing full while the team loses")


if __name__ == "__main__":
    main()
