"""`energy_oracle`'s search against exhaustive search, on layouts small enough to search
every set of stations on the air: at each step of a few episodes (UEs by greedy, the cells by
the reference's own choices), the value of the set the local search finds and of the best of
all 2^n sets, as `energy_oracle` scores them (its two steps in sequence). Prints the share of
steps where the search finds the optimum and the mean and worst shortfall, per hour.

    python scripts/energy_reference_quality.py [--scenario medium] [--hours 3,12,21]
                                               [--episodes 3] [--mbps 0.5]
"""

from __future__ import annotations

import argparse

import numpy as np

from mobrl import scenarios
from mobrl.evaluation.baselines.energy import ThresholdPolicy, wanted
from mobrl.evaluation.energy_oracle import _exhaustive, _local
from mobrl.network.power_predict import StepPredictor
from mobrl.network.service import greedy_moves, measured_links
from mobrl.scenarios.kinds.mobile import make_mobile_core


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="medium")
    parser.add_argument("--hours", default="3,12,21")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--mbps", type=float, default=0.5)
    args = parser.parse_args()
    base = scenarios.load(scenarios.path_of(args.scenario))
    for hour in (float(h) for h in args.hours.split(",")):
        layout = {
            **base,
            "power": base.get("power")
            or {
                "model": "tr38864",
                "category": 1,
                "config": 1,
                "sleep": ["micro_sleep", "light_sleep", "deep_sleep"],
                "weight": 0.05,
            },  # fmt: skip
            "traffic": {
                "demand": {"model": "constant", "mbps": args.mbps},
                "profile": "diurnal",
                "hour": hour,
            },  # fmt: skip
            "step_seconds": 1.0,
        }
        core = make_mobile_core(layout, "ma", engine="fast")
        n = len(core.stations)
        found, gaps = 0, []
        for seed in range(args.episodes):
            core.reset(seed=seed)
            rule = ThresholdPolicy()
            rule.reset(seed)
            done = False
            while not done:
                cells = core.power_model()
                state, _ = core.cell_states()
                slow = (state > 0) & (cells.wake_steps[state] > 0)
                sleep = cells.deepest_within(1) or 1
                predict = StepPredictor(core)

                def score(on, predict=predict, slow=slow, sleep=sleep):
                    return predict.two_steps(on & ~slow, on, sleep)

                starts = [np.ones(n, bool), wanted(core), rule.cell_states(core) == 0]
                local = _local(max(starts, key=score), score)
                best = _exhaustive(n, score)
                gap = score(best) - score(local)
                gaps.append(gap)
                found += gap <= 1e-9
                core.set_cell_states(np.where(local, 0, np.where(state > 0, state, sleep)))
                _, done = core.step_arrays(greedy_moves(*measured_links(core)))
        print(
            f"{args.scenario} hour {hour:4.1f}: optimum found in {found}/{len(gaps)} steps "
            f"({found / len(gaps):.0%}); shortfall mean {np.mean(gaps):.2e}, worst "
            f"{np.max(gaps):.2e} (objective per two steps)"
        )


if __name__ == "__main__":
    main()
