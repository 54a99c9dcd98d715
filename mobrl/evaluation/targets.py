"""What `evaluate`, `render`, the matrix and `zoo export` act on: a checkpoint picked from a
checkpoint, trial, run or multirun dir (`--pick best|last`), a zoo entry, or none (baselines
only), with the env to run it in (the run's manifest, or scenario overrides)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, unknown_choice
from mobrl.core.rundir import RunDir, find_manifest, is_complete, list_checkpoints
from mobrl.scenarios.kinds import kind_of

#: how `--pick` chooses among a run's checkpoints
PICKS = ("best", "last")


def check_pick(pick: str) -> None:
    if pick not in PICKS:
        raise unknown_choice("--pick", pick, PICKS, "Use --pick best or --pick last.")


@dataclass
class Target:
    """What to evaluate: a checkpoint (or none, for baselines only) and the env to run it in."""

    checkpoint: Path | None
    env_config: dict[str, Any]
    note: str
    #: the env the policy was trained in (a run's manifest, a zoo entry's record); None
    #: without a checkpoint or a manifest
    policy_env: dict[str, Any] | None = None


def pick_checkpoint(path: Path, pick: str) -> tuple[Path, str]:
    """Resolve a checkpoint, trial, experiment, run or multirun dir to one checkpoint."""
    path = Path(path).expanduser().absolute()
    if not path.exists():
        raise UserError(f"--checkpoint '{path}' does not exist. Give a checkpoint or run dir.")
    listed = list_checkpoints(path)
    if not listed:
        raise UserError(
            f"no RLlib checkpoint under '{path}'. Point --checkpoint at a checkpoint_* dir, "
            "a trial dir or a run dir that holds one."
        )
    found = [c for c in listed if is_complete(c)]  # never one a full disk or a kill cut short
    if not found:
        raise UserError(
            f"the checkpoint {listed[-1]} is incomplete (a file cut short: a full disk or a "
            "killed save?). Use an earlier checkpoint, or train again."
        )
    cut = len(listed) - len(found)
    skipped = f" ({cut} incomplete checkpoint{'s' * (cut > 1)} skipped)" if cut else ""
    picked, note = _pick(path, found, pick)
    return picked, note + skipped


def _pick(path: Path, found: list[Path], pick: str) -> tuple[Path, str]:
    if len(found) == 1:
        return found[0], f"checkpoint {found[0]}"
    _check_one_env(found)
    if pick == "last":
        latest = _latest(found)
        return latest, f"last checkpoint of {len(found)}: {latest}"
    runs = {run.path: run for c in found if (run := RunDir.holding(c)) is not None}
    best: tuple[float, Path, str] | None = None
    modes = set()
    for _, run in sorted(runs.items()):
        summary = run.read_summary() or {}
        value = summary.get("best_checkpoint_value", summary.get("best_return"))
        ckpt, mode = summary.get("best_checkpoint"), summary.get("mode", "max")
        located = _locate(ckpt, found) if ckpt else None
        if value is not None and located is not None:
            modes.add((summary.get("metric"), mode))
            sign = 1.0 if mode == "max" else -1.0  # the metric's own sense of better
            if best is None or sign * value > sign * best[0]:
                best = (value, located, _ranked_by(summary))
    if len(modes) > 1:
        listed = ", ".join(f"{m} ({mode})" for m, mode in sorted(modes, key=str))
        raise UserError(
            f"the runs under '{path}' rank checkpoints by different metrics ({listed}); "
            "their best values do not compare. Point --checkpoint at one run dir."
        )
    if best is not None:
        return best[1], f"best checkpoint by {best[2]} {best[0]:.3f}: {best[1]}"
    latest = _latest(found)
    return latest, f"no training results to rank {len(found)} checkpoints; using the last: {latest}"


def _ranked_by(summary: dict) -> str:
    """How a run's summary ranked its checkpoints, in words."""
    from mobrl.core.metrics import EVAL_RETURN_MEAN, EVAL_SCORE, RETURN_MEAN

    metric = summary.get("metric")
    if metric == EVAL_SCORE:
        return f"evaluation mean {summary.get('eval_metric')} (during training)"
    if metric == EVAL_RETURN_MEAN:
        return "evaluation return (during training)"
    if metric in (None, RETURN_MEAN):
        return "training return"
    return str(metric)


def _check_one_env(checkpoints: list[Path]) -> None:
    """Ranking by training return only makes sense within one scenario and env mode."""
    envs: dict[str, Path] = {}
    for ckpt in checkpoints:
        manifest = find_manifest(ckpt)
        if manifest is not None:
            env = f"scenario={manifest['scenario']} env={manifest['env_mode']}"
            envs.setdefault(env, ckpt)
    if len(envs) > 1:
        listed = "; ".join(f"{env}: {path}" for env, path in sorted(envs.items()))
        raise UserError(
            f"the path holds runs of {len(envs)} scenarios ({listed}). "
            "Point --checkpoint at one run dir."
        )


def _locate(recorded: str, found: list[Path]) -> Path | None:
    """The checkpoint among `found` that a summary recorded: by its path, or, for a run dir
    that was moved or copied since, by its trial and checkpoint names."""
    path = Path(recorded)
    if path in found:
        return path
    matches = [c for c in found if c.parts[-2:] == path.parts[-2:]]
    return matches[0] if len(matches) == 1 else None


def _latest(checkpoints: list[Path]) -> Path:
    return max(checkpoints, key=lambda p: (p.stat().st_mtime, p.name))


def target_for(checkpoint: Path | None, overrides: list[str], pick: str) -> Target:
    """The checkpoint (picked from a run dir) and the env to run it in: the policy's own (a
    run's manifest, a zoo entry's record), or the scenario the overrides name with the policy's
    settings carried over (what it observes, how its actions are read: `policy_settings`);
    without a checkpoint, the overrides' scenario."""
    if checkpoint is None:
        if not overrides:
            raise UserError("name a scenario, e.g. `mobrl baselines scenario=small env=ma`.")
        return Target(None, _override_env(overrides), "baselines only")
    chosen, trained, label, note = _policy_of(checkpoint, pick)
    if trained is None:  # a plain RLlib checkpoint: the overrides say everything
        if not overrides:
            raise UserError(
                f"'{chosen}' has no mobrl manifest, so mobrl cannot tell its env. Add the "
                "scenario as overrides, e.g. `mobrl evaluate --checkpoint PATH scenario=small "
                "env=ma`."
            )
        return Target(chosen, _override_env(overrides), note)
    if not overrides:
        return Target(chosen, trained, note, trained)
    own = _own_scenario(chosen, trained, overrides)
    env_config = _override_env(_carry_settings(trained, overrides, label), own)
    _check_plays(trained, env_config, label)
    played = env_config.get("scenario") or env_config["id"]
    carried = " ".join(f"{k}={v}" for k, v in kind_of(trained).policy_settings(trained).items())
    if carried and played != (trained.get("scenario") or trained.get("id")):
        note = f"{note}, playing {played} with its {carried}"
    return Target(chosen, env_config, note, trained)


def _policy_of(checkpoint: Path, pick: str) -> tuple[Path, dict[str, Any] | None, str, str]:
    """(checkpoint, the env it was trained or recorded in or None, its name in messages,
    what to print) of a zoo reference or a checkpoint picked from a run dir."""
    from mobrl.evaluation import zoo

    if zoo.is_ref(checkpoint):
        meta = zoo.entry(str(checkpoint))
        name = meta["name"]
        return (
            Path(str(checkpoint)),
            meta["env_config"],
            f"the zoo policy {name}",
            f"zoo policy {name}",
        )
    chosen, note = pick_checkpoint(checkpoint, pick)
    manifest = find_manifest(chosen)
    trained = None if manifest is None else manifest["env_config"]
    return chosen, trained, "the checkpoint's policy", note


def _override_env(overrides: list[str], own: dict[str, Any] | None = None) -> dict[str, Any]:
    """The env the overrides compose, checked once (a scenario that may never have been
    trained on); `own`: the run's own scenario settings, kept where the overrides do not set
    them (`_own_scenario`)."""
    from mobrl.envs.factory import check_env, env_config_from
    from mobrl.training.checks import validate_command_line

    cfg = validate_command_line(overrides)
    if own:
        _keep_scenario(cfg, own, overrides)
    env_config = env_config_from(cfg)
    check_env(env_config, rllib=False)
    return env_config


def _own_scenario(
    chosen: Path, trained: dict[str, Any], overrides: list[str]
) -> dict[str, Any] | None:
    """The scenario section of the run the checkpoint belongs to, when the overrides change
    only some of its keys (e.g. `scenario.address=` of a simulator now on another port) of a
    kind whose env the user made (`probes`: its entry, kwargs and metrics are the run's own
    settings, not a layout's): None otherwise."""
    from omegaconf import OmegaConf

    from mobrl.config import parse_overrides

    if not kind_of(trained).probes:
        return None
    if any(ov.key_or_group == "scenario" for ov in parse_overrides(overrides)):
        return None  # another scenario: its own settings
    for folder in [chosen, *chosen.parents]:
        if (folder / RunDir.MANIFEST).is_file() and (folder / RunDir.CONFIG).is_file():
            scenario = OmegaConf.load(folder / RunDir.CONFIG).get("scenario")
            return OmegaConf.to_container(scenario, resolve=True) if scenario else None
    return None


def _keep_scenario(cfg: Any, own: dict[str, Any], overrides: list[str]) -> None:
    """`cfg.scenario` with the run's own settings where the overrides set none (a dict, such
    as `kwargs`, keeps the run's entries the overrides do not name)."""
    from omegaconf import open_dict

    from mobrl.config import parse_overrides

    given = {
        ov.key_or_group.removeprefix("scenario.")
        for ov in parse_overrides(overrides)
        if ov.key_or_group.startswith("scenario.")
    }
    with open_dict(cfg):
        for key, value in own.items():
            if key in given:
                continue
            current = cfg.scenario.get(key)
            if isinstance(value, dict) and current is not None:
                value = {**value, **dict(current)}
            cfg.scenario[key] = value


#: overrides the user may type for a policy setting under another key: each option of the env
#: group sets env.mode to its own name
_SAME_SETTING = {"env.mode": "env"}


def _same_value(given: Any, carried: str) -> bool:
    """Whether an override's value is the policy's setting (numbers by value: 1 is 1.0)."""
    if str(given) == carried:
        return True
    try:
        return not isinstance(given, bool) and float(given) == float(carried)
    except (TypeError, ValueError):
        return False


def _carry_settings(trained: dict[str, Any], overrides: list[str], label: str) -> list[str]:
    """`overrides` with the policy's settings in front (those the user did not give), and its
    own scenario unless they name one (not the config's default layout); a given setting that
    contradicts the policy is a one-line error naming the policy's value."""
    from mobrl.config import group_options, parse_overrides

    settings = kind_of(trained).policy_settings(trained)
    parsed = parse_overrides(overrides)
    given: set[str] = set()
    for ov in parsed:
        key = _SAME_SETTING.get(ov.key_or_group, ov.key_or_group)
        if key not in settings:
            continue
        given.add(key)
        value = None if ov.is_delete() else ov.value()
        if not _same_value(value, settings[key]):
            carried = " ".join(f"{k}={v}" for k, v in settings.items())
            raise UserError(
                f"{label} was trained with {key}={settings[key]}, not {ov.input_line}: drop "
                f"{ov.input_line} (its {carried} carry over to any layout it plays)."
            )
    carried = [f"{k}={v}" for k, v in settings.items() if k not in given]
    own = trained.get("scenario")
    named = any(ov.key_or_group in ("scenario", "scenario.path") for ov in parsed)
    if not named and own in group_options("scenario"):
        carried.insert(0, f"scenario={own}")
    return carried + list(overrides)


def _check_plays(trained: dict[str, Any], env_config: dict[str, Any], label: str) -> None:
    """A one-line error, before anything runs, when the policy cannot act in `env_config`:
    another kind of scenario, or spaces of another size (why, and the fix, from the kind)."""
    here = trained.get("scenario") or trained.get("id")
    there = env_config.get("scenario") or env_config["id"]
    kind, theirs = kind_of(trained), kind_of(env_config)
    if kind.name != theirs.name:
        raise UserError(
            f"{label} was trained on {here}, a scenario of kind {kind.name}, and cannot act "
            f"on {there}, of kind {theirs.name}. Play it on scenario={here}."
        )
    if kind.remote:  # the trained env is a simulator that may be gone from its address
        return
    mine, got = _spaces(trained), _spaces(env_config)
    if mine == got:
        return
    reason = kind.cannot_play(trained, env_config, label)
    if reason is None:
        reason = (
            f"{label} acts on the spaces of {here} ({_text(mine)}), {there} has "
            f"{_text(got)}. Play it on scenario={here}."
        )
    raise UserError(reason)


def _spaces(env_config: dict[str, Any]) -> set[tuple[str, str]]:
    """The observation and action space of each agent (one pair for a shared policy)."""
    from mobrl.envs.factory import make_env

    env = make_env({**env_config, "render_mode": None})
    try:
        if isinstance(getattr(env, "observation_spaces", None), dict):
            agents = env.possible_agents
            pairs = [(env.observation_spaces[a], env.action_spaces[a]) for a in agents]
        else:
            pairs = [(env.observation_space, env.action_space)]
        # a Box's bounds may differ between layouts; a policy minds only its shape
        return {(str(getattr(o, "shape", None) or o), str(a)) for o, a in pairs}
    finally:
        env.close()


def _text(spaces: set[tuple[str, str]]) -> str:
    return "; ".join(f"observation {o}, action {a}" for o, a in sorted(spaces))
