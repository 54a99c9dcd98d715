"""Env steps trained (`learners/__all_modules__/num_env_steps_trained` and its lifetime and
throughput keys) as env steps, not as the train batch's length once per minibatch.

RLlib 2.60's Learner logs `batch.env_steps()` for every minibatch it updates on
(`Learner._log_steps_trained_metrics`, called per minibatch in `Learner.update`), and
`MiniBatchCyclicIterator` gives every minibatch the env steps of the whole train batch
(`MultiAgentBatch(minibatch, len(self._batch))`). An iteration of n minibatches thus reports
n times the train batch's length: 11,110 for a `run=smoke` iteration of 200 env steps on
`small` (11 minibatches of 100 rows from 1,010 rows: 1,000 UE-slot steps and one bootstrap row
per slot episode chunk). Stock RLlib does the same on CartPole.

The value here is RLlib's meaning of the key for a single-agent env (the one its later
releases log: each minibatch counts its own rows): the rows trained, every epoch counted,
as env steps. Rows are module steps (`num_module_steps_trained`, which RLlib counts right);
an env step is `n_ues` rows with UE slots (every slot of an env copy steps together), and
with other samplers the iteration's env steps per module step sampled (1 for a single-agent
env: then the value equals `num_module_steps_trained`). A `run=smoke` iteration on `small`
reports 220 (1,100 slot rows / 5 UEs), a `run=quick` one 2,100 (10,500 / 5): about the
iteration's env steps times `num_epochs`, plus the rows a last, wrapped-around minibatch
repeats and the bootstrap rows.

Only the result changes: the learner's MetricsLogger keeps RLlib's own counts (APPO's target
network updates read them)."""

from __future__ import annotations

from numbers import Real
from typing import Any

LEARNERS = "learners"
ALL_MODULES = "__all_modules__"
RUNNERS = "env_runners"
ENV_TRAINED = "num_env_steps_trained"
ENV_TRAINED_LIFETIME = "num_env_steps_trained_lifetime"
MODULE_TRAINED = "num_module_steps_trained"
MODULE_TRAINED_LIFETIME = "num_module_steps_trained_lifetime"
ENV_SAMPLED = "num_env_steps_sampled"
ENV_SAMPLED_LIFETIME = "num_env_steps_sampled_lifetime"
MODULE_SAMPLED = "num_module_steps_sampled"
MODULE_SAMPLED_LIFETIME = "num_module_steps_sampled_lifetime"
#: `with_throughput=True` keys: per second over the iteration, and since the last restore
THROUGHPUT = "_throughput"
SINCE_REDUCE = "throughput_since_last_reduce"
SINCE_RESTORE = "throughput_since_last_restore"


def count_env_steps_trained(
    *, result: dict[str, Any], rows_per_env_step: int | None = None, **kwargs: Any
) -> None:
    """`on_train_result`: env steps trained (this iteration's and lifetime) as module steps
    trained over rows per env step; `rows_per_env_step`: the UEs of a layout sampled as UE
    slots, None to take the env runners' env steps per module step sampled."""
    learners = result.get(LEARNERS)
    if not isinstance(learners, dict) or not isinstance(learners.get(ALL_MODULES), dict):
        return
    totals = learners[ALL_MODULES]
    runners = result.get(RUNNERS) if isinstance(result.get(RUNNERS), dict) else {}
    for env_key, module_key, sampled_env, sampled_module, throughput in (
        (ENV_TRAINED, MODULE_TRAINED, ENV_SAMPLED, MODULE_SAMPLED, None),
        (
            ENV_TRAINED_LIFETIME,
            MODULE_TRAINED_LIFETIME,
            ENV_SAMPLED_LIFETIME,
            MODULE_SAMPLED_LIFETIME,
            SINCE_RESTORE,
        ),
    ):
        reported, rows = totals.get(env_key), totals.get(module_key)
        if not _number(reported) or not _number(rows):
            continue
        if rows_per_env_step:
            per_row = 1.0 / rows_per_env_step
        else:
            per_row = _env_steps_per_row(runners.get(sampled_env), runners.get(sampled_module))
        value = float(rows) * per_row
        totals[env_key] = value
        scale = value / reported if reported else 1.0
        _rescale(totals, env_key, scale, throughput)


def _env_steps_per_row(env_steps: Any, module_steps: Any) -> float:
    """Env steps per module step sampled (1 for a single-agent env; 1 when unknown)."""
    if isinstance(module_steps, dict):
        module_steps = sum(v for v in module_steps.values() if _number(v))
    if _number(env_steps) and _number(module_steps) and env_steps > 0 and module_steps > 0:
        return float(env_steps) / float(module_steps)
    return 1.0


def _rescale(totals: dict[str, Any], env_key: str, scale: float, since: str | None) -> None:
    """The throughput keys of `env_key` scaled like it: the iteration's key's own throughput
    and the lifetime key's rate over the iteration follow the iteration's correction
    (`since=None`), the lifetime key's rate since the restore follows the lifetime's."""
    flat = totals.get(env_key + THROUGHPUT)
    if since is None:
        if _number(flat):
            totals[env_key + THROUGHPUT] = flat * scale
        lifetime = totals.get(ENV_TRAINED_LIFETIME + THROUGHPUT)
        if isinstance(lifetime, dict) and _number(lifetime.get(SINCE_REDUCE)):
            lifetime[SINCE_REDUCE] *= scale
    elif isinstance(flat, dict) and _number(flat.get(since)):
        flat[since] *= scale


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)
