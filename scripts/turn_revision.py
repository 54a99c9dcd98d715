"""What later rounds of turns add to a zoo entry that decides in turns, and what its labels reach.

The entry (e.g. zoo:umi_dense) plays as it was trained, and again with `--rounds` rounds
(at least 2): its network decides the first round (a one-round entry sees its observation as
it was trained: raw gains, no round column), and in every later round each UE's best reply to
every other UE's move of the step decides (the slot of the largest positive gain its turn
observes, or keeping; what `run.imitate` labels a later round with). With `--expert`, the
imitation's expert also plays its own labels in every turn (the first round: `oracle`'s search
over the undecided UEs given the moves before; later rounds: the best reply), which is what a
perfect imitation would play. Against greedy and `oracle2` on the same seeds, with the share of
the greedy -> oracle2 gap in mean UE utility each closes. With `--mistakes`, instead, the entry
(of several rounds) plays its own episodes while the expert labels every turn, as in
`run.imitate`'s DAgger rounds, and the disagreements of each round are counted: in the first
round, how many are the turn's best reply to the moves before it where the label is not.
With `--starts` the expert plays its own episodes and each first-round label is traced to the
start of the oracle's search it comes from: no change, or greedy's move of every UE yet to
decide (the labels that are not the turn's best reply, split by start and kind).
Usage:

    python scripts/turn_revision.py [--entry umi_dense] [--rounds 2] [--expert] [--mistakes]
        [--starts] [--episodes 20]
"""

from __future__ import annotations

import argparse

import numpy as np


class RevisedEntry:
    """A zoo entry's network in the first round of turns, each UE's best reply in the later
    ones."""

    name, reads_observation = "revised", True

    def __init__(self, entry: str, k: int, one_round: bool):
        from mobrl.evaluation.zoo import ZooPolicy

        self.net, self.k, self.one_round = ZooPolicy.load(f"zoo:{entry}"), k, one_round

    def reset(self, seed: int | None = None) -> None:
        self.net.reset(seed)

    def act(self, observation: dict, env: object = None) -> dict:
        from mobrl.envs.turns import GAIN_SCALE, turn_env
        from mobrl.training.labels import best_reply

        agents = list(observation)
        if not agents:
            return {}
        turns = turn_env(env).turns
        if turns.round > 0:  # each UE's best reply to every other move of the step so far
            chosen = best_reply(turns.gains(turns.group))
        elif self.one_round:  # the observation it was trained on: raw gains, no round column
            k = self.k
            rows = np.stack([observation[a] for a in agents])
            scaled = rows[:, -(k + 2) : -2].astype(np.float64)
            gains = np.sign(scaled) * np.expm1(np.abs(scaled)) * GAIN_SCALE
            first = np.concatenate([rows[:, : -(k + 2)], gains, rows[:, -2:-1]], axis=1)
            chosen = self.net.actions(first.astype(np.float32))
        else:
            chosen = self.net.actions(np.stack([observation[a] for a in agents]))
        return {a: int(c) for a, c in zip(agents, chosen)}


class ExpertLabels:
    """The imitation's expert playing its own turn labels (`mobrl.training.labels.
    turn_labels` with `oracle`)."""

    name, reads_observation = "expert", True

    def reset(self, seed: int | None = None) -> None:
        from mobrl.evaluation.policies import make_baseline

        self.expert = make_baseline("oracle")
        self.expert.reset(seed)

    def act(self, observation: dict, env: object = None) -> dict:
        from mobrl.envs.turns import turn_env
        from mobrl.envs.wrappers import find_core
        from mobrl.training.labels import turn_labels

        if not observation:
            return {}
        core, turns = find_core(env), turn_env(env).turns
        labels = turn_labels(core, turns, self.expert)
        return {a: int(v) for a, v in zip(observation, labels)}


def _gains_at(config: dict, width: int) -> slice:
    """Where a turn's row of `width` holds its slots' gains given the moves before it."""
    from mobrl.envs.turns import extra_width

    k, rounds = int(config["topk"]), int(config.get("turn_rounds") or 1)
    start = width - extra_width(k, rounds, config.get("turn_obs") or "gains")
    return slice(start, start + k)


def starts(config: dict, seeds: range) -> None:
    """Which start of the oracle's search gives each first-round label, in the expert's own
    episodes, and how the labels that are not the turn's best reply split."""
    import dataclasses
    from collections import Counter

    from mobrl.envs.observations import slots_of
    from mobrl.envs.turns import turn_env
    from mobrl.evaluation.coupled import EPS, coupled_actions
    from mobrl.evaluation.oracle import _few_choices as few_choices
    from mobrl.training.labels import TurnCollector, best_reply

    count: Counter = Counter()

    class Starts(TurnCollector):
        def _rows(self, env, core, obs, expert):  # type: ignore[no-untyped-def]
            found = super()._rows(env, core, obs, expert)
            turns = turn_env(env).turns
            if found is not None and turns.round == 0:
                group, order = turns.group, turns.order
                given = dataclasses.replace(turns.state, conn=turns.links.copy())
                allowed = turns.allowed() & ~turns.decided[None, :] & given.reach
                greedy = np.where(turns.decided | ~given.active, 0, turns.greedy)
                label, reply = found[1], best_reply(turns.gains(group))
                start = "exhaustive search (few choices left)"
                if not few_choices(allowed):  # the better of the two ascents
                    zero, v_zero = coupled_actions(given, allowed, np.zeros_like(greedy))
                    ahead, v_ahead = coupled_actions(given, allowed, greedy)
                    won = v_ahead > v_zero + EPS
                    start = "greedy's moves" if won else "no change"
                    searched = slots_of(order, ahead if won else zero)[group]
                    assert np.array_equal(label, searched), "not run.imitate's label"
                other = label != reply
                count["turns"] += len(group)
                count[f"label from: {start}"] += len(group)
                count["label not the best reply"] += int(other.sum())
                count[f"... from: {start}"] += int(other.sum())
                count["... the label is greedy's move"] += int(
                    (other & (label == slots_of(order, turns.greedy)[group])).sum()
                )
                count["... the label toggles, the best reply keeps"] += int(
                    (other & (reply == 0)).sum()
                )
            return found

    k = int(config["topk"])
    for seed in seeds:
        Starts(config, k).episode(seed)
    print(f"\nthe expert's first-round turns in its own {len(seeds)} episodes:")
    for what, n in count.items():
        print(f"{what:<48}{n:>10}")


def mistakes(entry: str, config: dict, seeds: range) -> None:
    """The entry's disagreements with the expert's labels in its own episodes, per round."""
    from mobrl.evaluation.zoo import ZooPolicy
    from mobrl.training.labels import best_reply, collector

    k = int(config["topk"])
    found = [collector(config, k).episode(s, learner=ZooPolicy.load(f"zoo:{entry}")) for s in seeds]
    x, label, played, *_ = map(np.concatenate, zip(*found))
    gains = x[:, _gains_at(config, x.shape[1])]  # signed log scale: the same signs and order
    reply = best_reply(gains)
    print(f"\nzoo:{entry} in its own {len(seeds)} episodes, labelled by the expert:")
    print("| round | UE turns | disagree | label toggles, entry does not | both toggle, other"
          " slots | entry toggles, label does not | entry plays the best reply, label does not |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r, value in enumerate(np.unique(x[:, -1])):
        mine = x[:, -1] == value
        wrong = mine & (played != label)
        counts = [
            int((wrong & (played == 0)).sum()),
            int((wrong & (played > 0) & (label > 0)).sum()),
            int((wrong & (label == 0)).sum()),
            int((wrong & (played == reply) & (label != reply)).sum()),
        ]
        print(
            f"| {r + 1} | {int(mine.sum())} | {int(wrong.sum())} | "
            + " | ".join(map(str, counts))
            + " |"
        )
    first = x[:, -1] == x[:, -1].min()
    share = float((label[first] != reply[first]).mean())
    print(f"first-round labels other than the turn's best reply: {share:.2%} of turns")


def main() -> None:
    from mobrl.core.metrics import EPISODE_METRICS
    from mobrl.evaluation import zoo
    from mobrl.evaluation.policies import make_baseline
    from mobrl.evaluation.rollout import run_episode

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", default="umi_dense")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of turns (at least 2)")
    parser.add_argument("--expert", action="store_true", help="also play the expert's labels")
    parser.add_argument(
        "--mistakes", action="store_true", help="count the entry's disagreements with the labels"
    )
    parser.add_argument(
        "--starts", action="store_true", help="which start of the oracle's search labels a turn"
    )
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    config = zoo.entry(args.entry)["env_config"]
    if config.get("decide") != "in_turns":
        parser.error(f"zoo:{args.entry} does not decide in turns")
    if args.rounds < 2:
        parser.error(f"--rounds {args.rounds}: give at least 2 (the first is the entry's)")
    trained = int(config.get("turn_rounds") or 1)
    seeds = range(args.first_seed, args.first_seed + args.episodes)
    if args.starts:
        starts(config, seeds)
        return
    if args.mistakes:
        if trained < 2:
            parser.error(f"--mistakes needs an entry of several rounds; zoo:{args.entry} plays one")
        mistakes(args.entry, config, seeds)
        return
    more = {**config, "turn_rounds": args.rounds}
    k = int(config["topk"])
    plays = {
        "entry": (config, zoo.ZooPolicy.load(f"zoo:{args.entry}")),
        "entry, then best replies": (more, RevisedEntry(args.entry, k, trained == 1)),
        "greedy": (config, make_baseline("greedy")),
        "oracle2": (config, make_baseline("oracle2")),
    }
    if args.expert:
        plays["expert's labels"] = ({**config, "turn_rounds": max(trained, 2)}, ExpertLabels())
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
    diff = found["entry, then best replies"][:, util] - found["entry"][:, util]
    ci = 1.96 * diff.std(ddof=1) / np.sqrt(len(diff))
    print(f"\nbest replies - entry, mean UE utility, paired: {diff.mean():+.4f} +- {ci:.4f}")


if __name__ == "__main__":
    main()
