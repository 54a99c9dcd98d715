"""mobrl's multi-agent envs (its UE agents, the adapters of envs it did not write) as RLlib's
`MultiAgentEnv`, for RLlib's runners and env checker."""

from __future__ import annotations

from ray.rllib.env.multi_agent_env import MultiAgentEnv

from mobrl.envs.cell_turns import CellTurnsEnv
from mobrl.envs.cells import CellsEnv
from mobrl.envs.foreign import AECAdapter, ParallelAdapter, RLlibStyleAdapter
from mobrl.envs.hierarchy import HierarchicalEnv
from mobrl.envs.turns import UETurnsEnv
from mobrl.envs.wrappers import UEAgentsEnv


class MobileMultiAgentEnv(UEAgentsEnv, MultiAgentEnv):
    """`UEAgentsEnv` as an RLlib `MultiAgentEnv` (the behaviour is all `UEAgentsEnv`'s)."""


class MobileCellsEnv(CellsEnv, MultiAgentEnv):
    """`CellsEnv` (env=cells: one agent per station) as an RLlib `MultiAgentEnv`."""


class MobileCellTurnsEnv(CellTurnsEnv, MultiAgentEnv):
    """`CellTurnsEnv` (env=cells env.decide=in_turns) as an RLlib `MultiAgentEnv` (turn-based:
    only the acting group observes; the others' rewards wait for their next observation)."""


class MobileHierarchicalEnv(HierarchicalEnv, MultiAgentEnv):
    """`HierarchicalEnv` (env=hierarchical: a network agent every env.period steps above one
    agent per station) as an RLlib `MultiAgentEnv`."""


class MobileTurnsEnv(UETurnsEnv, MultiAgentEnv):
    """`UETurnsEnv` (env.decide=in_turns) as an RLlib `MultiAgentEnv` (turn-based: only the
    acting group observes; the others' rewards wait for their next observation)."""


class ForeignParallelEnv(ParallelAdapter, MultiAgentEnv):
    """A PettingZoo `ParallelEnv` for RLlib's runners (the behaviour is `ParallelAdapter`'s)."""


class ForeignAECEnv(AECAdapter, MultiAgentEnv):
    """A PettingZoo AEC env for RLlib's runners (the behaviour is `AECAdapter`'s)."""


class ForeignRLlibEnv(RLlibStyleAdapter, MultiAgentEnv):
    """An RLlib-style env with its infos counted (the behaviour is `RLlibStyleAdapter`'s)."""


#: `mobrl.envs.foreign`'s adapters as RLlib `MultiAgentEnv`s, by flavour
FOREIGN = {"parallel": ForeignParallelEnv, "aec": ForeignAECEnv, "rllib": ForeignRLlibEnv}
