"""The zoo's entries as files, and acting with their arrays (numpy only): what every floor may
read. An entry's `<name>.json` is its record, `<name>.npz` the layers of its policy network
(`mobrl.evaluation.zoo` writes, lists and plays them; the env of a level held fixed at a zoo
policy, `env.cell_policy`, acts with them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import UserError, first_line, unknown_choice

#: `--checkpoint zoo:<name>` names a zoo entry
PREFIX = "zoo:"
#: activations of RLlib's default MLPs that the exported network may use
ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
}


def is_ref(checkpoint: Any) -> bool:
    return checkpoint is not None and str(checkpoint).startswith(PREFIX)


def entries_dir() -> Path:
    """Where the shipped entries are: package data of `mobrl.evaluation.zoo`, read as files
    (without importing the package, which sits on a higher floor)."""
    return Path(__file__).resolve().parents[1] / "evaluation" / "zoo" / "entries"


def names() -> list[str]:
    return sorted(p.stem for p in entries_dir().glob("*.json"))


def entry(name: str) -> dict[str, Any]:
    """The metadata of zoo entry `name` (one-line error for an unknown name)."""
    name = name.removeprefix(PREFIX)
    path = entries_dir() / f"{name}.json"
    if not path.is_file():
        raise unknown_choice(
            "zoo policy", name, names(), "See `mobrl zoo list` for the shipped policies."
        )
    return json.loads(path.read_text())


def load_layers(path: Path) -> list[tuple[str, Any]]:
    try:
        with np.load(path, allow_pickle=False) as data:
            kinds = [str(k) for k in data["layers"]]
            return [
                ("linear", (data[f"w{i}"], data[f"b{i}"])) if k == "linear" else ("activation", k)
                for i, k in enumerate(kinds)
            ]
    except (OSError, ValueError, KeyError) as err:
        raise UserError(
            f"zoo file '{path}' is damaged ({first_line(err)}). "
            "Reinstall mobrl or export the entry again."
        ) from err


def logits(layers: list[tuple[str, Any]], obs: np.ndarray) -> np.ndarray:
    """The action logits of a batch of observations (float64 for exact argmax ties)."""
    x = np.asarray(obs, dtype=np.float32)
    for kind, value in layers:
        if kind == "linear":
            weight, bias = value
            x = x @ weight.T + bias
        else:
            if value not in ACTIVATIONS:
                raise UserError(f"unknown activation '{value}' in a zoo file. Export it again.")
            x = ACTIVATIONS[value](x)
    return x


def actions(layers: list[tuple[str, Any]], obs: np.ndarray) -> np.ndarray:
    """The argmax actions of a batch of observations (Discrete actions)."""
    return logits(layers, obs).argmax(axis=-1)
