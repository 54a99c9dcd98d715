"""Proportional fair: the shares that maximise the sum over UEs of log(rate), each UE's rate
summed over its links (Kelly's proportional fairness, Kelly 1997).

A proportional-fair scheduler serves, at each slot, the UE with the highest ratio of its
instantaneous rate to its average throughput. Without fast fading, with a UE's throughput
counted over all its stations, these per-station decisions converge to the allocation that
maximises sum log(rate_u) subject to each station's shares summing to one (Kushner &
Whiting 2004; Stolyar 2005). With one link per UE that is equal time shares, the same as
resource-fair; a UE linked to several stations gets less from each, which leaves more for
UEs with one station.

That allocation is the equilibrium of a Fisher market with equal budgets (Eisenberg & Gale
1959): each UE spends a budget of 1 on its links, a station's shares are the bids on it over
their sum (its price), and at the optimum each UE spends only on the links with the highest
rate per price. It minimises the convex Shmyrev (2009) objective
sum_b p_b log p_b - sum_links x log rate over the bids x (p_b: the bids on b).

The solver (`_proportional_fair_solver`, compiled with numba, imported at the first call so
that `import mobrl.radio` stays light) gives the optimum to 1e-12 in Kelly's conditions, and a
network's shares are the same to the bit alone or in a batch of disjoint copies (the
references' batches).
"""

from __future__ import annotations

import numpy as np


class ProportionalFair:
    name = "proportional_fair"
    source = "Kelly (1997): shares maximising sum log(rate) (Eisenberg-Gale equilibrium)"

    def shares(
        self, b: np.ndarray, u: np.ndarray, rate: np.ndarray, n_bs: int, n_ue: int
    ) -> np.ndarray:
        from mobrl.radio.schedulers._proportional_fair_solver import solve

        return solve(
            np.ascontiguousarray(b, dtype=np.int64),
            np.ascontiguousarray(u, dtype=np.int64),
            np.ascontiguousarray(rate, dtype=np.float64),
            int(n_bs),
            int(n_ue),
        )


SCHEDULER = ProportionalFair()
