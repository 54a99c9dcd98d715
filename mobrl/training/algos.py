"""Registry of algorithms: name -> RLlib AlgorithmConfig builder and the action spaces it handles."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from mobrl.config.schema import BORROWED_PRESETS
from mobrl.core import metrics
from mobrl.core.errors import UserError, closest_first, first_line

if TYPE_CHECKING:
    from omegaconf import DictConfig
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


@dataclass(frozen=True)
class AlgoInfo:
    """Where the RLlib config class lives, which action-space kinds the algorithm handles,
    the env runners it needs, and whether its batches may count agent steps (UE-slot rows)."""

    config_class: str
    action_spaces: frozenset[str]
    min_env_runners: int = 0
    #: with UE slots, its train batch and minibatches count agent steps (one per UE and env
    #: step, RLlib's `count_steps_by="agent_steps"`), so a minibatch may hold more rows than
    #: the batch has env steps; algorithms without it count env steps
    rows_per_slot_batch: bool = False
    #: off-policy from a replay buffer of episodes: a multi-agent env sampled as such needs
    #: RLlib's multi-agent buffer (`_replay`)
    replay: bool = False
    #: PPO with a critic that pools the team of each step (`mobrl.training.mappo`)
    team_critic: bool = False
    #: the algorithm whose presets it reads too (hyperparameters that mean the same;
    #: config.schema.BORROWED_PRESETS, which the preset choice reads)
    tuned_as: str | None = None
    #: its RLModule is RLlib's default actor-critic (an actor encoder and a `pi` head, as
    #: PPO's), which `run.imitate` fits before RL (`mobrl.training.imitation`)
    policy_head: bool = False


ALGORITHMS: dict[str, AlgoInfo] = {
    "ppo": AlgoInfo(
        "ray.rllib.algorithms.ppo:PPOConfig",
        frozenset({"discrete", "multidiscrete", "box"}),
        rows_per_slot_batch=True,
        policy_head=True,
    ),
    "mappo": AlgoInfo(
        "ray.rllib.algorithms.ppo:PPOConfig",
        frozenset({"discrete", "multidiscrete", "box"}),
        team_critic=True,
        tuned_as=BORROWED_PRESETS["mappo"],
        policy_head=True,
    ),
    "appo": AlgoInfo(
        "ray.rllib.algorithms.appo:APPOConfig",
        frozenset({"discrete", "multidiscrete", "box"}),
        min_env_runners=1,
        policy_head=True,
    ),
    "impala": AlgoInfo(
        "ray.rllib.algorithms.impala:IMPALAConfig",
        frozenset({"discrete", "multidiscrete", "box"}),
        min_env_runners=1,
        policy_head=True,
    ),
    "dqn": AlgoInfo("ray.rllib.algorithms.dqn:DQNConfig", frozenset({"discrete"}), replay=True),
    "sac": AlgoInfo(
        "ray.rllib.algorithms.sac:SACConfig", frozenset({"discrete", "box"}), replay=True
    ),
}
#: RLlib's single-agent episode buffers and their multi-agent counterparts
MULTI_AGENT_BUFFERS = {
    "EpisodeReplayBuffer": "MultiAgentEpisodeReplayBuffer",
    "PrioritizedEpisodeReplayBuffer": "MultiAgentPrioritizedEpisodeReplayBuffer",
}
#: RLlib's multi-agent prioritized buffer gives each policy sum trees of 2 * 2**ceil(log2
#: capacity) agent steps but evicts by env steps: agents that share a policy fill them past
#: that (an IndexError, "pop from an empty deque", after about 6,900 env steps with the 19
#: cells of uma19_energy at capacity 50,000). Such agents replay from the uniform buffer.
SHARED_POLICY_BUFFER = "MultiAgentEpisodeReplayBuffer"


def env_runners(cfg: Any) -> int:
    """`run.resources.num_env_runners`, null meaning the fewest the algorithm allows."""
    runners = cfg.run.resources.num_env_runners
    if runners is None:
        info = ALGORITHMS.get(cfg.algo.name)
        return info.min_env_runners if info is not None else 1
    return int(runners)


def config_class(name: str) -> type[AlgorithmConfig]:
    module, _, attr = ALGORITHMS[name].config_class.partition(":")
    return getattr(importlib.import_module(module), attr)


def build_algorithm_config(
    cfg: DictConfig,
    env_name: str,
    env_config: dict,
    fault: dict | None = None,
    imitate: bool = True,
    failures: str | None = None,
) -> AlgorithmConfig:
    """Translate the composed mobrl config into an RLlib AlgorithmConfig (new API stack);
    `fault`: a fault to make on purpose (`mobrl.core.faults.plan`); `imitate=False` leaves
    `run.imitate` out (a resumed run continues from its checkpoint); `failures`: the run's
    folder of env failures (`RunDir.env_failures_dir`), where the env runners' guards record
    what failed and the trial (`envwatch.watched`) reads it.

    Built section by section: the env, the env runners, the learners, seed and reporting,
    training (with `run.batch`), the model, the callbacks, the policies; then RLlib's own
    checks of the whole."""
    from mobrl.envs.factory import num_ues
    from mobrl.envs.slots import uses_slots

    algo = config_class(cfg.algo.name)()
    # UE slots: RLlib sees one vector slot per UE of each env copy, and counts slot steps
    slots = uses_slots(env_config)
    per_env = num_ues(env_config) if slots else 1
    _environment(algo, env_name, env_config, fault, _watch(cfg, failures))
    _env_runners(algo, cfg, per_env)
    _env_runner_class(algo, env_config, slots)
    _learners(algo, cfg)
    _seed_and_reporting(algo, cfg)
    _training(algo, cfg, slots, rows_per_batch_step(cfg, env_config))
    _model(algo, cfg)
    _callbacks(algo, cfg, env_config, fault, per_env if slots else None, imitate)
    _policies(algo, env_config, slots)
    _replay(algo, cfg, env_config, slots)
    _validate(algo, cfg)
    from mobrl.training.envwatch import watched

    algo.algo_class = watched(algo.algo_class)
    return algo


def _watch(cfg: DictConfig, failures: str | None) -> dict[str, Any]:
    """What the env runners and the trial need to tell env failures (`envwatch`)."""
    if failures is None:
        return {}
    fault = cfg.run.fault
    watch = {
        "restart": bool(fault.restart_env_runners),
        "max_restarts": int(fault.max_env_runner_restarts),
        "delay": float(fault.restart_delay_s),
        "time_s": cfg.run.stop.time_s,
    }
    return {"failures": str(failures), "watch": watch}


def _environment(
    algo: AlgorithmConfig, env_name: str, env_config: dict, fault: Any, watch: dict[str, Any]
) -> None:
    """mobrl's env with its `env_config` (and the fault to make and where env failures go,
    which the env runners read), on torch."""
    runner_env_config = {**env_config, **watch}
    if fault is not None:
        runner_env_config["fault"] = fault
    algo.environment(env_name, env_config=runner_env_config).framework("torch")


def _env_runners(algo: AlgorithmConfig, cfg: DictConfig, per_env: int) -> None:
    """How many env runners, envs per runner (a slot per UE of each env copy) and CPUs."""
    res = cfg.run.resources
    algo.env_runners(
        num_env_runners=env_runners(cfg),
        num_envs_per_env_runner=res.num_envs_per_env_runner * per_env,
        num_cpus_per_env_runner=res.num_cpus_per_env_runner,
    )


def _env_runner_class(algo: AlgorithmConfig, env_config: dict, slots: bool) -> None:
    """The slot env runner where UEs are slots; mobrl's lean env runner for every other
    single-agent env (`envs/lean_runner.py`); RLlib's multi-agent runner otherwise."""
    from mobrl.envs.factory import policy_setup

    if slots:
        from mobrl.envs.slot_runner import UESlotEnvRunner

        algo.env_runners(
            env_runner_cls=UESlotEnvRunner, gym_env_vectorize_mode="vector_entry_point"
        )
    elif policy_setup(env_config)[0] is None:
        from mobrl.envs.lean_runner import LeanEnvRunner

        algo.env_runners(env_runner_cls=LeanEnvRunner)


def _learners(algo: AlgorithmConfig, cfg: DictConfig) -> None:
    """The learners, then how failed env runners restart (`run.fault`)."""
    res = cfg.run.resources
    algo.learners(num_learners=res.num_learners, num_gpus_per_learner=res.num_gpus_per_learner)
    algo.fault_tolerance(
        restart_failed_env_runners=cfg.run.fault.restart_env_runners,
        max_num_env_runner_restarts=cfg.run.fault.max_env_runner_restarts,
        delay_between_env_runner_restarts_s=cfg.run.fault.restart_delay_s,
    )


def _seed_and_reporting(algo: AlgorithmConfig, cfg: DictConfig) -> None:
    """The run's seed, the training return over mobrl's window of episodes, and the length
    of a timed iteration (`run.iteration_s`: APPO's, IMPALA's and SAC's)."""
    algo.debugging(seed=cfg.run.seed, log_level="WARN")
    algo.reporting(metrics_num_episodes_for_smoothing=metrics.RETURN_WINDOW)
    if cfg.run.get("iteration_s") is not None and algo.min_time_s_per_iteration:
        algo.reporting(min_time_s_per_iteration=cfg.run.iteration_s)


def _training(algo: AlgorithmConfig, cfg: DictConfig, slots: bool, rows: int) -> None:
    """`algo.training` (each key checked against the algorithm), with `run.batch` filling in
    what it leaves unset."""
    from omegaconf import OmegaConf

    training: dict[str, Any] = OmegaConf.to_container(cfg.algo.training, resolve=True)  # type: ignore[assignment]
    check_algo_keys(algo, "training", training)
    _batch(algo, cfg, training, slots, rows)
    if isinstance(training.get("n_step"), list):
        # a range of n-step returns: RLlib's buffers take it as a tuple (YAML has lists)
        training["n_step"] = tuple(training["n_step"])
    algo.training(**training)


def rows_per_batch_step(cfg: DictConfig, env_config: dict) -> int:
    """How many RLlib batch rows one env step of `run.batch.train_batch_size` counts: the
    UEs of a layout sampled as UE slots by an algorithm whose batches count agent steps
    (`AlgoInfo.rows_per_slot_batch`), else 1."""
    from mobrl.envs.factory import num_ues
    from mobrl.envs.slots import uses_slots

    if uses_slots(env_config) and ALGORITHMS[cfg.algo.name].rows_per_slot_batch:
        return num_ues(env_config)
    return 1


def _batch(
    algo: AlgorithmConfig, cfg: DictConfig, training: dict[str, Any], slots: bool, rows: int
) -> None:
    """`run.batch` into `training` (keys given there win) and the env runners' fragments. With
    UE slots and an algorithm whose batches count agent steps, RLlib counts the batch in rows
    (UE decisions): `run.batch.train_batch_size` env steps are that many times the UEs, and
    `run.batch.minibatch_size` rows may exceed the batch's env steps."""
    batch = cfg.run.batch
    if batch.train_batch_size is not None:
        training.setdefault("train_batch_size_per_learner", batch.train_batch_size)
    if rows > 1:  # the batch in env steps (RLlib's default if none is set), counted in rows
        env_steps = training.get("train_batch_size_per_learner") or algo.total_train_batch_size
        training["train_batch_size_per_learner"] = env_steps * rows
        algo.multi_agent(count_steps_by="agent_steps")
    if batch.minibatch_size is not None:
        training.setdefault("minibatch_size", batch.minibatch_size)
    if batch.num_epochs is not None:
        training.setdefault("num_epochs", batch.num_epochs)
    if batch.rollout_fragment_length is not None and slots:
        raise UserError(
            "run.batch.rollout_fragment_length applies to env.sampler=multi_agent; with UE "
            "slots each sample covers run.batch.train_batch_size env steps. Remove it or set "
            "env.sampler=multi_agent."
        )
    if batch.rollout_fragment_length is not None:
        algo.env_runners(rollout_fragment_length=batch.rollout_fragment_length)
    if batch.train_batch_size is not None and algo.min_sample_timesteps_per_iteration:
        # off-policy algorithms (DQN) define an iteration by sampled steps: keep it one batch,
        # and start learning once one batch is in the buffer, so small budgets still learn
        algo.reporting(min_sample_timesteps_per_iteration=batch.train_batch_size)
        training.setdefault("num_steps_sampled_before_learning_starts", batch.train_batch_size)


def _model(algo: AlgorithmConfig, cfg: DictConfig) -> None:
    """`algo.model` (each key checked) as RLlib's DefaultModelConfig; with a team critic
    (algo=mappo), its RLModule and learner connector too."""
    from omegaconf import OmegaConf
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    model = OmegaConf.to_container(cfg.algo.model, resolve=True)
    check_algo_keys(algo, "model", model)  # type: ignore[arg-type]
    if ALGORITHMS[cfg.algo.name].team_critic:
        from mobrl.training.mappo import configure

        configure(algo, cfg, DefaultModelConfig(**model))
    else:
        algo.rl_module(model_config=DefaultModelConfig(**model))


def _callbacks(
    algo: AlgorithmConfig,
    cfg: DictConfig,
    env_config: dict,
    fault: dict | None,
    rows_per_env_step: int | None,
    imitate: bool,
) -> None:
    """The scenario kind's metrics callback; what runs after each iteration; the return of
    each episode; before the first iteration, a replay buffer seeded with the run's seed and
    imitation (`run.imitate`)."""
    from omegaconf import OmegaConf

    from mobrl.envs.callbacks import log_episode_return
    from mobrl.scenarios.kinds import kind_of

    metrics_callback = kind_of(env_config).callbacks(cfg, env_config)
    if metrics_callback is not None:
        algo.callbacks(metrics_callback)
    on_result = _on_train_result(cfg, env_config, fault, rows_per_env_step)
    on_init = []
    if ALGORITHMS[cfg.algo.name].replay:
        from mobrl.training.replay import seed_replay_buffer

        # RLlib's buffers draw unseeded: the run's seed fixes the batches they replay
        on_init.append(partial(seed_replay_buffer, seed=int(cfg.run.seed)))
    settings = cfg.run.get("imitate")
    if imitate and settings is not None and settings.expert:
        from mobrl.training.imitation import imitation_result, pretrain

        # DAgger into the local learner's module before the first iteration
        imitation = OmegaConf.to_container(settings, resolve=True)
        on_init.append(partial(pretrain, settings=imitation, env_config=env_config))
        on_result.insert(0, imitation_result)
    algo.callbacks(
        on_train_result=on_result,
        on_episode_end=log_episode_return,
        on_algorithm_init=on_init or None,
    )


def _on_train_result(
    cfg: DictConfig, env_config: dict, fault: dict | None, rows_per_env_step: int | None
) -> list[Any]:
    """The `on_train_result` callbacks, in the order each needs what the ones before it did."""
    from mobrl.core import faults
    from mobrl.training.periodic_eval import periodic_evaluation
    from mobrl.training.return_window import fold_returns
    from mobrl.training.steps_trained import count_env_steps_trained

    # env steps trained as env steps (RLlib counts the train batch once per minibatch); the
    # training return over the last episodes next: what evaluation and faults read after it
    on_result = [
        partial(count_env_steps_trained, rows_per_env_step=rows_per_env_step),
        fold_returns,
        periodic_evaluation(cfg, env_config),
        faults.trial_callback(fault),
    ]
    on_result = [callback for callback in on_result if callback is not None]
    if cfg.run.checkpoint.keep:  # last: the score as the callbacks before it left it
        on_result.append(partial(score_at_top, metric=cfg.tune.metric))
    return on_result


def _policies(algo: AlgorithmConfig, env_config: dict, slots: bool) -> None:
    """The policies and their mapping of a multi-agent env sampled as such (not as slots)."""
    from mobrl.envs.factory import policy_setup

    policies, mapping = policy_setup(env_config)
    if policies is not None and not slots:
        algo.multi_agent(policies=set(policies), policy_mapping_fn=mapping)


def _replay(algo: AlgorithmConfig, cfg: DictConfig, env_config: dict, slots: bool) -> None:
    """An off-policy algorithm on a multi-agent env sampled as such (not as UE slots) stores
    multi-agent episodes: RLlib's default single-agent buffer becomes its multi-agent
    counterpart (a buffer type given in algo.training is kept if it is multi-agent already).
    Where agents share a policy, the prioritized one becomes the uniform one
    (`SHARED_POLICY_BUFFER`), and asking for the multi-agent prioritized buffer by name is a
    one-line error."""
    from collections import Counter

    from mobrl.envs.factory import policy_setup

    if not ALGORITHMS[cfg.algo.name].replay or slots:
        return
    policies, mapping = policy_setup(env_config)
    buffer = dict(algo.replay_buffer_config)
    kind = buffer.get("type")
    if policies is None or not isinstance(kind, str):
        return
    shared = max(Counter(mapping.mapping.values()).values()) > 1
    prioritized = MULTI_AGENT_BUFFERS["PrioritizedEpisodeReplayBuffer"]
    if kind == prioritized and shared:
        raise UserError(
            f"algo.training.replay_buffer_config.type={kind} overflows where agents share a "
            "policy (RLlib's prioritized trees hold 2 * 2**ceil(log2 capacity) agent steps "
            f"per policy but evict by env steps). Use type={SHARED_POLICY_BUFFER}, or one "
            "policy per agent (env.policies)."
        )
    if kind in MULTI_AGENT_BUFFERS:
        kind = MULTI_AGENT_BUFFERS[kind]
        buffer["type"] = SHARED_POLICY_BUFFER if kind == prioritized and shared else kind
        algo.training(replay_buffer_config=buffer)


def _validate(algo: AlgorithmConfig, cfg: DictConfig) -> None:
    """RLlib's own checks of mutually dependent settings, as a one-line error."""
    try:
        algo.validate()
    except ValueError as err:
        first = first_line(err)
        raise UserError(
            f"invalid {cfg.algo.name} settings: {first} Adjust algo.training.* or run.batch.*."
        ) from err


def score_at_top(*, result: dict[str, Any], metric: str, **kwargs: Any) -> None:
    """`on_train_result`: the checkpoint score (`tune.metric`) also under its flat name at the
    top of the result, for trials under Ray Tune. Tune's checkpoint bookkeeping
    (`CheckpointConfig.checkpoint_score_attribute`) looks the score up at the top of the nested
    result (`"env_runners/episode_return_mean" in result`) and, not finding it there, orders
    checkpoints by time: `run.checkpoint.keep` would keep the latest checkpoints and delete the
    best. A trial in the driver does not need it (`checkpoint_policy.KeepPolicy` reads nested
    keys too) but gets it as well, so both write the same files. progress.csv and TensorBoard
    flatten the result: one column, as before."""
    if metric not in result:
        value = metrics.result_value(result, metric)
        if value is not None:
            result[metric] = value


def accepted_keys(algo: AlgorithmConfig, section: str) -> set[str]:
    """Keys of `algo.training` (`training`: keyword arguments of `AlgorithmConfig.training`)
    or of `algo.model` (`model`: fields of RLlib's DefaultModelConfig)."""
    import inspect

    if section == "model":
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

        return set(DefaultModelConfig.__dataclass_fields__)
    # subclasses forward base settings through **kwargs: collect the whole MRO's parameters
    accepted: set[str] = set()
    for klass in type(algo).__mro__:
        if "training" in vars(klass):
            accepted |= set(inspect.signature(vars(klass)["training"]).parameters)
    return accepted - {"self", "kwargs"}


def check_algo_keys(algo: AlgorithmConfig, section: str, keys: Any, prefix: str = "algo") -> None:
    """Raise a one-line `UserError` naming the closest key for a key the algorithm lacks."""
    accepted = accepted_keys(algo, section)
    for key in keys:
        if key not in accepted:
            where = f"{prefix}.{section}"
            close = closest_first(key, accepted)[:3]
            raise UserError(
                f"'{where}.{key}' is not a setting of this algorithm. Did you mean "
                f"'{where}.{close[0]}'? Closest: {', '.join(close)}. Remove or rename the key."
            )
