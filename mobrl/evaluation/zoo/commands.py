"""`mobrl zoo export` (a zoo entry or an ONNX model from a checkpoint) and `mobrl zoo list`
(mobrl.evaluation.zoo.listing)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mobrl.core import metrics as keys
from mobrl.core.errors import UserError
from mobrl.core.files import atomic_write_json
from mobrl.core.rundir import read_trial_results
from mobrl.evaluation import zoo
from mobrl.evaluation.zoo.listing import (  # noqa: F401 (imported from here by others)
    NARROW,
    best_rule,
    list_command,
    records,
)

# `as`: re-exported explicitly, as the functions below call their own arguments rows
from mobrl.evaluation.zoo.listing import rows as rows


def _trial_progress(checkpoint: Path) -> dict[str, Any]:
    """Wall time (imitation before RL included), env steps and iteration of the result the
    checkpoint was saved after (the trial's last result written before the checkpoint), and
    when the run first beat greedy and first closed 90 % of the gap to the reference in its
    evaluation during training (`milestones`)."""
    saved = checkpoint.stat().st_mtime
    # a line cut by a stop is left out
    rows = [r for r in read_trial_results(checkpoint.parent) if r.get("timestamp", 0) <= saved + 1]
    if not rows:
        return {}
    best = rows[-1]
    return {
        "iteration": best.get("training_iteration"),
        "env_steps": best.get("num_env_steps_sampled_lifetime"),
        "wall_time_s": _training_s(best, _imitation_s(rows)),
        "imitation_s": round(_imitation_s(rows), 1),
        "evaluation_s": round(float(keys.result_value(best, keys.EVAL_TIME_TOTAL) or 0.0), 1),
        **milestones(rows),
    }


def _imitation_s(rows: list[dict[str, Any]]) -> float:
    """The run's imitation time before RL (a resumed run's later results lack it: it does not
    imitate again)."""
    found = (keys.result_value(r, keys.IMITATION_TIME) for r in rows)
    return float(next((v for v in found if v is not None), 0.0))


def _training_s(row: dict[str, Any], imitation_s: float) -> float:
    """Training wall time up to `row`: imitation before RL (which RLlib's time_total_s leaves
    out) and the iterations (whose time_total_s leaves out evaluation during training)."""
    return round(float(row.get(keys.TIME_TOTAL, float("nan"))) + imitation_s, 1)


#: the share of the greedy -> reference gap a policy must close to count as near the reference
NEAR = 0.9


def milestones(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """From a trial's results with evaluation during training (`run.eval.*` with greedy and a
    reference among the baselines): the first result whose evaluation beat greedy (paired CI
    above 0) and the first that closed >= 90 % of the greedy -> reference gap, each as
    training time (`_training_s`), env steps and iteration; None where never reached, absent
    where not measured."""

    imitation_s = _imitation_s(rows)

    def at(row: dict[str, Any]) -> dict[str, Any]:
        return {
            "s": _training_s(row, imitation_s),
            "env_steps": row.get(keys.ENV_STEPS),
            "iteration": row.get(keys.ITERATION),
        }

    out: dict[str, Any] = {}
    if any(keys.result_value(r, keys.eval_beats("greedy")) is not None for r in rows):
        hit = next((r for r in rows if keys.result_value(r, keys.eval_beats("greedy"))), None)
        out["beat_greedy"] = at(hit) if hit else None
    closed = [keys.result_value(r, keys.EVAL_CLOSED) for r in rows]
    if any(c is not None for c in closed):
        hit = next((r for r, c in zip(rows, closed) if c is not None and c >= NEAR), None)
        out["closed_90"] = at(hit) if hit else None
    return out


def _evaluation(evaluation: Path, checkpoint: Path) -> dict[str, Any]:
    """The result of `mobrl evaluate` of this checkpoint, from its summary.json."""
    from mobrl.core.metrics import ENERGY_KEYS, EPISODE_METRICS, NET_DEMAND_SERVED
    from mobrl.evaluation.outputs import EvalDir

    folder = EvalDir(evaluation if evaluation.is_dir() else evaluation.parent)
    summary = folder.read_summary()
    if summary is None:
        raise UserError(
            f"--evaluation '{evaluation}' holds no {EvalDir.SUMMARY} of `mobrl evaluate`. Give "
            "the --output dir of `mobrl evaluate --checkpoint` for this checkpoint."
        )
    if Path(summary.get("checkpoint") or "") != checkpoint:
        raise UserError(
            f"--evaluation '{evaluation}' evaluated {summary.get('checkpoint')}, not "
            f"{checkpoint}. Evaluate this checkpoint and pass that dir."
        )
    seeds = summary.get("seed_range") or summary.get("seeds") or []  # older: every seed
    return {
        "env_config": summary.get("env_config"),
        "episodes": summary.get("episodes"),
        "seeds": f"{min(seeds)}-{max(seeds)}" if seeds else None,
        "explore": summary.get("explore"),
        "returns": {
            name: {"mean": stats["return"]["mean"], "ci95": stats["return"]["ci95"]}
            for name, stats in summary["policies"].items()
        },
        # what the return does not show: how well the UEs are served under each policy
        "ue_metrics": {
            name: {
                key: {"mean": stats[key]["mean"], "ci95": stats[key]["ci95"]}
                for key in EPISODE_METRICS
                if key in stats
            }
            for name, stats in summary["policies"].items()
        },
        # cell agents (a layout with power:): each policy's energy and demand served
        "energy": {
            name: {
                key: {"mean": stats[key]["mean"], "ci95": stats[key]["ci95"]}
                for key in (*ENERGY_KEYS, NET_DEMAND_SERVED)
                if key in stats
            }
            for name, stats in summary["policies"].items()
        },
        # trained − each baseline, paired by seed, in every measure ("diff")
        "paired_vs_trained": summary.get("paired_vs_trained", {}),
        "gap_closed": (summary.get("gap_closed") or {}).get("trained"),
        "gap_reference": summary.get("gap_reference"),
    }


def export_command(
    checkpoint: Path,
    name: str,
    evaluation: Path | None,
    output: Path | None,
    pick: str,
    trust: bool = False,
) -> Path:
    """Write `<name>.npz` and `<name>.json` for the (picked) checkpoint."""
    from mobrl.core.rundir import source_commit

    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise UserError(f"--name '{name}' must be letters, digits, - and _. E.g. --name small.")
    chosen, manifest, layers, nvec = _checkpoint_network(checkpoint, pick, trust)
    scored = _evaluation(evaluation, chosen) if evaluation else None
    # an entry acts where it was evaluated: a topk policy evaluated on another layout
    # (`mobrl evaluate --checkpoint X scenario=other`) serves that layout
    env_config = (scored or {}).pop("env_config", None) or manifest["env_config"]
    meta = {
        "name": name,
        "scenario": env_config.get("scenario") or manifest["scenario"],
        "trained_on": manifest["scenario"],
        "reward": manifest["env_config"].get("reward", "mobile"),  # what it learned from
        "env_mode": manifest["env_mode"],
        "obs": env_config.get("obs", "mobile"),
        "algo": manifest.get("algo"),
        "env_config": {**env_config, "render_mode": None},
        "nvec": nvec,
        "command": manifest.get("command"),
        # the commit that trained it (manifests of older runs lack it: then the exporting one)
        "mobrl_commit": manifest.get("mobrl_commit") or source_commit(),
        "mobrl_commit_of": "training" if manifest.get("mobrl_commit") else "export",
        "versions": manifest.get("versions"),
        "checkpoint": chosen.name,
        "training": _trial_progress(chosen),
        "evaluation": scored,
    }
    out = Path(output) if output else zoo.entries_dir()
    out.mkdir(parents=True, exist_ok=True)
    npz, js = out / f"{name}.npz", out / f"{name}.json"
    tmp = out / f".{name}.npz.tmp"
    zoo.save_layers(tmp, layers)
    os.replace(tmp, npz)
    atomic_write_json(js, meta)
    return npz


def _checkpoint_network(
    checkpoint: Path, pick: str, trust: bool, discrete: bool = False
) -> tuple[Path, dict[str, Any], list[tuple[str, Any]], list[int] | None]:
    """The (picked) checkpoint, its run's manifest, its one policy's acting layers and, for
    MultiDiscrete actions, their counts; one-line errors for what the zoo cannot take
    (`discrete`: nor a policy whose actions are not Discrete or MultiDiscrete)."""
    from mobrl.core.checkpoints import load_rl_modules
    from mobrl.core.rundir import find_manifest
    from mobrl.evaluation.targets import pick_checkpoint

    chosen, _ = pick_checkpoint(checkpoint, pick)
    manifest = find_manifest(chosen)
    if manifest is None:
        raise UserError(f"'{chosen}' has no mobrl manifest. Export a checkpoint of `mobrl train`.")
    modules = load_rl_modules(chosen, trust=trust)
    if len(modules) != 1:
        raise UserError(
            f"the checkpoint holds {len(modules)} policies ({', '.join(sorted(modules))}); the "
            "zoo takes one policy shared by all agents. Train with env.policies=shared."
        )
    module = next(iter(modules.values()))
    if (
        discrete
        and not hasattr(module.action_space, "n")
        and not hasattr(module.action_space, "nvec")
    ):
        raise UserError(
            f"cannot export a policy acting in {module.action_space} to ONNX: the model's "
            "outputs are logits and their argmax. Export a policy with discrete actions."
        )
    layers = zoo.export_layers(module)
    nvec = getattr(module.action_space, "nvec", None)
    return chosen, manifest, layers, [int(n) for n in nvec] if nvec is not None else None


def onnx_output(output: Path | None, name: str) -> Path:
    """The file `--format onnx` writes: --output (a file, or a dir to hold NAME.onnx), else
    ./NAME.onnx; a one-line error when it cannot be written."""
    from mobrl.core.files import check_writable

    path = Path(output).expanduser() if output is not None else Path(f"{name}.onnx")
    if path.is_dir():
        path = path / f"{name}.onnx"
    # a file there is replaced: its folder must take a new one
    check_writable(path.parent if path.exists() else path, "--output", f"./{name}.onnx")
    return path.absolute()


def _mobrl_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("mobrl")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def export_onnx_command(
    checkpoint: str | Path,
    output: Path | None = None,
    name: str | None = None,
    pick: str = "best",
    trust: bool = False,
) -> tuple[Path, dict[str, Any]]:
    """`mobrl zoo export --format onnx`: the policy of `checkpoint` (zoo:NAME, a checkpoint or
    a run dir) as an ONNX model; returns its path and metadata."""
    from mobrl.evaluation.zoo import onnx_export

    if name is not None and not name.replace("_", "").replace("-", "").isalnum():
        raise UserError(f"--name '{name}' must be letters, digits, - and _. E.g. --name small.")
    if zoo.is_ref(checkpoint):
        ref = str(checkpoint)
        meta = zoo.entry(ref)
        entry_name = ref.removeprefix(zoo.PREFIX)
        name = name or entry_name
        output = onnx_output(output, name)
        onnx_export.onnx_module()  # before any work: the extra is missing
        layers = zoo.load_layers(zoo.entries_dir() / f"{entry_name}.npz")
        nvec, env_config, source = meta.get("nvec"), meta["env_config"], ref
    else:
        name = name or "policy"
        output = onnx_output(output, name)
        onnx_export.onnx_module()
        chosen, manifest, layers, nvec = _checkpoint_network(
            Path(checkpoint), pick, trust, discrete=True
        )
        env_config, source = manifest["env_config"], str(chosen)
    actions = onnx_export.action_count(layers, nvec)
    width = int(next(v for k, v in layers if k == "linear")[0].shape[1])
    metadata = {
        "source": source,
        "scenario": str(env_config.get("scenario") or env_config.get("id")),
        "env_mode": str(env_config.get("mode")),
        "obs": str(env_config.get("obs") or "the task's own"),
        "topk": env_config.get("topk"),
        "observation_size": width,
        "actions": actions,
        "inputs": f"{onnx_export.INPUT}: float32 [batch, {width}]",
        "outputs": f"{onnx_export.LOGITS}: float32 logits; {onnx_export.ACTION}: int64 argmax",
        "env_config": {**env_config, "render_mode": None},
        "mobrl_version": _mobrl_version(),
    }
    model = onnx_export.build_model(layers, nvec, metadata, name)
    return onnx_export.write(model, output), metadata
