"""mobrl: reinforcement learning on mobile networks with RLlib, Tune and Hydra."""

__version__ = "0.1.0"


def _register() -> None:
    # Gymnasium ids of the fast engine, e.g. gymnasium.make("mobrl/mobile-small-ma-v0");
    # entry points are strings, so mobile-env is imported only when such an env is made
    from mobrl.kinds.mobile import register_gym_ids

    register_gym_ids()
    # modules that moved stay importable under their old paths (earlier runs' pickles)
    from mobrl import _moved

    _moved.install()


_register()
