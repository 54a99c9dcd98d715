"""mobrl render vs plain per-frame `env.render()` of stock mobile-env, measured in one run.

Both record the same episode (same scenario, seed and greedy actions) to MP4 at the same frame
size. The reference steps stock mobile-env with render_mode="rgb_array" and writes every
`env.render()` frame, as a Gymnasium user would; mobrl records the rollout on its fast engine
and draws the dashboard on one reused figure (in --workers processes). Usage:

    python scripts/bench.py render [--scenario small] [--steps 100] [--workers 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks.report import Report


def reference(scenario: str, steps: int, out: Path) -> float:
    """Seconds for stock mobile-env: step, env.render() per frame, encode."""
    import imageio.v2 as imageio

    from mobrl.evaluation.policies import GreedyPolicy
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    start = time.perf_counter()
    env = make_mobile_core(scenario, "central", "stock", {"seed": 0}, "rgb_array")
    greedy = GreedyPolicy()
    greedy.reset(0)
    env.reset()
    with imageio.get_writer(out, fps=10, codec="libx264", macro_block_size=2) as writer:
        for _ in range(steps):
            env.step(greedy.act(None, env))
            writer.append_data(env.render())
    return time.perf_counter() - start


def mobrl_render(scenario: str, steps: int, out: Path, workers: int) -> float:
    """Seconds for mobrl's render of the same episode (env=central, greedy, seed 0)."""
    from mobrl.rendering.video import RenderOptions, render_command

    start = time.perf_counter()
    opts = RenderOptions(seed=0, fps=10, max_steps=steps, workers=workers)
    render_command(None, "greedy", out, [f"scenario={scenario}", "env=central"], opts)
    return time.perf_counter() - start


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="small")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--workers", type=int, default=1)


def run(args: argparse.Namespace, report: Report) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        # warm imports once so neither side pays them
        mobrl_render(args.scenario, 2, Path(tmp) / "warm.mp4", 1)
        ours = mobrl_render(args.scenario, args.steps, Path(tmp) / "mobrl.mp4", args.workers)
        ref = reference(args.scenario, args.steps, Path(tmp) / "stock.mp4")
    report.table(
        f"{args.scenario}, {args.steps} steps to MP4 (seconds)",
        ["scenario", "steps", "workers", "mobrl render s", "stock env.render() s", "stock / mobrl"],
        [[args.scenario, args.steps, args.workers, ours, ref, ref / ours]],
        formats={
            "mobrl render s": ".1f",
            "stock env.render() s": ".1f",
            "stock / mobrl": "{:.1f}x",
        },
    )
    report.line(
        f"{args.scenario}, {args.steps} steps to MP4: mobrl render {ours:.1f} s, "
        f"stock env.render() per frame {ref:.1f} s, ratio {ref / ours:.1f}x"
    )
