"""Where `oracle_horizon` (or `oracle_mpc`) moves otherwise than `oracle`'s step, by kind.

The reference plays episodes of a layout (episode seeds 0..N-1) on mobrl's fast engine; each
step its move is compared with `oracle`'s step from the same state (its first candidate), and
a move that differs is counted by kind: one UE that joins a station where `oracle`'s step
keeps its links, leaves one early, keeps a link `oracle` drops, or toggles another station
than `oracle`'s; or a move of several UEs (the plan it carries on, greedy's step, no change).
What it adds over a per-step search is what the counts show. Usage:

    python scripts/horizon_moves.py [--layout uma19] [--episodes 4] [--reference oracle_horizon]
"""

from __future__ import annotations

import argparse
import collections
from typing import Any

import numpy as np


def _kind(conn: np.ndarray, ue: int, oracle: int, chosen: int) -> str:
    def what(action: int) -> str:
        if action == 0:
            return "keeps its links"
        return "leaves a station" if conn[action - 1, ue] else "joins a station"

    return f"one UE {what(chosen)} (oracle's step: it {what(oracle)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layout", default="uma19")
    parser.add_argument("--episodes", type=int, default=4)
    parser.add_argument("--reference", default="oracle_horizon")
    args = parser.parse_args()

    from mobrl.evaluation.policies import BASELINES
    from mobrl.network.service import link_state
    from mobrl.scenarios.kinds.mobile import make_mobile_core

    class Traced(BASELINES[args.reference]):  # type: ignore[misc, valid-type]
        def _candidates(self, core: Any) -> list[np.ndarray]:
            out = super()._candidates(core)
            self.oracle, self.conn = out[0], link_state(core).conn.copy()
            return out

    counts: collections.Counter[str] = collections.Counter()
    for seed in range(args.episodes):
        core = make_mobile_core(args.layout, "ma", kwargs={"seed": seed})  # as evaluations seed
        core.reset()
        policy = Traced()
        policy.reset(seed)
        done = False
        while not done:
            move = policy.station_actions(core)
            counts["steps"] += 1
            differ = np.flatnonzero(move != policy.oracle)
            if differ.size == 0:
                counts["as oracle's step"] += 1
            elif differ.size > 1:
                counts["several UEs (its plan, greedy's step or no change)"] += 1
            else:
                ue = int(differ[0])
                counts[_kind(policy.conn, ue, int(policy.oracle[ue]), int(move[ue]))] += 1
            _, done = core.step_stations(move)
    print(f"{args.reference} on {args.layout}, episode seeds 0-{args.episodes - 1}:")
    for kind, n in counts.most_common():
        print(f"{n:7d}  {kind}")


if __name__ == "__main__":
    main()
