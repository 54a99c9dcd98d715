"""What `env.guard=coverage` does for cell agents (docs/energy.md, "A sleep is a request").

Plays, on held-out seeds and paired by seed against `threshold`: the rules, the reference
(`energy_oracle`), the reference's states put through the guard, every cell asking to sleep
every step under the guard, and a classifier of the reference's decisions (an MLP fitted on
the reference's own episodes, training seeds apart from the held-out ones) with and without
the guard, and under the guard asking to sleep more often (where the reference's sleeping
is at least `--cuts` likely by the classifier, not only the likelier decision), and the same
under `env.guard=capacity`. With `--offload` the classifier also sees, per cell, what moving
its UEs would take (`offload_columns`). With `--turns` the cells decide in turns
(`env.decide=in_turns`: each seeing its neighbours' requests so far and its predicted gain)
and the classifier is fitted on every turn of the reference's episodes; `--cuts` above 0.5
make it ask for sleep less often. With `--floors` it plays the rules and the reference
alone, beside the reference planning with each of those prices of a UE's lost service
(`EnergyOraclePolicy.floor`, `run.imitate.floor`). Prints each one's objective, service and
energy, and its saving over `all_on`.

    python scripts/cell_guard_study.py --scenario uma19_energy --episodes 20 --train 40
    python scripts/cell_guard_study.py --offload --cuts 0.3,0.2
    python scripts/cell_guard_study.py --turns --cuts 0.6,0.7,0.8
    python scripts/cell_guard_study.py --scenario umi_dense_energy --seed 100000 --floors 1,2,3,10
"""

from __future__ import annotations

import argparse
import copy

import numpy as np

from mobrl.envs.factory import env_config_from
from mobrl.evaluation.baselines.energy import AllOnPolicy, ThresholdPolicy, _cells_env
from mobrl.evaluation.energy_oracle import EnergyOraclePolicy
from mobrl.evaluation.rollout import episode_env, run_episode
from mobrl.training.checks import validate_command_line

MEASURES = (
    "network/objective",
    "ue/utility/mean",
    "ue/utility/p5",
    "network/connected_fraction",
    "network/demand_served",
    "network/energy",
)


class GuardedOracle(EnergyOraclePolicy):
    """The reference's states as a cell policy's requests: through the guard."""

    name = "energy_oracle, guarded"

    def act(self, observation, env=None):
        out = super().act(observation, env)
        _cells_env(env)._as_given = False
        return out


class AlwaysSleep:
    """Every cell asks for the reference's sleep state every step."""

    name = "every cell asks to sleep"

    def reset(self, seed=None):
        pass

    def act(self, observation, env=None):
        cells = _cells_env(env)
        deep = EnergyOraclePolicy().sleep_state(cells.core)
        return {a: deep for a in observation}


def offload_columns(core):
    """Per cell, what moving its UEs would take (a cell knows its UEs' neighbour measurements):
    the share of its UEs with no other station on the air, their mean spectral efficiency at
    the one they would move to (full resources, bit/s/Hz over 8), and the largest load a
    station would reach taking them (up to 4)."""
    from mobrl.network.offload import Offload, alternatives

    o = Offload(core)
    bw = np.array([s.bw for s in core.stations.values()], dtype=float)
    cap = core.full_capacity()
    out = np.zeros((o.load.size, 3))
    for b in range(o.load.size):
        ues = np.flatnonzero(o.present & (o.best == b))
        if not ues.size:
            continue
        moves = alternatives(ues, b, o.on_air, o.reach, o.signal, partial=True)
        ok = moves >= 0
        out[b, 0] = 1.0 - ok.mean()
        if ok.any():
            m, u = moves[ok], ues[ok]
            out[b, 1] = float(np.mean(cap[m, u] / bw[m])) / 8.0
            extra = np.bincount(m, weights=o.need[m, u], minlength=o.load.size)
            out[b, 2] = min(float((o.load + extra)[extra > 0].max()), 4.0)
    return out.astype(np.float32)


def seen(observation, env, extra):
    """The cells' observations, stacked, with the offload columns if `extra`."""
    rows = np.stack(list(observation.values()))
    return np.concatenate([rows, offload_columns(_cells_env(env).core)], axis=1) if extra else rows


def labelled(config, seeds, extra=False, expert="energy_oracle"):
    """The cells' observations (with the offload columns if `extra`) on the reference's own
    episodes, and its decisions; cells deciding in turns: every turn's, through run.imitate's
    collector (`expert`: whose decisions)."""
    if config.get("decide") == "in_turns":
        from mobrl.training.labels import collector

        episodes = [collector(config, 0, expert=expert).episode(s) for s in seeds]
        return [e.x for e in episodes], [e.y for e in episodes]
    rows, labels = [], []
    oracle = EnergyOraclePolicy()
    for seed in seeds:
        env = episode_env(config, seed)
        obs, _ = env.reset(seed=seed)
        oracle.reset(seed)
        done = False
        while not done:
            act = oracle.act(obs, env)
            rows.append(seen(obs, env, extra))
            labels.append(np.array([act[a] for a in obs]))
            obs, _, term, trunc, _ = env.step(act)
            done = term["__all__"] or trunc["__all__"]
    return rows, labels


class Classifier:
    """An MLP (2 × 256, tanh) fitted on the reference's decisions: a cell asks for its likeliest
    sleep state where the reference's sleeping is at least `cut` likely, else stays active."""

    cut = 0.5

    def __init__(self, config, seeds, name, extra=False, expert="energy_oracle"):
        import torch

        self.extra = extra
        rows, labels = labelled(config, seeds, extra, expert)
        x = torch.tensor(np.concatenate(rows))
        y = torch.tensor(np.concatenate(labels))
        torch.manual_seed(0)
        self.states = int(y.max()) + 1
        self.net = torch.nn.Sequential(
            torch.nn.Linear(x.shape[1], 256), torch.nn.Tanh(),
            torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, self.states),
        )  # fmt: skip
        opt = torch.optim.Adam(self.net.parameters(), 1e-3)
        gen = np.random.default_rng(0)
        for _ in range(30):
            order = gen.permutation(len(x))
            for i in range(0, len(order), 256):
                b = order[i : i + 256]
                loss = torch.nn.functional.cross_entropy(self.net(x[b]), y[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
        with torch.no_grad():
            asleep = self.net(x).argmax(1) > 0
        self.fit = float((asleep == (y > 0)).float().mean())
        self.name = name

    def reset(self, seed=None):
        pass

    def act(self, observation, env=None):
        import torch

        with torch.no_grad():
            z = self.net(torch.tensor(seen(observation, env, self.extra)))
            asleep = torch.softmax(z, 1)[:, 0] <= 1.0 - self.cut
            chosen = torch.where(asleep, z[:, 1:].argmax(1) + 1, 0)
        return {a: int(s) for a, s in zip(observation, chosen.tolist())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="uma19_energy")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--train", type=int, default=40, help="the classifier's episodes")
    parser.add_argument("--cuts", default="0.3,0.2,0.1", help="lower cuts, comma-separated")
    parser.add_argument(
        "--turns",
        action="store_true",
        help="instead: cells deciding in turns (env.decide=in_turns), the classifier fitted "
        "on every turn of the reference's episodes, beside energy_greedy",
    )
    parser.add_argument(
        "--expert",
        default="energy_oracle",
        help="with --turns: whose decisions the classifier is fitted to (energy_greedy too)",
    )
    parser.add_argument(
        "--offload",
        action="store_true",
        help="instead: the classifier also seeing what moving each cell's UEs would take",
    )
    parser.add_argument(
        "--floors",
        default="",
        help="instead: the rules and the reference beside the reference planning with each "
        "of these prices of a UE's lost service, comma-separated",
    )
    args = parser.parse_args()

    def config(guard, decide="at_once"):
        given = [f"scenario={args.scenario}", "env=cells", f"env.guard={guard}"]
        return env_config_from(validate_command_line([*given, f"env.decide={decide}"]))

    guarded, free, capacity = config("coverage"), config("none"), config("capacity")
    rules = [
        ("all_on", AllOnPolicy(), guarded),
        ("threshold", ThresholdPolicy(), guarded),
        ("energy_oracle", EnergyOraclePolicy(), guarded),
    ]
    name = "classifier of the reference" + (", seeing the offload" if args.offload else "")
    if args.floors:
        for floor in [float(f) for f in args.floors.split(",")]:
            floored = EnergyOraclePolicy()
            floored.floor = floor
            rules.append((f"energy_oracle, floor {floor:g}", floored, guarded))
        report(args, rules)
        return
    if args.turns:
        from mobrl.evaluation.energy_oracle import EnergyGreedyPolicy

        rules.append(("energy_greedy", EnergyGreedyPolicy(), guarded))
        guarded = capacity = config("coverage", "in_turns")
        name = f"classifier of {args.expert}, in turns"
    classifier = Classifier(guarded, range(args.train), name, args.offload, args.expert)
    played = [*rules, (classifier.name + ", guarded", classifier, guarded)]
    if not args.offload and not args.turns:
        played += [
            (GuardedOracle.name, GuardedOracle(), guarded),
            (AlwaysSleep.name, AlwaysSleep(), guarded),
            (classifier.name + ", no guard", classifier, free),
            (AlwaysSleep.name + ", capacity guard", AlwaysSleep(), capacity),
            (classifier.name + ", capacity guard", classifier, capacity),
        ]
    for cut in [float(c) for c in args.cuts.split(",") if c]:
        asking = copy.copy(classifier)
        asking.cut = cut
        played.append((f"{classifier.name}, guarded, asking at {cut:g}", asking, guarded))
        if not args.turns:
            played.append(
                (f"{classifier.name}, capacity guard, asking at {cut:g}", asking, capacity)
            )
    print(f"the classifier is right on {classifier.fit:.1%} of the decisions it was fitted to")
    report(args, played)


def report(args, played) -> None:
    """Plays each (name, policy, env config) on the held-out seeds and prints it paired
    against `threshold`, with its saving over `all_on`."""
    seeds = range(args.seed, args.seed + args.episodes)
    rows = {}
    for name, policy, conf in played:
        episodes = [run_episode(conf, policy, s) for s in seeds]
        rows[name] = {m: np.array([e[m] for e in episodes]) for m in MEASURES}
    base, all_on = rows["threshold"], rows["all_on"]["network/energy"].mean()
    n = len(seeds)
    print(f"{args.scenario}, {n} seeds from {args.seed}; paired differences to threshold ± 95 % CI")
    for name, values in rows.items():
        parts = []
        for m in MEASURES:
            d = values[m] - base[m]
            parts.append(
                f"{m} {values[m].mean():.4g} ({d.mean():+.4g} ± {1.96 * d.std(ddof=1) / n**0.5:.2g})"
            )
        saving = 1 - values["network/energy"].mean() / all_on
        print(f"- {name}: " + "; ".join(parts) + f"; saving over all_on {saving:.1%}")


if __name__ == "__main__":
    main()
