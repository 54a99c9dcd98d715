"""Imitating a reference policy before RL (`run.imitate`): DAgger on mobrl's fast engine, fit
into the algorithm's own RLModule.

On a mobile-env layout with env=ma and a slot observation (`env.obs=topk` or `topk_gain`):

1. the expert (`run.imitate.expert`, a baseline of `mobrl.evaluation.policies.BASELINES`,
   e.g. `oracle`; with a slot observation it toggles only stations in each UE's slots) plays
   `run.imitate.episodes` training episodes; every active UE's observation is labelled with
   the expert's action for that UE as a slot action (0 keeps the links, j toggles the station
   in slot j);
2. the policy (the RLModule's acting path: its actor encoder and `pi` head) is fit to every
   label so far: cross-entropy on its action logits, Adam, `run.imitate.updates` minibatches
   of 256 (with UEs in turns over several rounds, a row revising an earlier move drawn
   `run.imitate.revisions` times as often), carrying on from its weights;
3. `run.imitate.rounds` times, the policy plays `run.imitate.episodes` episodes
   deterministically while the expert labels each state it reaches (DAgger), and is fit again
   on all labels (the last fit: 3x the updates).

`pretrain` runs it from RLlib's `on_algorithm_init` callback, on the local learner's module
(`run.resources.num_learners=0`), and syncs the weights to the env runners; RL training then
goes on as usual. Episodes use seeds 1,000,000+ (those of `mobrl train`), never evaluation's.
docs/performance.md measures the same loop per layout and observation.

With `run.imitate.workers` > 1 the episodes of each step (the expert's, then each round's)
are played on that many processes (`labelled_episodes`) and the fits stay here: the same
labels, rows and weights as on one process, bit for bit, since every episode has its seed
and the policy plays a copy of the same layers on one torch thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from mobrl.training.imitation_checks import check_imitate  # noqa: F401 (imported from here by others)
from mobrl.training.labels import Labelled, collector

#: episode seeds of imitation (as `mobrl train`'s; evaluation plays 0..N-1)
TRAIN_SEED = 1_000_000
#: minibatch rows of a fit
BATCH = 256


# --- fitting -------------------------------------------------------------------------------


def make_net(n_in: int, n_out: int, hidden: list[int]) -> Any:
    """The zoo's policy network: RLlib's default MLP encoder (tanh) and a linear head."""
    import torch

    layers: list[Any] = []
    for h in hidden:
        layers += [torch.nn.Linear(n_in, h), torch.nn.Tanh()]
        n_in = h
    layers.append(torch.nn.Linear(n_in, n_out))
    return torch.nn.Sequential(*layers)


def fit(
    net: Any,
    x: np.ndarray,
    y: np.ndarray,
    updates: int,
    seed: int = 0,
    weight: np.ndarray | None = None,
) -> float:
    """`updates` Adam steps of cross-entropy on minibatches of 256 drawn from (x, y), rows
    drawn in proportion to `weight` (None: uniformly); `net` maps observations to logits (a
    torch module or callable with `parameters`) and carries on from its weights. The final
    training accuracy (every row alike)."""
    import torch

    torch.manual_seed(seed)
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3)
    xt = torch.as_tensor(x, dtype=torch.float32)
    yt = torch.as_tensor(y, dtype=torch.int64)
    n = len(xt)
    uniform = weight is None or bool(np.all(weight == weight[0]))
    wt = None if uniform else torch.as_tensor(weight, dtype=torch.float64)
    for _ in range(updates):
        idx = torch.randint(n, (BATCH,)) if wt is None else torch.multinomial(wt, BATCH, True)
        loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return float((net(xt).argmax(dim=1) == yt).float().mean())


def as_layers(net: Any) -> list[tuple[str, Any]]:
    """The network as the zoo's layer list (`mobrl.evaluation.zoo.save_layers` writes it)."""
    import torch

    out: list[tuple[str, Any]] = []
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            w = layer.weight.detach().numpy().astype(np.float32)
            b = layer.bias.detach().numpy().astype(np.float32)
            out.append(("linear", (w, b)))
        else:
            out.append(("activation", type(layer).__name__))
    return out


def accuracy(
    pred: np.ndarray,
    y: np.ndarray,
    revised: np.ndarray | None = None,
    ahead: np.ndarray | None = None,
) -> dict:
    """Agreement overall, on the expert's toggles (recall) and on the policy's toggles; with
    `revised` (`Labelled.revised`) given, also on the rows that revise an earlier move; with
    `ahead` (`Labelled.ahead`), on the rows of a planner's moves ahead."""
    import math

    def agree(mask: np.ndarray) -> float:
        return float((pred[mask] == y[mask]).mean()) if mask.any() else math.nan

    tog, mine = y > 0, pred > 0
    out = {"all": agree(np.ones(len(y), bool)), "toggles": agree(tog), "own": agree(mine)}
    out["toggle_share"] = float(tog.mean())
    if revised is not None:
        out.update(revisions=agree(revised), revision_share=float(revised.mean()))
    if ahead is not None:
        out.update(ahead=agree(ahead), ahead_share=float(ahead.mean()))
    return out


class ModuleLogits:
    """An RLlib RLModule's action logits as a torch callable (its acting path, with
    gradients; the value path gets none), with the module's parameters. A module with
    RLlib's default actor-critic layout (`encoder.actor_encoder` and a `pi` head, as PPO's)
    is run on those two alone, not through `forward_train`, which computes the critic's
    encoder too (2.5x the time of a fit); any other module through `forward_train`."""

    def __init__(self, module: Any):
        self.module = module
        encoder = getattr(module, "encoder", None)
        has_pi = getattr(module, "pi", None) is not None
        self.actor = getattr(encoder, "actor_encoder", None) if has_pi else None

    def parameters(self) -> Any:
        return self.module.parameters()

    def __call__(self, x: Any) -> Any:
        from ray.rllib.core.columns import Columns

        if self.actor is not None:
            from ray.rllib.core.models.base import ENCODER_OUT

            return self.module.pi(self.actor({Columns.OBS: x})[ENCODER_OUT])
        return self.module.forward_train({Columns.OBS: x})[Columns.ACTION_DIST_INPUTS]


class GreedyActor:
    """A logits callable (`ModuleLogits`, a torch net) playing its most likely action per
    agent: the `learner` of `Collector.episode`."""

    def __init__(self, logits: Any):
        self.logits = logits

    def reset(self, seed: int | None = None) -> None:
        pass

    def actions(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            out = self.logits(torch.as_tensor(x, dtype=torch.float32))
        return out.argmax(dim=1).numpy()

    def act(self, observation: dict[Any, np.ndarray], env: Any = None) -> dict[Any, int]:
        x = np.stack(list(observation.values()))
        return {a: int(c) for a, c in zip(observation, self.actions(x))}


def plain_copy(logits: Any) -> Any:
    """A copy of a logits callable that another process loads without RLlib: a torch
    `Sequential` as it is, or `ModuleLogits`' actor encoder and `pi` head as one `Sequential`
    of their layers when they are linear layers and activations in a row (RLlib's default
    MLPs; the same operations in the same order, so the same logits bit for bit). None for
    any other network."""
    import copy

    import torch

    if isinstance(logits, torch.nn.Sequential):
        return copy.deepcopy(logits).eval()
    if not isinstance(logits, ModuleLogits) or logits.actor is None:
        return None
    layers = []
    for part in (logits.actor, logits.module.pi):
        for layer in part.modules():
            if next(layer.children(), None) is not None:
                continue  # a container: its layers come next, in their order
            if not isinstance(layer, torch.nn.Linear) and (
                type(layer).__module__ != torch.nn.modules.activation.__name__
            ):
                return None
            layers.append(copy.deepcopy(layer))
    return torch.nn.Sequential(*layers).eval()


#: the collector a labelling process keeps between episodes: (the block's token, it)
_WORKER_COLLECTOR: list[Any] = [None, None]


def _labelled_in_worker(token: str, settings: tuple, seed: int, net: Any) -> Labelled:
    """One labelled episode in a labelling process (`labelled_episodes`): the expert plays
    when `net` is None, else the policy of `net` (a `plain_copy`) on one torch thread. The
    collector of `settings` is made once per block (`token`)."""
    if _WORKER_COLLECTOR[0] != token:
        _WORKER_COLLECTOR[:] = [token, collector(*settings)]
    learner = None
    if net is not None:
        import torch

        torch.set_num_threads(1)
        learner = GreedyActor(net)
    return _WORKER_COLLECTOR[1].episode(seed, learner=learner)


@contextmanager
def labelled_episodes(
    settings: tuple, workers: int = 1
) -> Iterator[Callable[[list[int], Any, Callable[[], None]], list[Labelled]]]:
    """`play(seeds, net, done)`: the labelled episodes of `seeds` in their order, the expert
    playing (`net` None) or the greedy policy of the logits callable `net`, calling `done`
    after each. `settings` are `collector`'s arguments. On `workers` > 1 processes
    (`mobrl.core.workers`, started at the first episode and kept for the block) when the
    policy has a `plain_copy`; otherwise in this process."""
    here = collector(*settings)

    def local(seeds: list[int], net: Any, done: Callable[[], None]) -> list[Labelled]:
        out = []
        for seed in seeds:
            learner = None if net is None else GreedyActor(net)
            out.append(here.episode(seed, learner=learner))
            done()
        return out

    if workers <= 1:
        yield local
        return
    import uuid

    from mobrl.core.workers import process_pool

    token = uuid.uuid4().hex
    with process_pool(workers) as pool:

        def play(seeds: list[int], net: Any, done: Callable[[], None]) -> list[Labelled]:
            copied = None if net is None else plain_copy(net)
            if net is not None and copied is None:
                return local(seeds, net, done)
            futures = [pool.submit(_labelled_in_worker, token, settings, s, copied) for s in seeds]
            out = []
            for future in futures:
                out.append(future.result())
                done()
            return out

        yield play


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread for the block: a fit's minibatches of 256 through a small MLP gain
    nothing from a second thread and, while Ray's processes or another job use the other
    core, run several times slower with two (`scripts/bench.py imitation_fit`)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@one_torch_thread()
def dagger(
    net: Any,
    env_config: dict[str, Any],
    expert: str = "oracle",
    episodes: int = 4,
    rounds: int = 4,
    updates: int = 1500,
    revisions: float = 1.0,
    ahead: float = 1.0,
    horizon: int | None = None,
    weight: float | None = None,
    floor: float | None = None,
    workers: int = 1,
) -> dict[str, Any]:
    """DAgger into `net` (a logits callable with `parameters`, e.g. `ModuleLogits`) on the
    env of `env_config` (a slot observation; played on the fast engine), with torch on one
    thread meanwhile (`one_torch_thread`) and the labelled episodes counted on a progress
    display: what it measured. A row that revises an earlier move of its step (UEs in turns
    with several rounds, `Labelled.revised`) weighs `revisions` in each fit: such rows are a
    few in a thousand of a later round's (docs/zoo.md). A row whose label is a planning
    expert's move ahead of the step's search (`Labelled.ahead`, fewer still) weighs `ahead`;
    `horizon` sets such an expert's steps ahead (`HORIZON`; None: its own), `weight` and `floor`
    the λ and the price of lost service a cell expert plans with (None: the layout's λ, 0).
    `workers` > 1: the episodes are played on that many processes (`labelled_episodes`)."""
    from mobrl.core.console import make_console, progress
    from mobrl.scenarios.kinds.mobile import MobileSpec

    k = int(MobileSpec.of(env_config).topk or 0)  # cell agents have no slots
    settings = (env_config, k, expert, horizon, weight, floor)
    seed = TRAIN_SEED
    with progress(make_console()) as bar, labelled_episodes(settings, workers) as play:
        total = episodes * (rounds + 1)
        task = bar.add_task(f"imitation: {total} episodes labelled by {expert}", total=total)

        def done() -> None:
            bar.advance(task)

        data: list[Labelled] = play(list(range(seed, seed + episodes)), None, done)
        seed += episodes
        history = []
        train_acc = 0.0
        for it in range(rounds + 1):
            n = updates * (3 if it == rounds else 1)
            x, y, _, revised, planned = map(np.concatenate, zip(*data))
            weight = np.where(revised, revisions, 1.0)
            train_acc = fit(net, x, y, n, seed=it, weight=np.where(planned, ahead, weight))
            if it == rounds:
                break
            played = play(list(range(seed, seed + episodes)), net, done)
            seed += episodes
            data += played
            _, labels, acts, revised, planned = map(np.concatenate, zip(*played))
            found = accuracy(acts, labels, revised, planned)
            history.append({"round": it, "train_acc": train_acc, **found})
            bar.console.print(round_line(history[-1], rounds, episodes), highlight=False)
    return {"rows": int(sum(len(d.y) for d in data)), "train_acc": train_acc, "history": history}


def round_line(found: dict[str, Any], rounds: int, episodes: int) -> str:
    """One DAgger round in words: the fit's accuracy on the rows so far, then how often the
    policy's own moves in the round's episodes agreed with the expert's labels."""
    line = (
        f"imitation round {found['round'] + 1} of {rounds}: fit {found['train_acc']:.3f}; "
        f"in its own {episodes} episodes the policy agrees with the expert on "
        f"{found['all']:.3f} of moves, {found['toggles']:.3f} of the expert's toggles"
    )
    if found.get("revision_share"):
        line += f", {found['revisions']:.3f} of revisions"
    if found.get("ahead_share"):
        line += f", {found['ahead']:.3f} of the moves planned ahead"
    return line


def start_targets(module: Any) -> None:
    """A module with target networks (RLlib's `TargetNetworkAPI`: APPO's keeps the policy its
    updates are measured against) gets targets equal to its networks as they are now: the
    imitated policy, not the one it was built with."""
    for main, target in getattr(module, "get_target_network_pairs", list)():
        target.load_state_dict(main.state_dict())


def pretrain(
    *, algorithm: Any, settings: dict[str, Any], env_config: dict[str, Any], **kwargs: Any
) -> None:
    """RLlib `on_algorithm_init` callback: DAgger (`settings`: `run.imitate`) into each RLModule
    of the local learner, then the env runners get the weights."""
    import time

    import torch

    started = time.perf_counter()

    def imitate(learner: Any) -> dict[str, Any]:
        out = {}
        for module_id in list(learner.module.keys()):
            module = learner.module[module_id]
            with torch.enable_grad():
                out[module_id] = dagger(
                    ModuleLogits(module),
                    env_config,
                    settings["expert"],
                    int(settings["episodes"]),
                    int(settings["rounds"]),
                    int(settings["updates"]),
                    revisions=float(settings.get("revisions", 1.0)),
                    ahead=float(settings.get("ahead", 1.0)),
                    horizon=settings.get("horizon"),
                    weight=settings.get("weight"),
                    floor=settings.get("floor"),
                    workers=int(settings.get("workers", 1)),
                )
            start_targets(module)
        return out

    # each learner's results (RLlib's `CallResult`s: `get` gives the value or raises its error)
    found = [called.get() for called in algorithm.learner_group.foreach_learner(imitate)]
    algorithm.env_runner_group.sync_weights(
        from_worker_or_learner_group=algorithm.learner_group, inference_only=True
    )
    if algorithm.eval_env_runner_group is not None:
        algorithm.eval_env_runner_group.sync_weights(
            from_worker_or_learner_group=algorithm.learner_group, inference_only=True
        )
    # what training results report (`imitation_result`): the iterations' time_total_s starts
    # after this, so the time a policy took to reach a level is this plus theirs
    algorithm.imitation = imitation_summary(time.perf_counter() - started, found)


def imitation_summary(seconds: float, learners: list[dict[str, Any]]) -> dict[str, float]:
    """What every training result carries of the imitation (`imitation_result`): its wall
    time and, from each imitated module's last DAgger round (`dagger`'s history, per learner),
    the mean agreement with the expert, which a trial under Tune prints only to its own logs."""
    from mobrl.core import metrics as keys

    found = {keys.IMITATION_TIME: float(seconds)}
    last = [
        fit["history"][-1] for learner in learners for fit in learner.values() if fit["history"]
    ]
    if last:
        found[keys.IMITATION_AGREES] = float(np.mean([r["all"] for r in last]))
        found[keys.IMITATION_AGREES_TOGGLES] = float(np.mean([r["toggles"] for r in last]))
    return found


def imitation_result(*, algorithm: Any, result: dict, **kwargs: Any) -> None:
    """RLlib `on_train_result` callback: every result carries the imitation's summary
    (`imitation_summary`: its wall time, so that result files tell the whole training time,
    and the policy's agreement with its expert; absent on a resumed run, which does not
    imitate again)."""
    for name, value in (getattr(algorithm, "imitation", None) or {}).items():
        section, key = name.split("/")
        result.setdefault(section, {})[key] = value
