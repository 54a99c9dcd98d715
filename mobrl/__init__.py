"""mobrl: reinforcement learning on mobile networks with RLlib, Tune and Hydra."""

__version__ = "0.1.0"


def _register() -> None:
    # Gymnasium ids of the fast engine, e.g. gymnasium.make("mobrl/mobile-small-ma-v0");
    # entry points are strings, so mobile-env is imported only when such an env is made
    from mobrl.scenarios.kinds.mobile import register_gym_ids

    register_gym_ids()
    # modules that moved stay importable under their old paths (earlier runs' pickles)
    from mobrl.core import moved

    moved.install()


_register()


#: the Python API (mobrl.api), imported when first used: `import mobrl` stays light
_API = (
    "train", "resume", "evaluate", "render", "report", "parallel_env", "Run", "Evaluation",
    "Video", "Report", "TrainingStopped",
)  # fmt: skip


def __getattr__(name: str):
    if name in _API:
        from mobrl import api

        return getattr(api, name)
    if name == "UserError":
        from mobrl.core.errors import UserError

        return UserError
    raise AttributeError(f"module 'mobrl' has no attribute {name!r}")
