"""What `evaluate`, `render`, the matrix and `zoo export` act on: a checkpoint picked from a
checkpoint, trial, run or multirun dir (`--pick best|last`), a zoo entry, or none (baselines
only), with the env to run it in (the run's manifest, or scenario overrides)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mobrl.core.errors import UserError, unknown_choice
from mobrl.core.rundir import RunDir, find_manifest, is_complete, list_checkpoints

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
    """The checkpoint (picked from a run dir) and the env to run it in: from the run's manifest,
    or from scenario overrides (required without a checkpoint)."""
    override_env = None
    if overrides:
        from mobrl.envs.factory import check_env, env_config_from
        from mobrl.training.checks import validate_command_line

        override_env = env_config_from(validate_command_line(overrides))
        check_env(override_env, rllib=False)  # a scenario that may never have been trained on
    return resolve_target(checkpoint, pick, override_env)


def resolve_target(
    checkpoint: Path | None, pick: str, override_env: dict[str, Any] | None
) -> Target:
    if checkpoint is None:
        if override_env is None:
            raise UserError("name a scenario, e.g. `mobrl baselines scenario=small env=ma`.")
        return Target(None, override_env, "baselines only")
    from mobrl.evaluation import zoo

    if zoo.is_ref(checkpoint):
        meta = zoo.entry(str(checkpoint))
        env = override_env if override_env is not None else meta["env_config"]
        return Target(Path(str(checkpoint)), env, f"zoo policy {meta['name']}")
    chosen, note = pick_checkpoint(checkpoint, pick)
    if override_env is not None:
        return Target(chosen, override_env, note)
    manifest = find_manifest(chosen)
    if manifest is None:
        raise UserError(
            f"'{chosen}' has no mobrl manifest, so mobrl cannot tell its env. Add the scenario "
            "as overrides, e.g. `mobrl evaluate --checkpoint PATH scenario=small env=ma`."
        )
    return Target(chosen, manifest["env_config"], note)
