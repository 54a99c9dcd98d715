"""Metric keys: the names of results in Tune, progress.csv and TensorBoard, defined once."""

from dataclasses import dataclass
from typing import Any

#: the training return: mean return of the last `RETURN_WINDOW` episodes sampled, across
#: iterations (RLlib's own value under this key averages only the episodes that ended in the
#: iteration; `training.return_window` replaces it)
RETURN_MEAN = "env_runners/episode_return_mean"
#: ... over at most this many of the last episodes (RLlib's metrics_num_episodes_for_smoothing)
RETURN_WINDOW = 20
#: how many episodes `RETURN_MEAN` averages (fewer than `RETURN_WINDOW` early in a run; a
#: trial restored from a checkpoint carries on the window it saved)
RETURN_EPISODES = "env_runners/episode_return_episodes"
#: each finished episode's return, as env runners log it (an item series under
#: `env_runners/`; `training.return_window` folds it into `RETURN_MEAN` and drops it)
EPISODE_RETURNS = "mobrl_episode_returns"
#: episodes finished since training started
EPISODES_LIFETIME = "env_runners/num_episodes_lifetime"


EPISODE_LEN_MEAN = "env_runners/episode_len_mean"
#: per-agent mean return: f"{AGENT_RETURN_MEAN}/{agent_id}"
AGENT_RETURN_MEAN = "env_runners/agent_episode_returns_mean"
ENV_STEPS = "num_env_steps_sampled_lifetime"
#: env runners of the trial that failed so far (their env raised, or their process died), and
#: those restarted after a failure (`run.fault.restart_env_runners`; mobrl.training.envwatch)
ENV_RUNNER_FAILURES = "env_runner_failures"
ENV_RUNNER_RESTARTS = "env_runner_restarts"
ITERATION = "training_iteration"
#: Tune's count of iterations since the trial was (re)started, and RLlib's env steps of the
#: iteration alone
RESTORED_ITERATIONS = "iterations_since_restore"
ITERATION_ENV_STEPS = "env_runners/num_env_steps_sampled"
TIME_TOTAL = "time_total_s"

# --- evaluation during training (mobrl.training.periodic_eval, `run.eval.*`) ---------------------------
#: result section of the periodic deterministic evaluation on fixed seeds
EVALUATION = "evaluation"
#: mean return of the evaluation episodes (the section also holds `return_ci95`, the UE
#: metrics, `gap/...`, `beats/...` and the `iteration` of the latest evaluation)
EVAL_RETURN_MEAN = "evaluation/return_mean"
#: mean of `run.eval.metric` over the evaluation episodes: what ranks trials and checkpoints
#: when evaluation runs during training
EVAL_SCORE = "evaluation/score"
#: the multiple of `run.eval.every_env_steps` an evaluation stands for: it ran at the first
#: iteration past it (nan on the other results, evaluated for another reason or not at all)
EVAL_AT_ENV_STEPS = "evaluation/at_env_steps"


def eval_gap(baseline: str, stat: str) -> str:
    """Paired return difference (policy - `baseline`, same seeds): `mean`, `ci95`, `ci_low`."""
    return f"{EVALUATION}/gap/{baseline}/{stat}"


def eval_beats(baseline: str) -> str:
    """1 when the latest evaluation's paired-gap CI to `baseline` lies above 0, else 0."""
    return f"{EVALUATION}/beats/{baseline}"


#: share of the greedy -> reference gap in mean UE utility closed at the latest evaluation
#: (when `run.eval.baselines` holds greedy and a reference, e.g. [greedy,oracle2])
EVAL_CLOSED = "evaluation/closed"
#: wall time spent in evaluation during training so far (not in time_total_s)
EVAL_TIME_TOTAL = "evaluation/time_total_s"
#: wall time of imitating a reference before RL (`run.imitate`; not in time_total_s)
IMITATION_TIME = "imitation/time_s"
#: how often the imitated policy's own moves agreed with the expert's in DAgger's last round
#: (all moves, and the expert's toggles; the mean over the imitated modules)
IMITATION_AGREES = "imitation/agrees"
IMITATION_AGREES_TOGGLES = "imitation/agrees_toggles"


def result_value(result: dict, key: str) -> object:
    """A result's value of `key`: flat (`"a/b"` as Tune's files name it) or nested
    (`result["a"]["b"]`, as RLlib returns it); None when absent."""
    if key in result:
        return result[key]
    node: object = result
    for part in key.split("/"):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


#: Tune's TensorBoard logger writes every result key under this prefix
TENSORBOARD_PREFIX = "ray/tune/"


def tensorboard_tag(key: str) -> str:
    """The TensorBoard tag under which Tune logs result `key`."""
    return TENSORBOARD_PREFIX + key


# --- coordination quality of mobile-env episodes (logged by mobrl.envs.callbacks) ---------------


@dataclass(frozen=True)
class Metric:
    """A measure of whole episodes: its key (the tag under `env_runners/` in Tune's results,
    progress.csv and TensorBoard; the column of `mobrl evaluate`), its label in tables, and
    whether `mobrl evaluate` reports it for every episode (`per_episode`)."""

    key: str
    label: str
    per_episode: bool = False
    #: the measure in words where there is room (figure titles and axes, report headings);
    #: `label` when empty
    words: str = ""
    #: the unit a reader sees, and the factor from the logged value to it
    unit: str = ""
    scale: float = 1.0


# Across UEs: distribution of the UEs' episode-mean utility (scaled utility, -1..1)
UTILITY_MEAN = "ue/utility/mean"
UTILITY_MIN = "ue/utility/min"
UTILITY_P5 = "ue/utility/p5"
UTILITY_MAX = "ue/utility/max"
RATE_MEAN = "ue/rate/mean"
HANDOVERS_MEAN = "ue/conn_changes/mean"
# Jain's fairness index over UEs (utilities mapped to 0..1 first)
JAIN_UTILITY = "fairness/jain_utility"
JAIN_RATE = "fairness/jain_rate"
# Network, averaged over steps
NET_UTILITY = "network/utility"
NET_CONNECTED = "network/connected_fraction"
NET_CONNECTIONS_PER_BS = "network/connections_per_bs"
NET_BS_BUSY = "network/bs_busy_fraction"

#: mobile-env's scaled utility: a log of the data rate mapped to -1..1 (-1: unconnected)
UTILITY_UNIT = "scaled, −1…1"
#: mobile-env's data rate is a link's bandwidth in Hz times log2(1 + SNR), so bit/s (its
#: dashboard labels the same numbers MB/s); reports show Mbit/s
RATE_UNIT, RATE_SCALE = "Mbit/s", 1e-6
#: every aggregate (not per-UE) measure of a mobile-env episode, in the order tables list them
NETWORK_METRICS = (
    Metric(UTILITY_MEAN, "UE utility", True, "mean UE utility", UTILITY_UNIT),
    Metric(UTILITY_MIN, "min UE utility", False, "lowest UE utility", UTILITY_UNIT),
    Metric(UTILITY_P5, "p5 UE utility", True, "5th-percentile UE utility", UTILITY_UNIT),
    Metric(UTILITY_MAX, "max UE utility", False, "highest UE utility", UTILITY_UNIT),
    Metric(RATE_MEAN, "UE rate", False, "mean UE data rate", RATE_UNIT, RATE_SCALE),
    Metric(HANDOVERS_MEAN, "handovers per UE", False, "connection changes per UE", "per episode"),
    Metric(JAIN_UTILITY, "Jain (utility)", True, "Jain fairness of UE utility", "1/n…1"),
    Metric(JAIN_RATE, "Jain (rate)", False, "Jain fairness of UE data rate", "1/n…1"),
    Metric(NET_UTILITY, "network utility", False, "mean utility of active UEs", UTILITY_UNIT),
    Metric(NET_CONNECTED, "connected", True, "connected UEs", "fraction, 0…1"),
    Metric(NET_CONNECTIONS_PER_BS, "connections per station", False, "connections per station"),
    Metric(NET_BS_BUSY, "busy stations", False, "busy base stations", "fraction, 0…1"),
)
#: a layout with `power:` or `traffic:` (mobrl.network.power_engine): the network's mean power per
#: step (the power model's unit), its energy in the episode (unit x s), energy per Mbit served,
#: the share of station-steps asleep, each state's share (`state_share`), and the share of the
#: offered bits served (finite demand)
NET_POWER = "network/power"
NET_ENERGY = "network/energy"
NET_ENERGY_PER_BIT = "network/energy_per_bit"
NET_ASLEEP = "network/asleep_fraction"
NET_DEMAND_SERVED = "network/demand_served"
#: the mean over steps of the objective service − λ·energy (`power.weight`; docs/energy.md)
NET_OBJECTIVE = "network/objective"
#: each state's key starts so
STATE_SHARE = "network/state/"


def state_share(state: str) -> str:
    """The key of the share of station-steps spent in power state `state`."""
    return f"{STATE_SHARE}{state}"


ENERGY_METRICS = (
    Metric(NET_POWER, "power", True, "mean network power", "power model's unit"),
    Metric(NET_ENERGY, "energy", True, "network energy per episode", "unit x s"),
    Metric(NET_ENERGY_PER_BIT, "energy per Mbit", True, "network energy per Mbit served"),
    Metric(NET_ASLEEP, "asleep", True, "station-steps asleep", "fraction, 0…1"),
    Metric(NET_DEMAND_SERVED, "demand served", True, "offered bits served", "fraction, 0…1"),
    Metric(NET_OBJECTIVE, "objective", True, "service − λ·energy per step", "−3…1"),
)
#: the energy measures, in the order the tables of service and energy apart show them
ENERGY_KEYS = (NET_POWER, NET_ENERGY, NET_ENERGY_PER_BIT, NET_ASLEEP, NET_OBJECTIVE)
#: the energy measures where lower is better
LOWER_BETTER = (NET_POWER, NET_ENERGY, NET_ENERGY_PER_BIT)

#: their keys
NETWORK_TAGS = tuple(m.key for m in NETWORK_METRICS)
#: what `mobrl evaluate`, the generalisation matrix and zoo records report per episode,
#: besides the return
EPISODE_METRICS = (UTILITY_MEAN, NET_CONNECTED, UTILITY_P5, JAIN_UTILITY)
assert set(EPISODE_METRICS) == {m.key for m in NETWORK_METRICS if m.per_episode}

#: the other result keys reports name: returns, and the x axes of learning curves
RESULT_METRICS = (
    Metric(
        RETURN_MEAN, "training return", False, f"training return (last {RETURN_WINDOW} episodes)"
    ),
    Metric(RETURN_EPISODES, "episodes averaged", False, "episodes in the training return"),
    Metric(EVAL_RETURN_MEAN, "evaluation return", False, "evaluation return"),
    Metric(EVAL_SCORE, "evaluation score", False, "evaluation score (run.eval.metric)"),
    Metric("return", "return", False, "episode return"),
    Metric(EPISODE_LEN_MEAN, "episode length", False, "episode length", "steps"),
    Metric(EPISODES_LIFETIME, "episodes", False, "training episodes"),
    Metric(ENV_STEPS, "env steps"),
    Metric(TIME_TOTAL, "wall time", False, "wall time", "min", 1 / 60),
    Metric(ITERATION, "iterations", False, "training iterations"),
)
_BY_KEY = {m.key: m for m in NETWORK_METRICS + ENERGY_METRICS + RESULT_METRICS}
_LABELS = {m.key: m.label for m in NETWORK_METRICS + ENERGY_METRICS}

#: `run.eval.metric` choices: the column of an evaluation episode each names (all: higher is
#: better). `utility`, mobile-env's central reward, is the default for mobile-env scenarios
EVAL_METRICS = {
    "utility": UTILITY_MEAN,
    "connected": NET_CONNECTED,
    "p5": UTILITY_P5,
    "jain": JAIN_UTILITY,
    "return": "return",
    # layouts with power: service − λ·energy (docs/energy.md)
    "objective": NET_OBJECTIVE,
}


def label(key: str) -> str:
    """The label of a metric in tables (the key itself for keys without one)."""
    return _LABELS.get(key, key)


#: result sections (key prefixes) and where a measure under each comes from, in words
SOURCES = {"env_runners/": "training episodes", f"{EVALUATION}/": "evaluation during training"}


def find(key: str) -> tuple[Metric | None, str]:
    """The `Metric` a result key measures (None: not one mobrl names) and where it comes from:
    a `SOURCES` value for a known measure under a section (`env_runners/ue/utility/mean`),
    else ''."""
    if key in _BY_KEY:
        return _BY_KEY[key], ""
    for prefix, source in SOURCES.items():
        if key.startswith(prefix) and key[len(prefix) :] in _BY_KEY:
            return _BY_KEY[key[len(prefix) :]], source
    return None, ""


def words(key: str) -> str:
    """A result key in words (`ue/rate/mean`: 'mean UE data rate'); a key mobrl does not name
    is spelled out from its parts, never shown as it is written."""
    found, _ = find(key)
    if found is not None:
        return found.words or found.label
    parts = [p for p in key.split("/") if p and f"{p}/" not in SOURCES]
    return " ".join(p.replace("_", " ") for p in parts) or key


def title(key: str) -> str:
    """The measure in words with where it comes from ('mean UE utility, evaluation during
    training'), for headings and figure titles."""
    found, source = find(key)
    if found is None:
        source = next((s for p, s in SOURCES.items() if key.startswith(p)), "")
    return f"{words(key)}, {source}" if source else words(key)


def unit(key: str) -> str:
    """The unit a report shows `key` in ('' when it has none)."""
    found, _ = find(key)
    return found.unit if found is not None else ""


def scale(key: str) -> float:
    """The factor from `key`'s logged values to its `unit` (1e-6 for data rates: Mbit/s)."""
    found, _ = find(key)
    return found.scale if found is not None else 1.0


def axis_label(key: str) -> str:
    """`key` in words with its unit, for a figure axis: 'mean UE data rate (Mbit/s)'."""
    return f"{words(key)} ({unit(key)})" if unit(key) else words(key)


# Per UE (tag: ue/<id>/<name>), episode means over the steps the UE is active
UE_UTILITY = "utility"
UE_RATE = "rate"
UE_SNR = "snr_db"
UE_CONNECTIONS = "connections"
UE_CONNECTED = "connected_fraction"
UE_CHANGES = "conn_changes"


def ue_tag(ue_id: object, name: str) -> str:
    """Tag of a per-UE metric, e.g. ue_tag(3, UE_UTILITY) == 'ue/3/utility'."""
    return f"ue/{ue_id}/{name}"


def result_key(tag: str) -> str:
    """Where an env-runner metric lands in Tune's results (and progress.csv)."""
    return f"env_runners/{tag}"


# --- the two-agent grid arena (logged by mobrl.envs.callbacks.EpisodeMetricsCallback) ------------
#: new cells the explorer reached in an episode
ARENA_NEW_CELLS = "arena/explorer/cells_discovered"
#: times the chaser caught the explorer in an episode
ARENA_COLLISIONS = "arena/chaser/collisions"


#: --x choices: the progress.csv column behind each
X_AXES = {
    "env_steps": ENV_STEPS,
    "time_s": TIME_TOTAL,
    "iterations": ITERATION,
}


def stop_criteria(stop: Any) -> dict[str, float]:
    """The result values that end a trial, from `run.stop`: iterations, env steps, training
    return, seconds, and beating a baseline in the evaluation during training."""
    pairs = {
        ITERATION: stop.iterations,
        ENV_STEPS: stop.env_steps,
        RETURN_MEAN: stop.return_mean,
        TIME_TOTAL: stop.time_s,
    }
    criteria = {key: value for key, value in pairs.items() if value is not None}
    if stop.beat is not None:  # evaluation reports 1 once the gap's CI lies above 0
        criteria[eval_beats(stop.beat)] = 1
    return criteria
