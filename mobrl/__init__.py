"""mobrl: reinforcement learning on mobile networks with RLlib, Tune and Hydra."""

__version__ = "0.1.0"
