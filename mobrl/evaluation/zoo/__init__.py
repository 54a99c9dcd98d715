"""The model zoo: trained policies shipped with mobrl, run with numpy alone (no Ray, no torch).

An entry is two files in `mobrl/evaluation/zoo/entries/`: `<name>.npz` holds the layers of the policy
network (what acting needs: the actor's MLP and its action head; the critic is left out) as
plain arrays, loaded with `allow_pickle=False`, so a zoo file cannot run code; `<name>.json`
records the env to act in, how the policy was trained (command, mobrl commit, wall time, env
steps) and its evaluation against the heuristics. `mobrl zoo export` writes an entry from an
RLlib checkpoint (anyone can make their own portable policy the same way); `--checkpoint
zoo:<name>` evaluates or renders one; `mobrl zoo list` lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import UserError
from mobrl.core.zoo_store import (  # noqa: F401  (the zoo's names, as before)
    ACTIVATIONS,
    PREFIX,
    entries_dir,
    entry,
    is_ref,
    load_layers,
    logits,
    names,
)

# --- the network as arrays -----------------------------------------------------------------


def export_layers(module: Any) -> list[tuple[str, Any]]:
    """The acting path of an RLlib default RLModule (MLP encoder, then the policy head) as
    [("linear", (W, b)) or ("activation", name)], or a one-line error for other models."""
    import torch

    encoder = module.encoder
    actor = getattr(encoder, "actor_encoder", None) or getattr(encoder, "encoder", None)
    head = getattr(module, "pi", None)
    if actor is None or head is None:
        raise UserError(
            f"cannot export {type(module).__name__}: mobrl's zoo takes RLlib's default MLP "
            "modules (PPO, APPO, IMPALA). Export a checkpoint of one of those."
        )
    try:
        parts = (actor.net.mlp, head.net.mlp)
    except AttributeError:  # e.g. an LSTM or CNN encoder: no plain MLP to keep
        raise UserError(
            f"cannot export {type(module).__name__} with a {type(actor).__name__}: mobrl's zoo "
            "takes RLlib's default MLP modules (PPO, APPO, IMPALA without use_lstm or conv "
            "layers). Export a checkpoint of one of those."
        ) from None
    layers: list[tuple[str, Any]] = []
    for part in parts:
        for layer in part:
            if isinstance(layer, torch.nn.Linear):
                layers.append(
                    (
                        "linear",
                        (
                            layer.weight.detach().cpu().numpy().astype(np.float32),
                            layer.bias.detach().cpu().numpy().astype(np.float32),
                        ),
                    )
                )
            elif type(layer).__name__ in ACTIVATIONS:
                layers.append(("activation", type(layer).__name__))
            else:
                raise UserError(
                    f"cannot export a {type(layer).__name__} layer to mobrl's zoo (it takes "
                    f"Linear and {', '.join(ACTIVATIONS)}). Train without it."
                )
    return layers


def save_layers(path: Path, layers: list[tuple[str, Any]]) -> None:
    arrays: dict[str, np.ndarray] = {}
    kinds = []
    for i, (kind, value) in enumerate(layers):
        if kind == "linear":
            arrays[f"w{i}"], arrays[f"b{i}"] = value
            kinds.append("linear")
        else:
            kinds.append(value)
    arrays["layers"] = np.array(kinds)
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def logit_parts(z: np.ndarray, nvec: list[int] | None) -> list[np.ndarray]:
    """The logits of each sub-action: one per UE for MultiDiscrete actions (`nvec`, env=central),
    else all of them."""
    return [z] if nvec is None else np.split(z, np.cumsum(nvec)[:-1], axis=-1)


class ZooPolicy:
    """A zoo entry behind the `act(observation, env)` interface of mobrl's policies."""

    name = "trained"

    def __init__(
        self,
        layers: list[tuple[str, Any]],
        env_config: dict[str, Any],
        nvec: list[int] | None = None,
        explore: bool = False,
    ) -> None:
        self.layers = layers
        self.env_config = env_config
        self.nvec = nvec  # MultiDiscrete actions (env=central): one logit segment per UE
        self.explore = explore
        self.rng = np.random.default_rng(0)

    @classmethod
    def load(cls, ref: str, explore: bool = False) -> ZooPolicy:
        meta = entry(ref)
        name = ref.removeprefix(PREFIX)
        layers = load_layers(entries_dir() / f"{name}.npz")
        return cls(layers, meta["env_config"], meta.get("nvec"), explore)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def _choose(self, z: np.ndarray) -> np.ndarray:
        if not self.explore:
            return z.argmax(axis=-1)
        p = np.exp(z - z.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        u = self.rng.random(p.shape[:-1] + (1,))
        return (p.cumsum(axis=-1) < u).sum(axis=-1).clip(0, p.shape[-1] - 1)

    def actions(self, obs: np.ndarray) -> np.ndarray:
        """Actions of a batch of observations."""
        chosen = [self._choose(p) for p in logit_parts(logits(self.layers, obs), self.nvec)]
        return chosen[0] if self.nvec is None else np.stack(chosen, axis=-1)

    def act(self, observation: Any, env: Any = None) -> Any:
        if isinstance(observation, dict):
            agents = list(observation)
            if not agents:  # a step on which none of its agents acts (env=hierarchical)
                return {}
            chosen = self.actions(np.stack([observation[a] for a in agents]))
            return {a: int(c) for a, c in zip(agents, chosen)}
        chosen = self.actions(np.asarray(observation)[None])[0]
        return chosen if self.nvec is not None else int(chosen)

    def check_spaces(self, env: Any) -> None:
        from mobrl.scenarios.kinds.mobile import TOPK_OBSERVATIONS

        space = (
            env.observation_spaces[env.possible_agents[0]]
            if hasattr(env, "observation_spaces") and isinstance(env.observation_spaces, dict)
            else env.observation_space
        )
        width = self.layers[0][1][0].shape[1]
        if space.shape != (width,):
            trained = self.env_config.get("scenario") or self.env_config.get("id")
            obs = self.env_config.get("obs")
            if obs in TOPK_OBSERVATIONS:  # it acts on any layout, with its obs
                k = self.env_config.get("topk")
                raise UserError(
                    f"the zoo policy observes env.obs={obs} (env.topk={k}), {width} values per "
                    f"agent, but this env gives {space.shape}. Play it in an env with "
                    f"env.obs={obs} env.topk={k} (`mobrl evaluate` carries them over)."
                )
            raise UserError(
                f"the zoo policy was trained on scenario={trained} and observes {width} values "
                f"per agent, but this scenario gives {space.shape}. Evaluate it on "
                f"scenario={trained}, or use a policy with env.obs=topk (e.g. zoo:small) "
                "on other layouts."
            )
