"""`mobrl evaluate --scenarios a,b,...`: a generalisation matrix, each policy on every layout.

Each checkpoint (rows: the scenario it was trained on) plays, with the baselines, on every listed
mobile-env scenario (columns), on the same paired seeds everywhere. The env of each column is
the checkpoint's own (env mode, observation, team reward, engine) with the layout swapped, so
the trained policy only needs spaces that do not depend on the layout: `env.obs=topk`. A
policy with mobile-env's own observation (one entry per station) cannot act on another layout;
that is a one-line error that says so.

Writes `matrix.csv` (one row per checkpoint, scenario and policy: return and service with 95 %
CIs, the trained policy's paired gap to each baseline), `matrix.json` and `episodes.csv`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.console import Pace
from mobrl.core.errors import UserError
from mobrl.evaluation.evaluate import EvalOptions, kept_whole
from mobrl.evaluation.outputs import EvalDir
from mobrl.evaluation.paired import TRAINED, Tally, ci_text
from mobrl.evaluation.policies import check_baselines
from mobrl.evaluation.scheduling import Job, play_blocks, set_main_policy
from mobrl.evaluation.targets import Target

#: baselines of the matrix unless --baselines names others (the gap to the first is shown)
DEFAULT_BASELINES = ("greedy", "full", "oracle")


def transfer_env(source: dict[str, Any], scenario: str) -> dict[str, Any]:
    """The env of `source` (a checkpoint's env_config) on the layout of `scenario`."""
    from mobrl import scenarios
    from mobrl.config import group_options
    from mobrl.core.errors import unknown_choice
    from mobrl.envs.factory import check_env, retarget
    from mobrl.scenarios.kinds import kind_of

    if not kind_of(source).transferable:
        raise UserError(
            f"--scenarios applies to policies trained on mobile-env layouts; this one was "
            f"trained on {source.get('scenario') or source.get('id')}. Drop --scenarios."
        )
    if len(set((source.get("policies") or {}).values())) > 1:
        raise UserError(
            "--scenarios needs a policy shared by all UEs (env.policies=shared); this "
            "checkpoint has one policy per UE group, which other layouts cannot map."
        )
    if scenario not in scenarios.discover():
        options = group_options("scenario")
        if scenario in options:
            raise UserError(
                f"--scenarios: '{scenario}' is not a mobile-env layout. Use layouts listed by "
                "`mobrl scenarios list`, e.g. --scenarios small,medium,large."
            )
        fix = "Fix the list, e.g. --scenarios small,medium,large."
        raise UserError(f"--scenarios: {unknown_choice('scenario', scenario, options, fix)}")
    try:
        env_config = retarget(source, scenario)
    except UserError as err:  # say it in terms of the flag the user typed
        raise UserError(f"--scenarios: {err}") from None
    check_env(env_config, rllib=False)
    return env_config


def _bind(policy: Any, env_config: dict[str, Any]) -> Any:
    """The same weights acting in the env of `env_config` (its agents and policy mapping)."""
    from mobrl.evaluation.policies import TrainedPolicy

    if isinstance(policy, TrainedPolicy):
        return TrainedPolicy(policy.modules, env_config, explore=policy.explore)
    return policy


def _check_fits(
    policy: Any, env_config: dict[str, Any], label: str, trained: dict[str, Any]
) -> None:
    """A one-line error when the policy (trained in `trained`) cannot act in `env_config`:
    why and the fix in the kind's words, the spaces themselves where it cannot tell."""
    from mobrl.envs.factory import make_env
    from mobrl.scenarios.kinds import kind_of

    env = make_env({**env_config, "render_mode": None})
    try:
        policy.check_spaces(env)
    except UserError:
        reason = kind_of(trained).cannot_play(trained, env_config, label)
        if reason is None:
            raise  # check_spaces names both spaces
        raise UserError(reason) from None
    finally:
        env.close()


def _label(target: Target, taken: set[str]) -> str:
    """Row label: the scenario trained on, and the checkpoint when that is ambiguous."""
    label = f"{target.env_config.get('scenario')}"
    if label in taken:
        checkpoint = Path(str(target.checkpoint))
        label = f"{label} ({checkpoint.parent.name}/{checkpoint.name})"
    if label in taken:
        label = f"{label} #{len(taken) + 1}"
    taken.add(label)
    return label


def _plan(
    targets: list[Target], scenarios: list[str], baselines: list[str], explore: bool, trust: bool
) -> list[tuple[str, Target, list[dict[str, Any]], list[Any]]]:
    """Every check before the first episode: per target its row label, its env on each
    scenario and its policy bound to each, fitting those envs, where the baselines apply."""
    from mobrl.evaluation.policies import load_policy

    taken: set[str] = set()
    plan = []
    for target in targets:
        label = _label(target, taken)
        policy = load_policy(target.checkpoint, target.env_config, explore, trust)
        envs = [transfer_env(target.env_config, s) for s in scenarios]
        bound = [_bind(policy, env) for env in envs]
        for env, p in zip(envs, bound):
            _check_fits(p, env, f"the policy of {label}", target.env_config)
            check_baselines(baselines, env)
        plan.append((label, target, envs, bound))
    return plan


@dataclass
class _Jobs:
    """The jobs of a matrix and how its cells read their episodes."""

    jobs: list[Job] = field(default_factory=list)
    #: the episodes.csv columns before each job's rows
    columns: list[dict[str, str]] = field(default_factory=list)
    #: per (target, scenario): label, target, scenario, the trained job, the baselines' jobs
    groups: list[tuple] = field(default_factory=list)


def _jobs(plan: list[tuple], scenarios: list[str], baselines: list[str], explore: bool) -> _Jobs:
    """A trained job per target and scenario, and the baselines' jobs once per env (they do
    not depend on the checkpoint); each bound policy is what this process plays."""
    out = _Jobs()
    shared: dict[str, list[int]] = {}  # env -> its baselines' jobs
    for label, target, envs, bound in plan:
        for scenario, env, policy in zip(scenarios, envs, bound):
            set_main_policy(str(target.checkpoint), env, explore, policy)
            trained = len(out.jobs)
            out.jobs.append(Job(TRAINED, env, str(target.checkpoint)))
            out.columns.append({"trained_on": label, "evaluated_on": scenario})
            key = json.dumps(env, sort_keys=True, default=str)
            if key not in shared:
                shared[key] = list(range(len(out.jobs), len(out.jobs) + len(baselines)))
                out.jobs += [Job(name, env) for name in baselines]
                out.columns += [{"trained_on": "", "evaluated_on": scenario}] * len(baselines)
            out.groups.append((label, target, scenario, trained, shared[key]))
    return out


def _cell(label: str, target: Target, scenario: str, name: str, summary: dict) -> dict[str, Any]:
    """One row of matrix.csv: a policy's statistics on a scenario, and the trained policy's
    paired gaps to each baseline and its share of the greedy → oracle gap closed."""
    stats = summary["policies"][name]
    cell = {
        "trained_on": label,
        "checkpoint": str(target.checkpoint),
        "evaluated_on": scenario,
        "policy": name,
        "n": int(stats["return"]["n"]),
        "return_mean": stats["return"]["mean"],
        "return_ci95": stats["return"]["ci95"],
    }
    for col in keys.EPISODE_METRICS:
        if col in stats:
            cell[f"{col}_mean"] = stats[col]["mean"]
            cell[f"{col}_ci95"] = stats[col]["ci95"]
    if name == TRAINED:
        for base, diff in summary["paired_vs_trained"].items():
            cell[f"gap_vs_{base}_mean"] = diff["return_diff_mean"]
            cell[f"gap_vs_{base}_ci95"] = diff["ci95"]
            for col in keys.EPISODE_METRICS:  # paired service gaps, same seeds
                if col in diff["diff"]:
                    cell[f"{col}_gap_vs_{base}_mean"] = diff["diff"][col]["mean"]
                    cell[f"{col}_gap_vs_{base}_ci95"] = diff["diff"][col]["ci95"]
        share = summary.get("gap_closed", {}).get(TRAINED)
        if share is not None:
            cell["greedy_oracle_gap_closed"] = share
    return cell


def matrix(
    targets: list[Target],
    scenarios: list[str],
    baselines: list[str],
    seeds: Sequence[int],
    explore: bool,
    workers: int,
    episode_log: Any,
    progress: Callable[[str], None] | None = None,
    trust: bool = False,
) -> list[dict[str, Any]]:
    """Every target's policy and the baselines on every scenario, in one pool of workers and
    a block of seeds at a time (memory independent of --episodes): the cells of the matrix;
    the episodes go to `episode_log(parts)` (an `outputs.EpisodeLog`), and each one done
    calls `progress(left)` (the time left, from each job's own cost: `core.console.Pace`).

    Baselines do not depend on the checkpoint, so each plays each env once."""
    plan = _plan(targets, scenarios, baselines, explore, trust)
    planned = _jobs(plan, scenarios, baselines, explore)
    jobs, groups = planned.jobs, planned.groups
    tallies = [Tally([TRAINED, *baselines]) for _ in groups]
    log = episode_log(len(jobs))
    # each job's own cost: a policy on one layout tells nothing of its cost on another
    kinds = [f"{job.name} on {cols['evaluated_on']}" for job, cols in zip(jobs, planned.columns)]
    pace = Pace(kinds, [len(seeds)] * len(jobs))
    told = None if progress is None else lambda: progress(pace.text())
    with kept_whole(log, len(jobs) * len(seeds), told) as advance:
        blocks = play_blocks(jobs, seeds, explore, workers, advance, pace=pace)
        with closing(blocks):  # the blocks' worker pool ends here, whatever happens
            for block in blocks:
                for tally, (*_, mine, theirs) in zip(tallies, groups):
                    tally.add(block[mine] + [row for j in theirs for row in block[j]])
                for j, rows in enumerate(block):
                    log.add(j, rows, planned.columns[j])
    cells: list[dict[str, Any]] = []
    for tally, (label, target, scenario, *_) in zip(tallies, groups):
        summary = tally.summary()
        cells += [_cell(label, target, scenario, n, summary) for n in [TRAINED, *baselines]]
    return cells


def _fmt(mean: float, half: float, sign: bool = False, digits: int = 1) -> str:
    return ci_text(mean, half, digits, sign)


def _table(cells: list[dict], scenarios: list[str], names: list[str], measure: str, title: str):
    """One measure (`return` or an episode metric) of every policy on every layout, the
    trained policies' paired gap to the first baseline in brackets."""
    from rich.table import Table

    digits = 1 if measure == "return" else 3
    first = names[0] if names else None
    gap = "gap_vs_{}" if measure == "return" else f"{measure}_gap_vs_{{}}"
    table = Table(title=title + (f"; in brackets the paired gap to {first}" if first else ""))
    table.add_column("trained on \\ evaluated on")
    for s in scenarios:
        table.add_column(s, justify="right")
    by = {(c["trained_on"], c["evaluated_on"], c["policy"]): c for c in cells}
    labels = list(dict.fromkeys(c["trained_on"] for c in cells))
    for label in labels:
        row = []
        for s in scenarios:
            c = by[label, s, TRAINED]
            text = _fmt(c.get(f"{measure}_mean"), c.get(f"{measure}_ci95"), digits=digits)
            if first:
                key = gap.format(first)
                paired = _fmt(c.get(f"{key}_mean"), c.get(f"{key}_ci95"), True, digits)
                text += f"\n({paired})"
            row.append(text)
        table.add_row(label, *row)
    for name in names:
        table.add_row(
            name,
            *(
                _fmt(
                    by[labels[0], s, name].get(f"{measure}_mean"),
                    by[labels[0], s, name].get(f"{measure}_ci95"),
                    digits=digits,
                )
                for s in scenarios
            ),
        )
    return table


def matrix_command(checkpoints: list[Path], scenarios: list[str], opts: EvalOptions) -> Path:
    """`mobrl evaluate --checkpoint X [--checkpoint Y] --scenarios a,b,...`."""
    from mobrl.core.console import make_console, paced_progress
    from mobrl.evaluation.targets import target_for

    console = make_console()
    opts.check()
    episodes, explore = opts.episodes, opts.explore
    scenarios = list(dict.fromkeys(s.strip() for s in scenarios if s.strip()))
    if not scenarios:
        raise UserError("--scenarios is empty. List layouts, e.g. --scenarios small,medium,large.")
    names = opts.baseline_names(list(DEFAULT_BASELINES))
    targets = [target_for(c, [], opts.pick) for c in checkpoints]
    output = EvalDir.new(opts.output, "matrix")
    seeds = opts.seeds
    workers = opts.workers or min(os.cpu_count() or 1, 4)
    total = len(seeds) * len(scenarios) * (len(targets) + len(names))
    with output.claim():  # a second command writing to the same --output is refused
        with paced_progress(console) as bar:
            task = bar.add_task(f"{total} episodes on {', '.join(scenarios)}", total=total, left="")

            def advance(left: str) -> None:
                bar.update(task, left=left)
                bar.advance(task)

            cells = matrix(
                targets, scenarios, names, seeds, explore, workers, output.episode_log,
                advance, opts.trust,
            )  # fmt: skip
        settings = {
            "checkpoints": [str(t.checkpoint) for t in targets],
            "scenarios": scenarios,
            "baselines": names,
            "episodes": episodes,
            "seed_range": [seeds[0], seeds[-1]],
            "explore": explore,
        }
        output.write_matrix(cells, settings)

    over = f"mean ± 95 % CI over {episodes} episodes"
    if any(f"{keys.UTILITY_MEAN}_mean" in c for c in cells):  # service first
        utility = _table(cells, scenarios, names, keys.UTILITY_MEAN, f"mean UE utility, {over}")
        console.print(utility)
    console.print(_table(cells, scenarios, names, "return", f"return, {over}"))
    console.print(f"results: {', '.join(str(f) for f in output.files())}")
    return output.path.absolute()
