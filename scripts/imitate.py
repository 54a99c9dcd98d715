"""Imitating the `oracle` on UE-local observations: DAgger on the fast engine, measured in one run.

Per layout (env=ma, `env.obs=topk` or another local observation, fast engine):

1. the oracle (`mobrl.evaluation.policies.BASELINES["oracle"]`; with a slot observation it
   toggles only stations in each UE's slots) plays `--expert-episodes` training episodes;
   every active UE's observation is labelled with the oracle's action for that UE as a slot
   action (0 keeps the links, j toggles the station in slot j);
2. a classifier with the zoo's policy network (`fcnet_hiddens` of `ppo/small/ma_strong`:
   64, 64, tanh; obs -> k + 1 logits) is trained on every label so far (cross-entropy, Adam,
   `--updates` minibatches of 256, carrying on from the previous weights; the last fit 3x);
3. DAgger: `--iterations` times, the classifier plays `--episodes` training episodes
   deterministically while the oracle labels each state it reaches; the classifier is trained
   again on all labels.

Training episodes use seeds 1,000,000+ (as `mobrl train` does), validation 2,000,000+, the final
evaluation 0..N-1 (as `mobrl evaluate`). While the oracle plays (step 1) the unrestricted oracle
(every station in range) is also asked, and the share of UE-steps where its toggle lies outside
the UE's k slots is counted (`outside`).

The evaluation runs through mobrl's own `play_blocks` and `Tally` (the network is played as a
`ZooPolicy`, numpy only): the imitated policy, greedy, greedy_fill and oracle on the same seeds,
plus the unrestricted oracle (`oracle` in `env.obs=mobile`, same episodes) as `oracle_full`.
Printed as Markdown: the share of the greedy -> oracle gap closed (against the oracle of the
observation's env, and against the unrestricted one), paired CIs (imitated − greedy, −
greedy_fill), connected fraction and p5 UE utility (means over episodes), the accuracy of
imitation (on the last DAgger data, and on validation seeds under the policy's own states) and
wall times (on a shared 2-core machine: read them as orders of magnitude). Usage:

    python scripts/imitate.py [--layouts small,medium,large,dense_urban,highway] [--obs topk]
        [--topk 3] [--expert-episodes 8] [--iterations 4] [--episodes 4] [--eval-episodes 100]
        [--updates 1500] [--features none|gain] [--diagnose 4] [--decide in_turns]
        [--save DIR]

`--features gain` appends to each slot the change of the team's utility if the UE toggled that
station alone, read from the core by the policy itself (what `env.obs=topk_gain` observes:
`--obs topk_gain` gives the same inputs). The loop's parts are `mobrl.training.imitation`'s
(`run.imitate` runs them inside `mobrl train`).
`--diagnose N` breaks the policy's differences from the oracle down on N validation episodes.

`--decide in_turns` plays the env with `env.decide=in_turns` (mobrl.envs.turns): UE groups
that share no slot station act one after another within each step, each seeing its slots'
gains given the moves before it, labelled by the oracle's search given those moves
(`mobrl.training.labels.TurnCollector`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core import metrics as keys
from mobrl.training.imitation import TRAIN_SEED, accuracy, as_layers, fit, make_net
from mobrl.training.labels import (
    Collector,
    TurnCollector,
    gain_features,
    slot_labels,
    with_features,
)

VALID_SEED = 2_000_000


def env_config(
    layout: str, obs: str, topk: int | None = None, decide: str = "at_once"
) -> dict[str, Any]:
    """The env `mobrl evaluate scenario=LAYOUT env.obs=OBS [env.topk=K] [env.decide=D]`
    plays."""
    from mobrl.envs.factory import env_config_from
    from mobrl.training.checks import validate_command_line

    args = [f"scenario={layout}", f"env.obs={obs}"]
    if topk is not None and obs != "mobile":
        args.append(f"env.topk={topk}")
    if decide != "at_once":
        args.append(f"env.decide={decide}")
    return env_config_from(validate_command_line(args))


class FeaturePolicy:
    """A zoo network whose input is the observation plus `--features` columns read from the
    env's core (a measurement of what those features are worth, not an env.obs)."""

    name = "trained"

    def __init__(self, policy: Any, k: int, extra: str):
        self.policy, self.k, self.extra = policy, k, extra

    def reset(self, seed: int | None = None) -> None:
        self.policy.reset(seed)

    def actions(self, x: np.ndarray) -> np.ndarray:
        return self.policy.actions(x)

    def act(self, observation: Any, env: Any = None) -> Any:
        from mobrl.envs.wrappers import find_core

        if self.extra == "none":
            return self.policy.act(observation, env)
        x = with_features(find_core(env), observation, self.k, self.extra)
        return {a: int(c) for a, c in zip(observation, self.policy.actions(x))}


# --- DAgger (mobrl.training.imitation's loop, with measurements) ---------------------------


class _Episodes:
    """What the loop plays: `episode(seed, policy)` (rows, expert labels, actions played; the
    expert plays when `policy` is None) and `policy_of(net)`, for UEs deciding at once
    (`Collector`) or in turns (`TurnCollector`, `--decide in_turns`)."""

    def __init__(self, layout: str, args: argparse.Namespace):
        self.cfg = env_config(layout, args.obs, args.topk, args.decide)
        self.k = int(self.cfg.get("topk") or args.topk)
        self.features = args.features
        if args.decide == "in_turns":
            self.collect: Any = TurnCollector(self.cfg, self.k)
        else:
            self.collect = Collector(self.cfg, self.k, args.features)

    def episode(self, seed: int, policy: Any = None, first: bool = False) -> tuple[Any, ...]:
        return self.collect.episode(seed, learner=policy, count_outside=first)

    def policy_of(self, net: Any) -> Any:
        from mobrl.evaluation.zoo import ZooPolicy

        return FeaturePolicy(ZooPolicy(as_layers(net), self.cfg), self.k, self.features)

    def outside(self) -> tuple[float, float]:
        """The share of UE-steps, and of toggles, where the unrestricted oracle toggles a
        station outside the slots (NaN in turns: not counted)."""
        c = self.collect
        if isinstance(c, TurnCollector):
            return float("nan"), float("nan")
        return c.outside / max(c.ue_steps, 1), c.outside / max(c.toggles, 1)


def dagger(layout: str, args: argparse.Namespace) -> dict[str, Any]:
    """DAgger on one layout: the policy (a ZooPolicy) and what training measured."""
    play = _Episodes(layout, args)
    start = time.perf_counter()
    seed = TRAIN_SEED
    xs, ys = [], []
    for _ in range(args.expert_episodes):
        x, y, *_ = play.episode(seed, first=True)
        xs.append(x)
        ys.append(y)
        seed += 1
    expert_s = time.perf_counter() - start
    net = make_net(xs[0].shape[1], play.k + 1, args.hidden)
    policy = None
    history = []
    fit_s = 0.0
    for it in range(args.iterations + 1):
        t0 = time.perf_counter()
        updates = args.updates * (3 if it == args.iterations else 1)
        train_acc = fit(net, np.concatenate(xs), np.concatenate(ys), updates, seed=it)
        fit_s += time.perf_counter() - t0
        policy = play.policy_of(net)
        if it == args.iterations:
            break
        new = []
        for _ in range(args.episodes):
            x, y, played, *_ = play.episode(seed, policy)
            xs.append(x)
            ys.append(y)
            new.append((played, y))
            seed += 1
        played = np.concatenate([p for p, _ in new])
        labels = np.concatenate([y for _, y in new])
        history.append({"iteration": it, "train_acc": train_acc, **accuracy(played, labels)})
        print(f"  {layout} DAgger {it}: {history[-1]}", flush=True)
    train_s = time.perf_counter() - start
    # accuracy on the policy's own states of validation episodes
    vy, vp = [], []
    for i in range(args.valid_episodes):
        _, y, played, *_ = play.episode(VALID_SEED + i, policy)
        vy.append(y)
        vp.append(played)
    x_all, y_all = np.concatenate(xs), np.concatenate(ys)
    outside, of_toggles = play.outside()
    return {
        "layout": layout,
        "cfg": play.cfg,
        "k": play.k,
        "policy": policy,
        "net": net,
        "rows": len(y_all),
        "train_acc": accuracy(policy.actions(x_all), y_all),
        "valid_acc": accuracy(np.concatenate(vp), np.concatenate(vy)),
        "outside": outside,
        "outside_of_toggles": of_toggles,
        "history": history,
        "expert_s": expert_s,
        "fit_s": fit_s,
        "train_s": train_s,
    }


def diagnose(result: dict[str, Any], episodes: int) -> dict[str, list[float]]:
    """Where the policy's UE-steps differ from the oracle's on validation episodes it plays:
    per kind of difference, the count and the step utility the difference alone costs (the
    oracle's joint action with that one UE's action replaced by the policy's). A missed
    toggle is split by join or leave and by whether that toggle alone would raise the team's
    utility (`gain_features` > 0): a join that pays only with other UEs' moves of the same
    step cannot be told from local information."""
    from mobrl.envs.observations import station_arrays, topk_station_actions, ue_columns
    from mobrl.envs.wrappers import find_core, ue_id
    from mobrl.evaluation.oracle import step_utility
    from mobrl.evaluation.policies import BASELINES
    from mobrl.evaluation.rollout import episode_env
    from mobrl.network.service import link_state

    policy, k = result["policy"], result["k"]
    out: dict[str, list[float]] = {}
    for seed in range(VALID_SEED, VALID_SEED + episodes):
        env = episode_env(result["cfg"], seed)
        core = find_core(env)
        expert = BASELINES["oracle"]()
        expert.reset(seed)
        policy.reset(seed)
        obs, _ = env.reset(seed=seed)
        while True:
            want, state = expert.station_actions(core), link_state(core)
            labels, _ = slot_labels(core, want, k)
            acts = policy.act(obs, env)
            column = ue_columns(core)
            slots = np.zeros(len(column), dtype=np.int64)
            for a, v in acts.items():
                slots[column[ue_id(a)]] = v
            mine = topk_station_actions(station_arrays(core), slots, k) * state.active
            best = step_utility(state, want)
            for c in np.flatnonzero(state.active & (slots != labels)):
                if slots[c] == 0:
                    gain = gain_features(core, np.array([c]), k)[0][labels[c] - 1]
                    what = "leave" if state.conn[want[c] - 1, c] else "join"
                    pays = "pays alone" if gain > 1e-9 else "does not pay alone"
                    kind = f"oracle {what}s ({pays}), policy keeps"
                else:
                    kind = "policy toggles, oracle keeps" if labels[c] == 0 else "other slot"
                one = want.copy()
                one[c] = mine[c]
                entry = out.setdefault(kind, [0, 0.0])
                entry[0] += 1
                entry[1] += best - step_utility(state, one)
            obs, _, term, trunc, _ = env.step(acts)
            if term["__all__"] or trunc["__all__"] or not obs:
                break
        env.close()
    return out


# --- evaluation through mobrl's own paired evaluation ---------------------------------------


def evaluate(result: dict[str, Any], episodes: int, full_oracle: bool) -> dict[str, Any]:
    """The imitated policy, greedy, greedy_fill and oracle on seeds 0..episodes-1 through
    `play_blocks` and `Tally`; with `full_oracle` also the oracle of `env.obs=mobile`."""
    from mobrl.evaluation.paired import TRAINED, Tally
    from mobrl.evaluation.scheduling import Job, play_blocks, set_main_policy

    cfg = result["cfg"]
    ref = f"imitated:{result['layout']}"
    set_main_policy(ref, cfg, False, result["policy"])
    names = [TRAINED, "greedy", "greedy_fill", "oracle"]
    jobs = [Job(TRAINED, cfg, ref)] + [Job(n, cfg) for n in names[1:]]
    if full_oracle:
        names.append("oracle_full")
        mobile = env_config(result["layout"], "mobile")
        jobs.append(Job("oracle", mobile))
    start = time.perf_counter()
    tally = Tally(names)
    for block in play_blocks(jobs, range(episodes), False, workers=1):
        rows = [dict(r, policy=name) for name, job_rows in zip(names, block) for r in job_rows]
        tally.add(rows)
    summary = tally.summary()
    summary["eval_s"] = time.perf_counter() - start
    return summary


def stat(summary: dict[str, Any], policy: str, key: str = keys.UTILITY_MEAN) -> float:
    return summary["policies"][policy][key]["mean"]


def paired(summary: dict[str, Any], other: str, key: str = keys.UTILITY_MEAN) -> str:
    d = summary["paired_vs_trained"][other]["diff"][key]
    return f"{d['mean']:+.4f} ± {d['ci95']:.4f}"


def share(summary: dict[str, Any], oracle: str) -> str:
    if oracle not in summary["policies"]:
        return "-"
    base = stat(summary, "greedy")
    room = stat(summary, oracle) - base
    return f"{(stat(summary, 'trained') - base) / room:.0%}" if room > 1e-9 else "-"


def main() -> None:
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layouts", default="small,medium,large,dense_urban,highway")
    parser.add_argument("--obs", default="topk")
    parser.add_argument("--topk", type=int, default=None, help="slots (default: the kind's)")
    parser.add_argument("--expert-episodes", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=4, help="learner episodes per iteration")
    parser.add_argument("--valid-episodes", type=int, default=4)
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument(
        "--updates", type=int, default=1500, help="minibatches per fit (the last: 3x)"
    )
    parser.add_argument("--hidden", type=lambda s: [int(v) for v in s.split(",")], default=[64, 64])
    parser.add_argument(
        "--features",
        choices=["none", "gain"],
        default="none",
        help="gain: append each slot's single-toggle team utility change (read from the core)",
    )
    parser.add_argument(
        "--diagnose", type=int, default=0, help="validation episodes of `diagnose` (0: none)"
    )
    parser.add_argument("--no-full-oracle", action="store_true")
    parser.add_argument(
        "--decide",
        choices=["at_once", "in_turns"],
        default="at_once",
        help="env.decide: in_turns, UE groups sharing no slot station act one after another "
        "within a step, each seeing its slots' gains given the moves before it",
    )
    parser.add_argument("--save", type=Path, default=None, help="write each network as .npz")
    args = parser.parse_args()
    print(
        f"obs={args.obs} topk={args.topk or 'default'} features={args.features}; expert {args.expert_episodes} episodes, "
        f"{args.iterations} DAgger iterations x {args.episodes} episodes, {args.updates} updates per fit; "
        f"evaluation seeds 0-{args.eval_episodes - 1}, paired\n",
        flush=True,
    )
    table = []
    for layout in args.layouts.split(","):
        r = dagger(layout, args)
        if args.diagnose and args.decide == "at_once":
            found = diagnose(r, args.diagnose)
            total = sum(v[1] for v in found.values()) or 1.0
            for kind, (n, cost) in sorted(found.items()):
                print(f"  {layout}: {kind}: {n} UE-steps, {cost:.4f} utility ({cost / total:.0%})")
        if args.eval_episodes <= 0:
            continue
        s = evaluate(r, args.eval_episodes, not args.no_full_oracle)
        if args.save is not None:
            from mobrl.evaluation.zoo import save_layers

            args.save.mkdir(parents=True, exist_ok=True)
            save_layers(args.save / f"{layout}.npz", as_layers(r["net"]))
            (args.save / f"{layout}.json").write_text(
                json.dumps({"env_config": r["cfg"], "history": r["history"]}, default=str)
            )
        line = (
            f"| {layout} | {r['k']} | {share(s, 'oracle')} | {share(s, 'oracle_full')} | "
            f"{paired(s, 'greedy')} | {paired(s, 'greedy_fill')} | {paired(s, 'oracle')} | "
            f"{stat(s, 'trained', keys.NET_CONNECTED):.3f} / "
            f"{stat(s, 'greedy', keys.NET_CONNECTED):.3f} | "
            f"{stat(s, 'trained', keys.UTILITY_P5):+.3f} / "
            f"{stat(s, 'greedy', keys.UTILITY_P5):+.3f} | "
            f"{r['train_acc']['all']:.3f} / {r['valid_acc']['all']:.3f} | "
            f"{r['train_acc']['toggles']:.2f} / {r['valid_acc']['toggles']:.2f} | "
            f"{r['outside']:.4f} ({r['outside_of_toggles']:.1%}) | {r['rows']} | "
            f"{r['train_s']:.0f} ({r['expert_s']:.0f} + fit {r['fit_s']:.0f}) | {s['eval_s']:.0f} |"
        )
        table.append(line)
        print(line, flush=True)
    print(
        "\n| layout | k | gap closed (oracle) | gap closed (oracle_full) | − greedy | "
        "− greedy_fill | − oracle | connected (imitated / greedy) | p5 (imitated / greedy) | "
        "accuracy (train / valid) | toggle recall (train / valid) | outside slots: UE-steps "
        "(of toggles) | labels | train s (expert + fit) | eval s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(table))


if __name__ == "__main__":
    main()
