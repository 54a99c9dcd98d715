"""Run whole episodes with any policy (trained or baseline) and record what a paper reports."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mobrl.core import metrics as keys
from mobrl.envs.factory import make_env
from mobrl.envs.netstats import EpisodeRecorder

#: column prefix of a policy's own return, e.g. "return/explorer"
RETURN_OF = "return/"


def episode_env(env_config: dict[str, Any], seed: int) -> Any:
    """A fresh env whose episode is fixed by `seed` (with its reset seed: `play`). A user's env
    or a simulator (a kind that `probes` its env) that raises says so in one line
    (`envfailures.telling`)."""
    from mobrl.core.envfailures import telling
    from mobrl.scenarios.kinds import kind_of

    kind = kind_of(env_config)
    env = make_env(kind.seeded(env_config, seed))
    if kind.probes:
        env = telling(env, kind.label(env_config), f"episode seed {seed}")
    return env


def run_episode(
    env_config: dict[str, Any],
    policy: Any,
    seed: int,
    on_step: Callable[[Any, float], None] | None = None,
    max_steps: int | None = None,
) -> dict[str, float]:
    """One episode of `policy` with episode seed `seed`: return, length and, for mobile-env,
    mean UE utility, connected fraction, Jain fairness and 5th-percentile UE utility.

    `on_step(env, return_so_far)` is called after every step (rendering records frames
    there); `max_steps` ends the episode early."""
    env = episode_env(env_config, seed)
    try:
        return play(env, policy, env_config, seed, on_step, max_steps)
    finally:
        env.close()


def play(
    env: Any,
    policy: Any,
    env_config: dict[str, Any] | None = None,
    seed: int | None = None,
    on_step: Callable[[Any, float], None] | None = None,
    max_steps: int | None = None,
) -> dict[str, float]:
    """Reset `env` (with `seed`) and play one episode of `policy` in it: the measures of
    `run_episode` (`env_config` names the policies whose returns count separately)."""
    from mobrl.envs.wrappers import find_core, find_env

    core = find_core(env)
    reads = getattr(policy, "reads_observation", True) is not False
    # a policy that reads the env's state (the baselines) spares the engine its observations
    blind = not reads and hasattr(core, "blind")
    # and decides every UE (cell) at once where UEs (cells) would act in turns (the same moves)
    turns = find_env(env, lambda node: hasattr(node, "in_turns"))
    at_once = turns is not None and not reads
    if blind:
        core.blind = True
    if at_once:
        turns.in_turns = False
    try:
        return _play(env, policy, env_config, seed, on_step, max_steps, turns)
    finally:
        if blind:
            core.blind = False
        if at_once:
            turns.in_turns = True


def _play(
    env: Any,
    policy: Any,
    env_config: dict[str, Any] | None,
    seed: int | None,
    on_step: Callable[[Any, float], None] | None,
    max_steps: int | None,
    turns: Any,
) -> dict[str, float]:
    policy.reset(seed)
    obs, _ = env.reset(seed=seed)
    recorder = EpisodeRecorder(env)
    # with several policies (e.g. the arena's explorer and chaser) each one's return counts
    mapping = (env_config or {}).get("policies") or {}
    policies = sorted(set(mapping.values()))
    by_policy = dict.fromkeys(policies, 0.0) if len(policies) > 1 else {}
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(policy.act(obs, env))
        if turns is not None and turns.mid_step:
            continue  # UEs or cells acting in turns: a step ends after the last turn
        steps += 1
        if isinstance(reward, dict):
            total += float(sum(reward.values()))
            if by_policy:
                for agent, value in reward.items():
                    by_policy[mapping[agent]] += float(value)
            done = terminated["__all__"] or truncated["__all__"]
        else:
            total += float(reward)
            done = terminated or truncated
        recorder.step()
        if on_step is not None:
            on_step(env, total)
        if done or (max_steps is not None and steps >= max_steps):
            break
    row = {"return": total, "length": float(steps)}
    row.update({f"{RETURN_OF}{name}": value for name, value in by_policy.items()})
    row.update(recorder.counts)
    if recorder.tracker is not None:  # a mobile-env episode: the measures evaluate reports
        summary = recorder.tracker.summary(per_ue=False)
        row.update({key: summary.get(key, float("nan")) for key in keys.EPISODE_METRICS})
    row.update(recorder.energy)  # power, energy, sleep and demand served (a layout's power:)
    return row
