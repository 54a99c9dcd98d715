"""Policies behind one interface: `act(observation) -> action`, for trained RLModules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mobrl.checkpoints import find_manifest, load_rl_modules
from mobrl.envs.factory import policy_setup
from mobrl.errors import UserError


class TrainedPolicy:
    """A checkpoint's RLModules, run directly for inference (no Ray, no env runners)."""

    def __init__(self, modules: dict[str, Any], env_config: dict[str, Any], explore: bool = False):
        self.modules = modules
        self.env_config = env_config
        self.explore = explore
        _, self._mapping = policy_setup(env_config)

    @classmethod
    def from_checkpoint(
        cls, checkpoint: Path, env_config: dict[str, Any] | None = None, explore: bool = False
    ) -> TrainedPolicy:
        """Restore from `checkpoint`; the env comes from the run's manifest unless given."""
        if env_config is None:
            manifest = find_manifest(Path(checkpoint))
            if manifest is None:
                raise UserError(
                    f"no {'manifest.json'} found for '{checkpoint}'. Name the scenario with "
                    "overrides, e.g. scenario=small env=ma."
                )
            env_config = manifest["env_config"]
        return cls(load_rl_modules(Path(checkpoint)), env_config, explore=explore)

    def module_for(self, agent_id: Any) -> Any:
        if self._mapping is None:
            return next(iter(self.modules.values()))
        return self.modules[self._mapping(agent_id, None)]

    def act(self, observation: Any) -> Any:
        """Actions for one env step: a dict per agent for multi-agent envs, else one action."""
        if isinstance(observation, dict):
            by_module: dict[int, list[Any]] = {}
            for agent in observation:
                by_module.setdefault(id(self.module_for(agent)), []).append(agent)
            actions: dict[Any, Any] = {}
            for agents in by_module.values():
                module = self.module_for(agents[0])
                batch = np.stack([observation[a] for a in agents])
                for agent, action in zip(agents, self._forward(module, batch)):
                    actions[agent] = action
            return actions
        module = next(iter(self.modules.values()))
        return self._forward(module, np.asarray(observation)[None])[0]

    def _forward(self, module: Any, batch: np.ndarray) -> list[Any]:
        import torch

        with torch.no_grad():
            obs = torch.as_tensor(batch, dtype=torch.float32)
            if self.explore:
                out = module.forward_exploration({"obs": obs})
                dist_cls = module.get_exploration_action_dist_cls()
            else:
                out = module.forward_inference({"obs": obs})
                dist_cls = module.get_inference_action_dist_cls()
            if "actions" in out:  # e.g. DQN's modules pick actions themselves
                actions = out["actions"]
            else:
                dist = dist_cls.from_logits(out["action_dist_inputs"])
                if not self.explore:
                    dist = dist.to_deterministic()
                actions = dist.sample()
        actions = actions.cpu().numpy()
        return [a.item() if a.ndim == 0 else a for a in actions]
