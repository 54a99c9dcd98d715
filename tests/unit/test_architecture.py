"""The package's structure holds: the layering contracts in pyproject.toml (import-linter),
no import circle between modules (imports inside functions count too) and a short top level."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_layering_contracts_hold() -> None:
    from importlinter.cli import lint_imports

    cwd = os.getcwd()
    os.chdir(REPO)  # lint-imports reads pyproject.toml from here
    try:
        assert lint_imports(no_cache=True, no_logo=True) == 0  # the broken ones are printed
    finally:
        os.chdir(cwd)


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_through_others() -> None:
    import grimp

    graph = grimp.build_graph("mobrl", include_external_packages=False)
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _circles(edges) == []


def test_a_circle_is_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]


def test_moved_modules_still_unpickle_under_their_old_paths() -> None:
    """Tune's state and RLlib checkpoints of earlier runs name mobrl's callbacks by their old
    module paths; `--resume` and restores must still find them."""
    import pickle

    from mobrl.core.faults import TrialExit
    from mobrl.core.moved import MOVED
    from mobrl.envs.callbacks import EpisodeMetricsCallback
    from mobrl.network.engine import FastEngine
    from mobrl.network.mobility.gauss_markov import GaussMarkovMobility
    from mobrl.scenarios.kinds.mobile import MobileSpec
    from mobrl.training.diskspace import DiskGuard
    from mobrl.training.periodic_eval import PeriodicEvaluation
    from mobrl.training.progress import ProgressCallback

    for old, cls in (
        ("mobrl.progress", ProgressCallback),
        ("mobrl.diskspace", DiskGuard),
        ("mobrl.training_eval", PeriodicEvaluation),
        ("mobrl.callbacks", EpisodeMetricsCallback),
        ("mobrl.faults", TrialExit),
        ("mobrl.kinds.mobile", MobileSpec),
        ("mobrl.envs.engine", FastEngine),
        ("mobrl.envs.mobility.gauss_markov", GaussMarkovMobility),
    ):
        assert MOVED[old] == cls.__module__
        assert pickle.loads(f"c{old}\n{cls.__name__}\n.".encode()) is cls  # GLOBAL opcode


def test_the_top_level_is_a_short_list_of_floors() -> None:
    """`mobrl/` holds the package's entry points and its floors, nothing loose."""
    entries = sorted(p.name for p in (REPO / "mobrl").iterdir() if p.name != "__pycache__")
    assert entries == [
        "__init__.py", "__main__.py", "api.py", "cli", "config", "core", "energy", "envs",
        "evaluation", "external", "network", "radio", "rendering", "reporting", "scenarios",
        "serve", "traffic", "training",
    ]  # fmt: skip
