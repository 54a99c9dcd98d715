"""The `run` group of the structured-config schema (mobrl.config.schema): a trial's budget,
resources, checkpointing, evaluation during training, faults survived and imitation before RL."""

# OmegaConf's structured configs read typing.Optional, not PEP 604 unions, on every Python we support
# ruff: noqa: UP045, UP007

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass
class StopConf:
    """Stop a trial when any criterion that is set is reached."""

    iterations: Optional[int] = None
    env_steps: Optional[int] = None
    #: stop once the mean episode return reaches this value
    return_mean: Optional[float] = None
    time_s: Optional[float] = None
    #: stop once evaluation during training (run.eval) shows the policy beating this
    #: baseline: the 95 % CI of the paired return gap lies above 0 (e.g. greedy)
    beat: Optional[str] = None


@dataclass
class EvalConf:
    """Evaluation during training: deterministic episodes on fixed seeds, paired with the
    heuristic baselines on the same seeds (mobrl.training.periodic_eval)."""

    #: evaluate at the first iteration and every N-th (and at each periodic checkpoint);
    #: 0: never
    interval: int = 0
    #: evaluate too at the first iteration past each multiple of N env steps, recorded as
    #: that multiple (evaluation/at_env_steps), so algorithms whose iterations differ in size
    #: are scored at the same budgets (mobrl compare); 0: never
    every_env_steps: int = 0
    #: episodes per evaluation (each baseline plays the same seeds once, at the start)
    episodes: int = 20
    #: seed of the first evaluation episode (then seed+1, ...): apart from the training
    #: episodes and from `mobrl evaluate`'s default seeds 0, 1, ...
    seed: int = 100_000
    #: baselines to compare with (null: every baseline that applies to the scenario)
    baselines: Optional[list[str]] = None
    #: what ranks checkpoints and trials and decides run.stop.beat: utility (mean UE
    #: utility), connected, p5, jain or return; null: the scenario's default (mobile-env
    #: layouts: utility, others: return)
    metric: Optional[str] = None


@dataclass
class CheckpointConf:
    #: checkpoint every N training iterations (0: never, except at the end)
    frequency: int = 10
    at_end: bool = True
    #: keep only the N best checkpoints by return (null: keep all)
    keep: Optional[int] = None
    #: MB of run.storage_path kept free: a run is refused below it, and stopped resumably
    #: when free space falls below it plus what the next checkpoint and state save need
    min_free_mb: int = 64


@dataclass
class ResourcesConf:
    #: env-runner actors (0: the trial's own process samples); null: the fewest the
    #: algorithm allows (0 for PPO and DQN, 1 for APPO and IMPALA)
    num_env_runners: Optional[int] = 1
    num_envs_per_env_runner: int = 1
    num_cpus_per_env_runner: int = 1
    num_learners: int = 0
    num_gpus_per_learner: float = 0


@dataclass
class BatchConf:
    """Sample-size settings applied to whichever algorithm has them (null: algorithm default)."""

    train_batch_size: Optional[int] = None
    minibatch_size: Optional[int] = None
    num_epochs: Optional[int] = None
    rollout_fragment_length: Optional[int] = None


@dataclass
class InjectConf:
    """A fault made on purpose, to see a run survive it (testing; `what=null`: none)."""

    #: `env_error` (the sampling env raises), `env_exit` (the process stepping the env dies)
    #: or `trial_exit` (the trial's process dies after iteration `at`)
    what: Optional[str] = None
    #: env faults: at the env's N-th step; trial_exit: after the N-th training iteration
    at: int = 100
    #: how many times in the whole run (each fault, once made, is recorded in the run dir)
    times: int = 1


@dataclass
class FaultConf:
    """What a run survives: failed env runners (RLlib) and crashed trials (Tune)."""

    #: restart an env runner that failed (its env raised, its process died) as a fresh copy;
    #: off, the trial stops at the first failure with one line naming its cause
    restart_env_runners: bool = False
    #: failures of env runners one trial survives with restarts on; one more stops it
    max_env_runner_restarts: int = 5
    #: seconds before an env runner is restarted (RLlib's own default is 60)
    restart_delay_s: float = 5.0
    #: retries of a crashed trial, each from its latest checkpoint (-1: retry forever)
    max_failures: int = 0
    inject: InjectConf = field(default_factory=InjectConf)


@dataclass
class ImitateConf:
    """Imitating a reference before RL (mobrl.training.imitation): mobile-env layouts with
    env=ma and env.obs=topk or topk_gain; `expert=null`: off."""

    #: the baseline to imitate (e.g. `oracle`); null: no imitation
    expert: Optional[str] = None
    #: episodes the expert plays first, and the policy plays in each DAgger round
    episodes: int = 4
    #: DAgger rounds (the policy plays, the expert labels, the policy is fit again)
    rounds: int = 4
    #: minibatches of 256 per fit (the last fit: 3x)
    updates: int = 1500
    #: with env.turn_rounds > 1: the weight in a fit of a later round's row whose label
    #: changes the UE's earlier move of the step (1: every row alike)
    revisions: float = 1.0
    #: with a planning expert (oracle_horizon, oracle_mpc) and env.decide=in_turns: the weight
    #: in a fit of a row whose label is the plan's move where it departs from oracle's step
    #: (a link prepared ahead; 1: every row alike)
    ahead: float = 1.0
    #: a planning expert's steps ahead (null: its own, oracle_horizon's 8)
    horizon: Optional[int] = None
    #: with cell agents and an expert that weighs energy (energy_oracle, energy_greedy): the λ
    #: it plans with (null: the layout's power.weight). A smaller one labels a more cautious
    #: reference: it sleeps less and serves better (docs/energy.md)
    weight: Optional[float] = None
    #: with such an expert: the price it plans with of each UE's service lost against every
    #: station on the air (null: none; docs/energy.md, "A service floor")
    floor: Optional[float] = None
    #: processes that play the labelled episodes (the expert's, then each round's) while the
    #: fits stay in the trial's process: the same labels and policy as on 1, in less time
    #: where cores are free; beside Ray's count of the trial's CPUs (docs/training.md)
    workers: int = 1


@dataclass
class RunConf:
    """Budget, resources, checkpointing and where results go."""

    name: str = "default"
    seed: int = 0
    #: Tune storage; null puts it inside the Hydra job dir (outputs/... or multirun/...)
    storage_path: Optional[str] = None
    stop: StopConf = field(default_factory=StopConf)
    checkpoint: CheckpointConf = field(default_factory=CheckpointConf)
    resources: ResourcesConf = field(default_factory=ResourcesConf)
    batch: BatchConf = field(default_factory=BatchConf)
    eval: EvalConf = field(default_factory=EvalConf)
    fault: FaultConf = field(default_factory=FaultConf)
    imitate: ImitateConf = field(default_factory=ImitateConf)
    #: how long an iteration of an algorithm whose iterations are timed lasts (RLlib's
    #: min_time_s_per_iteration: 10 s for APPO and IMPALA, 1 s for SAC; null keeps it; PPO
    #: and DQN count theirs in batches or env steps). Shorter iterations report, check
    #: run.stop and meet run.eval.every_env_steps's marks sooner
    iteration_s: Optional[float] = None
    #: log per-UE, fairness and network metrics of mobile-env scenarios
    ue_metrics: bool = True
    #: where the trial trains: `auto` (one trial that needs nothing remote trains in mobrl's
    #: own process, without Ray; otherwise Tune), `driver` (insist) or `tune` (always Tune)
    executor: str = "auto"
