"""Structured-config dataclasses: the typed schema every composed mobrl config must fit."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import MISSING

from mobrl.config.run_schema import (  # noqa: F401 (imported from here by others)
    BatchConf,
    CheckpointConf,
    EvalConf,
    FaultConf,
    ImitateConf,
    InjectConf,
    ResourcesConf,
    RunConf,
    StopConf,
)


@dataclass
class ScenarioConf:
    """What the agents act in: a mobile-env layout or a Gymnasium task."""

    name: str = MISSING
    #: `mobile` (a mobile-env layout, wrapped according to `env.mode`), `gym` (a Gymnasium id),
    #: `arena` (mobrl's two-agent grid arena), `custom` (the user's env by import path) or
    #: `external` (a simulator in its own process, over mobrl.external's protocol)
    kind: str = MISSING
    #: scenario name (mobile, arena) or Gymnasium environment id (gym)
    id: str = MISSING
    #: mobile: the layout file (YAML); `scenario.path=my.yaml` loads one from anywhere
    path: Optional[str] = None
    #: passed on: mobile-env config entries (e.g. seed), keyword arguments of
    #: `gymnasium.make`, the arena's settings, or of a custom env's callable
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: custom: the callable that makes the env, `MODULE:CALLABLE` (found on the working
    #: directory and PYTHONPATH); it returns a Gymnasium Env, a PettingZoo ParallelEnv or AEC
    #: env, or an RLlib MultiAgentEnv
    entry: Optional[str] = None
    #: custom, external: values of the env's `infos` logged like mobrl's UE metrics, as `KEY`,
    #: `KEY:REDUCE` (per episode: mean, sum, last, max or min; default mean) or
    #: `KEY:REDUCE:BETTER` (max: higher is better, the default; min: lower, a cost)
    metrics: list[str] = field(default_factory=list)
    #: external: the simulator's `HOST:PORT`, or a list of them (env runner i connects to
    #: the i-th, cycling)
    address: Any = None


@dataclass
class EnvConf:
    """How a mobile-env scenario is exposed to RLlib (ignored by Gymnasium scenarios)."""

    #: `ma`: one agent per UE; `central`: one agent controls all UEs; `cells`: one agent per
    #: station, deciding whether it sleeps (layouts with `power:`); `hierarchical`: a network
    #: agent above the cells
    mode: str = MISSING
    #: multi-agent policy mapping: `shared` (one policy), `per_agent`, or groups
    #: {policy: [agent ids]}; null: the scenario's default (mobile: shared, arena: per_agent)
    policies: Optional[Any] = None
    #: how RLlib samples env=ma: `auto` (UE slots where they apply), `ue_slots` (one
    #: single-agent vector slot per UE: several times faster) or `multi_agent`
    sampler: str = "auto"
    #: what each UE observes: `mobile` (mobile-env's own features), `extended` (those plus,
    #: per station, whether it is in range and how many UEs it serves), `topk` (env=ma: k
    #: station slots, the same size on every layout), `topk_gain` (topk plus each slot's
    #: single-toggle gain), `topk_impact` (topk plus that gain split into the UE's own change
    #: and the other UEs') or `topk_intent` (topk plus that gain in 3 rounds, each given the
    #: other UEs' intended toggles of the round before); see mobrl.envs.observations
    obs: str = "mobile"
    #: env.obs=topk and its variants (topk_*): the number of station slots each UE observes
    #: and acts on
    topk: int = 3
    #: env=ma: the share of each UE's learning reward taken from the mean reward of all UEs
    #: of its env copy (0: its own mobile-env reward, 1: the team mean). The sum over UEs,
    #: and so the episode return, stays mobile-env's
    team_reward: float = 0.0
    #: env=ma: what each UE learns from: `mobile` (mobile-env's multi-agent reward), `utility`
    #: (its own scaled utility, -1 unconnected: the team's sum is N x mobile-env's central
    #: reward) or `marginal` (its contribution to the team's summed utility: a difference
    #: reward); see mobrl.network.service
    reward: str = "mobile"
    #: env=ma with a slot observation: `at_once` (every UE acts on the step's state) or
    #: `in_turns` (UE groups that share no slot station act one after another within a step,
    #: each observing its slots' gains given the moves before it); see mobrl.envs.turns
    decide: str = "at_once"
    #: with `in_turns`: how often the groups take their turns within a step (2: each group
    #: may revise its move once every group has decided); see mobrl.envs.turns
    turn_rounds: int = 1
    #: with `in_turns`: what a turn observes beyond its slot observation: `gains` (its slots'
    #: gains given the moves before it) or `greedy_ahead` (also given the UEs after it
    #: playing greedy's move); see mobrl.envs.turns
    turn_obs: str = "gains"
    #: env=cells: the nearest stations each cell observes in fixed slots; see mobrl.envs.cells
    neighbours: int = 6
    #: env=hierarchical: the steps between the network agent's decisions; see
    #: mobrl.envs.hierarchy
    period: int = 10
    #: env=cells and env=hierarchical: what the network does with a cell's request to sleep:
    #: `coverage` (granted only if each of its UEs has another station on the air),
    #: `capacity` (and those stations can take the UEs' needs) or `none`; see mobrl.envs.cells
    guard: str = "coverage"
    #: env=cells and env=hierarchical: how the UEs pick their stations, one of the network's
    #: association procedures (greedy, greedy_rsrp, a3, a3_ttt2); see mobrl.network.association
    ue_policy: str = "greedy"
    #: env=hierarchical: `learn` (the cells are agents) or a zoo cell policy the cells are
    #: held at while the network agent learns (zoo:uma19_energy); see mobrl.envs.hierarchy
    cell_policy: str = "learn"
    #: env=hierarchical: what the network agent learns from, `objective` (the period's) or
    #: `difference` (against a copy of the period at the layout's λ; cells held fixed)
    network_reward: str = "objective"
    #: env=cells env.decide=in_turns: the price the gain a cell observes in its turn puts on
    #: a UE's service lost against every station on the air (0: none; the reference's
    #: `run.imitate.floor`); see mobrl.envs.cell_turns
    gain_floor: float = 0.0
    #: layouts with `power:`: λ, the objective's weight of energy against service (null: the
    #: layout's `power.weight`); see docs/energy.md
    energy_weight: Optional[float] = None


@dataclass
class AlgoConf:
    """An RLlib algorithm and the settings handed to its `AlgorithmConfig.training(...)`."""

    name: str = MISSING
    #: keyword arguments of `AlgorithmConfig.training` (lr, gamma, ...)
    training: dict[str, Any] = field(default_factory=dict)
    #: RLModule model config (fcnet_hiddens, fcnet_activation, ...)
    model: dict[str, Any] = field(default_factory=dict)
    #: algo=mappo's team critic (team: most agents it sees per step, hiddens: its encoder)
    critic: dict[str, Any] = field(default_factory=dict)


@dataclass
class TuneConf:
    """Tune search settings (one trial by default)."""

    name: str = "none"
    #: trials to sample from the search space (each grid value is tried num_samples times)
    num_samples: int = 1
    #: result key to rank trials by (a column of progress.csv), and max or min
    metric: str = "env_runners/episode_return_mean"
    mode: str = "max"
    #: a trial's score: `all` (its best value over all iterations) or `last` (its final value,
    #: e.g. time_total_s of trials that stop when they reach run.stop.return_mean)
    scope: str = "all"
    #: search space over algorithm keys: {training: {lr: {grid: [1e-4, 1e-3]}}, model: {...}}
    #: with types choice, grid, uniform, loguniform, randint, quniform
    param_space: dict[str, Any] = field(default_factory=dict)
    #: `random` (Tune's random and grid search) or `optuna` (Tune's OptunaSearch)
    searcher: str = "random"
    #: `fifo` (run every trial to the end), `asha` (stop bad trials early) or `pbt`
    scheduler: str = "fifo"
    #: keyword arguments of the scheduler (e.g. grace_period, reduction_factor for asha;
    #: perturbation_interval for pbt)
    scheduler_args: dict[str, Any] = field(default_factory=dict)
    #: trials at once (null: as many as the Ray cluster's CPUs fit)
    max_concurrent: Optional[int] = None


@dataclass
class WithinConf:
    """The budget in which a preset reaches its expectation (either or both)."""

    #: env steps sampled (`num_env_steps_sampled_lifetime`)
    env_steps: Optional[int] = None
    #: seconds of training as measured on 2 shared cores: `time_total_s` plus the imitation
    #: before RL (`imitation/time_s`); `source` says when a measurement counted from the command
    seconds: Optional[float] = None


@dataclass
class ExpectConf:
    """What a preset reaches, under which budget, and where that was measured: a run of
    `command` reaches `metric` >= `value` (with `vs`: the paired difference `metric - vs` on
    the same seeds >= `value`; with `closed`: that share of the greedy -> reference gap in
    mean UE utility closed too) within `within`."""

    #: what is measured: an evaluation metric of `run.eval.metric` (`utility`, `connected`,
    #: `p5`, `jain`, `return`) or the training return (`env_runners/episode_return_mean`: the
    #: mean of the last 20 episodes, exploring actions)
    metric: str = MISSING
    #: the level reached (at least); null: no level measured yet (`source` says why)
    value: Optional[float] = None
    #: a baseline compared with on paired seeds (e.g. `greedy`): `value` bounds the difference
    vs: Optional[str] = None
    #: the share of the greedy -> reference gap in mean UE utility closed (at least), as
    #: `evaluation/closed` and `mobrl evaluate`'s gap closed measure it
    closed: Optional[float] = None
    within: WithinConf = field(default_factory=WithinConf)
    #: the command that reaches it
    command: str = MISSING
    #: where the numbers were measured (e.g. `mobrl evaluate` on 100 held-out seeds,
    #: evaluation during training, the training return) and the measured values
    source: str = MISSING


@dataclass
class PresetConf:
    """The tuned hyperparameters applied for this (algorithm, scenario, env mode), if any.

    Presets live in `conf/preset/<algo>/<scenario>/<env>.yaml` (Gymnasium tasks:
    `conf/preset/<algo>/<scenario>.yaml`; mobile-env layouts without their own file, such as
    users' layouts: `conf/preset/<algo>/any_layout/<env>.yaml`). They set keys of `algo`
    and `run`, which any override still changes."""

    #: the preset file applied; null: the algorithm's own defaults (`algo/<name>.yaml`)
    name: Optional[str] = None
    #: the command whose search found these values (re-run it to search again)
    found_by: Optional[str] = None
    #: what was measured with them, or how they were derived
    notes: Optional[str] = None
    #: what the preset reaches and within which budget (docs/presets.md lists them)
    expect: Optional[ExpectConf] = None


@dataclass
class RayConf:
    #: null starts a local Ray sized to the run; `auto` or `ray://host:port` joins a cluster
    address: Optional[str] = None
    #: CPUs of the local Ray (null: all CPUs of this machine)
    num_cpus: Optional[int] = None
    object_store_memory: Optional[int] = None
    #: stream worker logs to the terminal (useful for debugging an env)
    log_to_driver: bool = False
    #: what Ray, Tune and RLlib print themselves: `error` (mobrl reports what matters in
    #: its own lines), `warning` or `info` to see more
    log_level: str = "error"


@dataclass
class LoggerConf:
    """An experiment tracker that gets every trial's config and results besides TensorBoard
    and progress.csv (mobrl.training.trackers; the packages: `pip install "mobrl[trackers]"`)."""

    #: `none`, `mlflow` (Tune's MLflowLoggerCallback) or `wandb` (Tune's WandbLoggerCallback)
    name: str = "none"
    #: mlflow: where runs go; null: a SQLite store in the run dir (<run dir>/mlflow/mlflow.db);
    #: `file:DIR` for MLflow's file store, `http://HOST:5000` for a tracking server
    tracking_uri: Optional[str] = None
    #: mlflow: the experiment the trials' runs join (created when missing); null:
    #: <scenario>_<algo>
    experiment_name: Optional[str] = None
    #: wandb: the project (null: mobrl)
    project: Optional[str] = None
    #: wandb: the team or user the runs belong to (null: the logged-in user's default)
    entity: Optional[str] = None
    #: wandb: `auto` (online when logged in: WANDB_API_KEY or `wandb login`; else offline),
    #: `online` or `offline`
    mode: str = "auto"


@dataclass
class MobrlConfig:
    scenario: ScenarioConf = field(default_factory=ScenarioConf)
    env: EnvConf = field(default_factory=EnvConf)
    algo: AlgoConf = field(default_factory=AlgoConf)
    run: RunConf = field(default_factory=RunConf)
    tune: TuneConf = field(default_factory=TuneConf)
    preset: PresetConf = field(default_factory=PresetConf)
    ray: RayConf = field(default_factory=RayConf)
    logger: LoggerConf = field(default_factory=LoggerConf)
    #: mobile-env step implementation: `fast` (mobrl's array engine, same trajectories) or
    #: `stock` (mobile-env's own)
    engine: str = "fast"


GROUPS = ("scenario", "env", "algo", "run", "tune", "preset", "logger")
#: presets of mobile-env layouts that have no file of their own: <algo>/ANY_LAYOUT/<env>
ANY_LAYOUT = "any_layout"
#: algorithms without presets of their own that read another's (MAPPO is PPO with a team
#: critic: PPO's hyperparameters mean the same, and `preset=ppo/...` applies to it)
BORROWED_PRESETS = {"mappo": "ppo"}


#: the layouts (name -> file) the ConfigStore last registered: a composition whose layouts are
#: the same (the same working directory's ./scenarios/) registers nothing again
_REGISTERED: dict[str, Any] = {}


def register_schema() -> None:
    """Register the schema with Hydra's ConfigStore so `conf/config.yaml` can extend it, and
    every layout file (built-in and ./scenarios/*.yaml) as an option of the scenario group.
    Once per process for the same layouts: the store outlives Hydra's global state, and a
    registration costs about as much as the composition it serves."""
    from pathlib import Path

    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from mobrl import scenarios

    layouts = scenarios.discover()
    cs = ConfigStore.instance()
    if _REGISTERED.get("layouts") == layouts and _REGISTERED.get("store") is cs:
        return
    if not OmegaConf.has_resolver("mobrl_stem"):
        # a layout scenario is named after its file, also when scenario.path points elsewhere
        OmegaConf.register_new_resolver("mobrl_stem", lambda path: Path(str(path)).stem)
    cs.store(name="mobrl_schema", node=MobrlConfig)
    for name, path in layouts.items():
        node = {
            "name": "${mobrl_stem:${.path}}",
            "kind": "mobile",
            "id": name,
            "path": str(path),
            "kwargs": {},
        }
        cs.store(group="scenario", name=name, node=node)
    _register_preset_aliases(cs, set(layouts))
    _REGISTERED.update(layouts=layouts, store=cs)


def _register_preset_aliases(cs: Any, layouts: set[str]) -> None:
    """Make `preset: <algo>/<scenario>/<env>` (the root config's choice) find a file for every
    combination that has one to use: a Gymnasium task's preset serves every env mode, a
    layout without its own preset uses the algorithm's `any_layout` preset, and an algorithm
    of `BORROWED_PRESETS` uses its lender's."""
    from importlib import resources

    root = resources.files("mobrl.conf").joinpath("preset")
    conf = resources.files("mobrl.conf")
    tasks = [p.name[:-5] for p in conf.joinpath("scenario").iterdir() if p.name.endswith(".yaml")]
    modes = [p.name[:-5] for p in conf.joinpath("env").iterdir() if p.name.endswith(".yaml")]
    owners = [(d.name, d) for d in root.iterdir() if d.is_dir()]
    owners += [
        (algo, root.joinpath(lender))
        for algo, lender in BORROWED_PRESETS.items()
        if not root.joinpath(algo).is_dir()
    ]
    for algo, algo_dir in owners:
        for scenario in sorted(layouts | set(tasks)):
            for mode in modes:
                if algo_dir.joinpath(scenario, f"{mode}.yaml").is_file():
                    if algo_dir.name != algo:  # a lender's file
                        _alias(cs, algo, scenario, mode, f"{algo_dir.name}/{scenario}/{mode}")
                    continue
                if algo_dir.joinpath(f"{scenario}.yaml").is_file():
                    target = f"{algo_dir.name}/{scenario}"
                elif (
                    scenario in layouts and algo_dir.joinpath(ANY_LAYOUT, f"{mode}.yaml").is_file()
                ):
                    target = f"{algo_dir.name}/{ANY_LAYOUT}/{mode}"
                else:
                    continue
                _alias(cs, algo, scenario, mode, target)


def _alias(cs: Any, algo: str, scenario: str, mode: str, target: str) -> None:
    """`preset: <algo>/<scenario>/<mode>` applies the preset file `target`."""
    cs.store(
        group=f"preset/{algo}/{scenario}",
        name=mode,
        node={"defaults": [f"/preset/{target}"]},
        package="_global_",
    )
