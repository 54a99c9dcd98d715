"""An off-policy algorithm's replay buffer seeded by the run's seed.

RLlib 2.60's episode replay buffers draw their samples from `np.random.default_rng(seed=None)`,
so DQN and SAC replayed other batches in every run of the same seed: `dqn/cartpole` took 57k
env steps to a training return of 450 in one run and 197k in the next. RLlib's check of the
buffer's type is a string test, so a buffer class of mobrl's own cannot take their place; the
callback below seeds the algorithm's buffer (`Algorithm.local_replay_buffer`) once it is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def seed_replay_buffer(*, algorithm: Any, seed: int, **kwargs: Any) -> None:
    """`on_algorithm_init`: the replay buffer's random generator seeded with `seed`."""
    buffer = getattr(algorithm, "local_replay_buffer", None)
    if buffer is not None and hasattr(buffer, "rng"):
        buffer.rng = np.random.default_rng(seed)
