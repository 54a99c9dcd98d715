"""What a second round of turns can add to a zoo entry that decides in turns.

The entry (zoo:umi_dense or zoo:uma19, trained with one round) is played with
`env.turn_rounds=2`: its network decides the first round as it was trained, and in the second
round each UE's best reply to every other UE's move of the step decides (the slot of the
largest positive gain its turn observes, or keeping; what `run.imitate` labels a second
round with). Against the entry in one round, greedy and `oracle2` on the same seeds, with
the share of the greedy -> oracle2 gap in mean UE utility each closes. Usage:

    python scripts/turn_revision.py [--entry umi_dense] [--episodes 20] [--first-seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np


class RevisedEntry:
    """A zoo entry trained in one round of turns, playing an env of two rounds: its network
    in the first (the observation as it was trained: raw gains, no round column), each UE's
    best reply in the second."""

    name, reads_observation = "revised", True

    def __init__(self, entry: str, k: int):
        from mobrl.evaluation.zoo import ZooPolicy

        self.net, self.k = ZooPolicy.load(f"zoo:{entry}"), k

    def reset(self, seed: int | None = None) -> None:
        self.net.reset(seed)

    def act(self, observation: dict, env: object = None) -> dict:
        from mobrl.envs.turns import GAIN_SCALE

        agents = list(observation)
        rows = np.stack([observation[a] for a in agents])
        k = self.k
        scaled = rows[:, -(k + 2) : -2].astype(np.float64)
        gains = np.sign(scaled) * np.expm1(np.abs(scaled)) * GAIN_SCALE
        if rows[0, -1] > 0:  # the second round: each UE's best reply
            chosen = np.where(gains.max(axis=1) > 0, gains.argmax(axis=1) + 1, 0)
        else:
            first = np.concatenate([rows[:, : -(k + 2)], gains, rows[:, -2:-1]], axis=1)
            chosen = self.net.actions(first.astype(np.float32))
        return {a: int(c) for a, c in zip(agents, chosen)}


def main() -> None:
    from mobrl.core.metrics import EPISODE_METRICS
    from mobrl.evaluation import zoo
    from mobrl.evaluation.policies import make_baseline
    from mobrl.evaluation.rollout import run_episode

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", default="umi_dense")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    config = zoo.entry(args.entry)["env_config"]
    if config.get("decide") != "in_turns" or int(config.get("turn_rounds") or 1) != 1:
        parser.error(f"zoo:{args.entry} does not decide in one round of turns")
    twice = {**config, "turn_rounds": 2}
    seeds = range(args.first_seed, args.first_seed + args.episodes)
    plays = {
        "entry, one round": (config, zoo.ZooPolicy.load(f"zoo:{args.entry}")),
        "entry, then best replies": (twice, RevisedEntry(args.entry, int(config["topk"]))),
        "greedy": (config, make_baseline("greedy")),
        "oracle2": (config, make_baseline("oracle2")),
    }
    keys = [k for k in EPISODE_METRICS if k.startswith(("ue/utility", "network/connected"))]
    found: dict[str, np.ndarray] = {}
    for name, (env_config, policy) in plays.items():
        rows = [run_episode(env_config, policy, s) for s in seeds]
        found[name] = np.array([[r[k] for k in keys] for r in rows])
        print(f"{name}: played {len(rows)} episodes", flush=True)
    util = keys.index("ue/utility/mean")
    gap = found["oracle2"][:, util].mean() - found["greedy"][:, util].mean()
    print(f"\nzoo:{args.entry}, seeds {seeds.start}-{seeds.stop - 1}")
    print(f"{'policy':<26}" + "".join(f"{k:>28}" for k in keys) + f"{'gap closed':>12}")
    for name, values in found.items():
        closed = (values[:, util].mean() - found["greedy"][:, util].mean()) / gap
        cells = "".join(f"{v:>28.4f}" for v in values.mean(axis=0))
        print(f"{name:<26}{cells}{closed:>12.1%}")
    diff = found["entry, then best replies"][:, util] - found["entry, one round"][:, util]
    ci = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff))
    print(f"\nsecond round - one round, mean UE utility, paired: {diff.mean():+.4f} +- {ci:.4f}")


if __name__ == "__main__":
    main()
