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


def __getattr__(name: str):
    """The Python API (`mobrl.parallel_env`, `mobrl.UserError`), imported when first used:
    `import mobrl` stays light."""
    if name == "parallel_env":
        from mobrl.api import parallel_env

        return parallel_env
    if name == "UserError":
        from mobrl.errors import UserError

        return UserError
    raise AttributeError(f"module 'mobrl' has no attribute {name!r}")
