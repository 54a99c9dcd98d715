"""The fast engine's sparse path for city-scale layouts: each UE's candidate stations from a
cell grid, and a step's SNRs, reach, rates, utilities, rewards and `topk` slots computed only
on those (station, UE) pairs, with the same numbers as the dense (BS, UE) arrays.

A station's SNR falls with distance, so beyond some distance `s` no station reaches any UE
(SNR at or below its threshold) or outdoes a UE's k strongest stations. Stations are put in
square cells of side `s`; a UE's candidates are the stations of its cell and the 8 around it
within `s` of it (integer-truncated positions, as mobile-env measures distance). Every UE is
checked each step: its candidates must hold at least `need` stations stronger than any station
at distance `s` or more could be (`bound`, with a margin); a UE that fails (a map corner) gets
every station as candidate. So the pairs hold every link in range, and each UE's `need`
strongest stations (`topk`'s slots, the best SNR it normalises by).

Pairs are listed UE by UE, each UE's stations in id order, so per-UE sums (`np.bincount` over
UEs) add in station order as the dense path does and are bit-identical; per-station sums
(utility means) add in UE order and may differ from the dense path's pairwise sums in the
last bits. The dense SNR matrix, which `mobile` observations read, is computed in full on
first access in a step (`link_state` takes its capacities from the pairs; the baselines read
the SNRs in range, `SparseState`'s "snr_in_range"). `topk` and greedy on the pairs are in
`mobrl.network.pair_topk`.
`GRID_MIN_PAIRS` picks the path: below it (every built-in layout but `city` and `metro`) the
dense arrays are faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mobrl.network import channel

#: layouts with at least this many (BS, UE) pairs use the sparse path
GRID_MIN_PAIRS = 20_000
#: relative margin between a candidate's SNR and the bound of the stations farther than `s`
_MARGIN = 1e-6


class Pairs:
    """One step's candidate (station, UE) pairs: `b`, `u` (sorted by UE, then station),
    `snr`, `reach` (SNR above the UE's threshold) and `start` (UE j's pairs are
    `start[j]:start[j + 1]`)."""

    def __init__(self, b: np.ndarray, u: np.ndarray, snr: np.ndarray, thr: np.ndarray, n: int):
        self.b, self.u, self.snr = b, u, snr
        self.reach = snr > thr[u]
        self.start = np.concatenate([[0], np.cumsum(np.bincount(u, minlength=n))])
        self.slots: dict[int, np.ndarray] = {}  # topk order by k (valid while links stay)


def _row_kinds(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of `a` holding the same values are one kind: the index of each kind's first row
    and each row's kind, as `np.unique(axis=0, return_index=True, return_inverse=True)` gives
    them but numbered in order of appearance, found by hashing each row's bytes (wide rows,
    e.g. a station's terms towards 4,000 UEs, sort slowly)."""
    kinds: dict[bytes, int] = {}
    first: list[int] = []
    kind = np.empty(len(a), dtype=np.intp)
    for i, row in enumerate(np.ascontiguousarray(a)):
        kind[i] = kinds.setdefault(row.tobytes(), len(kinds))
        if kind[i] == len(first):
            first.append(i)
    return np.array(first, dtype=np.intp), kind


class Grid:
    """Candidate stations of each UE position (see the module doc)."""

    def __init__(self, engine: Any, need: int) -> None:
        e = engine
        self.bx, self.by = e._bx[:, 0], e._by[:, 0]
        self.t1, self.t2, self.tx = e._t1, e._t2, e._tx[:, 0]
        self.noise, self.thr = e._noise[0], e._thr[0]
        self.n_bs, self.n_ue, self.need = len(self.bx), len(self.noise), need
        # path-loss terms by kind of station and of UE (same parameters, same terms)
        rows, self.station_kind = _row_kinds(np.hstack([self.t1, self.t2]))
        cols, self.ue_kind = _row_kinds(np.vstack([self.t1, self.t2]).T)
        self.kind_t1, self.kind_t2 = self.t1[np.ix_(rows, cols)], self.t2[np.ix_(rows, cols)]
        movement = e.movement
        self.side = self._side(float(movement.width), float(movement.height))
        self.bound = self._bound(self.side) * (1 + _MARGIN)
        side = self.side
        self.x0, self.y0 = min(0.0, self.bx.min()), min(0.0, self.by.min())
        self.nx = int((max(float(movement.width), self.bx.max()) - self.x0) // side) + 1
        self.ny = int((max(float(movement.height), self.by.max()) - self.y0) // side) + 1
        cx = ((self.bx - self.x0) // side).astype(int)
        cy = ((self.by - self.y0) // side).astype(int)
        lists = []
        for i in range(self.nx):
            for j in range(self.ny):
                near = (np.abs(cx - i) <= 1) & (np.abs(cy - j) <= 1)
                lists.append(np.flatnonzero(near))
        lens = np.array([len(x) for x in lists])
        # every station last, for UEs whose neighbourhood is too thin
        self.flat = np.concatenate([*lists, np.arange(self.n_bs)])
        self.cell_start = np.concatenate([[0], np.cumsum(lens)])
        self.cell_len = np.append(lens, self.n_bs)

    def _bound(self, dist: float, ues: Any = slice(None)) -> np.ndarray:
        """Per UE (of `ues`), the highest SNR any station can give it from `dist` metres."""
        t1, t2, noise = self.t1[:, ues], self.t2[:, ues], self.noise[None, ues]
        return channel.snr(t1, t2, self.tx[:, None], noise, dist, 0.0).max(axis=0)

    def _side(self, width: float, height: float) -> float:
        """A cell side of at least every reach, within which most places have `need` stations."""
        params = np.vstack([self.t1, self.t2, self.noise, self.thr]).T
        _, kinds = np.unique(params, axis=0, return_index=True)
        thr = self.thr[kinds]
        lo, hi = 0.0, 1.0
        while hi < 1e7 and (self._bound(hi, kinds) * (1 + _MARGIN) > thr).any():
            lo, hi = hi, hi * 2
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (
                (mid, hi) if (self._bound(mid, kinds) * (1 + _MARGIN) > thr).any() else (lo, mid)
            )
        side = hi + 1.0
        if self.need:
            gx, gy = np.meshgrid(np.linspace(0, width, 40), np.linspace(0, height, 40))
            d = np.hypot(self.bx[:, None] - gx.ravel(), self.by[:, None] - gy.ravel())
            kth = np.sort(d, axis=0)[min(self.need, self.n_bs) - 1]
            side = max(side, float(np.percentile(kth, 95)) + 2.0)
        return side

    def pairs(self, x: np.ndarray, y: np.ndarray) -> Pairs:
        """The candidate pairs of UEs at positions (x, y), with their SNRs."""
        tx_, ty_ = np.trunc(x), np.trunc(y)
        cx = ((tx_ - self.x0) // self.side).astype(int)
        cy = ((ty_ - self.y0) // self.side).astype(int)
        inside = (cx >= 0) & (cx < self.nx) & (cy >= 0) & (cy < self.ny)
        cell = np.where(inside, cx * self.ny + cy, len(self.cell_len) - 1)  # off the map: all
        b, u, snr = self._candidates(np.arange(self.n_ue), cell, tx_, ty_, True)
        if not self.need:  # only the pairs in range count
            keep = snr > self.thr[u]
            return Pairs(b[keep], u[keep], snr[keep], self.thr, self.n_ue)
        # pairs weaker than `bound` are neither in range nor among a UE's `need` strongest
        need = min(self.need, self.n_bs)
        strong = snr > self.bound[u]
        count = np.bincount(u[strong], minlength=self.n_ue)
        thin = np.flatnonzero(count < need)
        keep = strong & (count[u] >= need)
        b, u, snr = b[keep], u[keep], snr[keep]
        if thin.size:  # these UEs look at every station, and keep their `need` strongest
            every = np.full(thin.size, len(self.cell_len) - 1)
            tb, tu, tsnr = self._candidates(thin, every, tx_[thin], ty_[thin], False)
            grid = tsnr.reshape(thin.size, self.n_bs)
            kth = -np.partition(-grid, need - 1, axis=1)[:, need - 1]
            top = (grid >= kth[:, None]).ravel()
            b, u, snr = (np.concatenate([a, t[top]]) for a, t in zip((b, u, snr), (tb, tu, tsnr)))
            order = np.argsort(u, kind="stable")
            b, u, snr = b[order], u[order], snr[order]
        return Pairs(b, u, snr, self.thr, self.n_ue)

    def _candidates(
        self, ues: np.ndarray, cell: np.ndarray, tx_: np.ndarray, ty_: np.ndarray, near: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(station, UE, SNR) of the stations listed for `cell` of each of `ues` (at truncated
        positions tx_, ty_); with `near`, only those within the cell side."""
        lens = self.cell_len[cell]
        at = np.repeat(np.arange(len(ues)), lens)
        first = np.repeat(self.cell_start[cell] - (np.cumsum(lens) - lens), lens)
        b = self.flat[first + np.arange(len(at))]
        dx, dy = self.bx[b] - tx_[at], self.by[b] - ty_[at]
        if near:
            keep = dx * dx + dy * dy <= self.side * self.side
            b, at, dx, dy = b[keep], at[keep], dx[keep], dy[keep]
        u = ues[at]
        sk, uk = self.station_kind[b], self.ue_kind[u]
        t1, t2 = self.kind_t1[sk, uk], self.kind_t2[sk, uk]
        snr = channel.snr(t1, t2, self.tx[b], self.noise[u], dx, dy)
        return b, u, snr


def grid_for(engine: Any, need: int) -> Grid | None:
    """The sparse path's grid for a layout with enough (BS, UE) pairs (None: dense)."""
    n_bs, n_ue = engine._t1.shape
    if n_bs * n_ue < GRID_MIN_PAIRS or n_bs < max(need, 1):
        return None
    return Grid(engine, need)


class SparseState(dict):
    """`FastEngine.topk_state` on the sparse path: "snr" is built on access; `topk` reads
    the engine's pairs instead. "snr_in_range" (the SNRs that decide where a UE can link,
    `mobrl.network.service.link_arrays(in_range=True)`) is the SNR where a UE is in range and 0
    elsewhere, taken from the step's pairs without computing every station-UE pair."""

    def __init__(self, engine: Any, **values: Any) -> None:
        super().__init__(**values)
        self.engine = engine

    def __missing__(self, key: str) -> Any:
        if key == "snr":
            return self.engine._snr
        if key == "snr_in_range":
            return self.engine._snr_in_range()
        raise KeyError(key)


class SparseLinks:
    """Mixin of `FastEngine`: the sparse path's step arithmetic on `_pairs` (set each step when
    the engine has a `_grid`), and the dense SNR matrix built on access."""

    _grid: Grid | None = None
    _pairs: Pairs | None = None

    @property
    def _snr(self) -> np.ndarray:
        snr = self.__dict__.get("_snr_dense")
        if snr is None:
            snr = self._snr_dense = self._mask_off(self._dense_snr())
        return snr

    @_snr.setter
    def _snr(self, value: np.ndarray) -> None:
        self._snr_dense = value

    def _dense_snr(self) -> np.ndarray:
        """SNR of every BS-UE pair at the current positions (OkumuraHata, same operations)."""
        dx = self._bx - np.trunc(self._x)[None, :]
        dy = self._by - np.trunc(self._y)[None, :]
        return channel.snr(self._t1, self._t2, self._tx, self._noise, dx, dy)

    def _snr_in_range(self) -> np.ndarray:
        """(BS, UE) SNR where the UE is in range (the pairs' SNRs, the same operations as the
        dense matrix), 0 elsewhere; the dense matrix itself if it was built this step."""
        dense = self.__dict__.get("_snr_dense")
        if dense is not None:
            return dense
        p = self._pairs
        out = np.zeros(self._t1.shape)
        out[p.b[p.reach], p.u[p.reach]] = p.snr[p.reach]
        return out

    def _sparse_snr(self) -> None:
        p = self._pairs = self._grid.pairs(self._x, self._y)
        self._snr_dense = None
        off = getattr(self, "_off", None)
        if off is not None:  # stations asleep are off the air (mobrl.network.power_engine)
            p.snr_all = p.snr
            if off.any():
                p.snr = np.where(off[p.b], 0.0, p.snr)
                p.reach = p.reach & ~off[p.b]
        reach = np.zeros(self._t1.shape, dtype=bool)
        reach[p.b[p.reach], p.u[p.reach]] = True
        self._reach = reach

    def _pair_snr(self, b: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The SNR of the pairs (b, u) (the dense path's operations)."""
        dx, dy = self._bx[b, 0] - np.trunc(self._x[u]), self._by[b, 0] - np.trunc(self._y[u])
        return channel.snr(
            self._t1[b, u], self._t2[b, u], self._tx[b, 0], self._noise[0, u], dx, dy
        )

    def _links(self) -> tuple[np.ndarray, np.ndarray]:
        """(station, UE) of the links up, sorted by UE then station."""
        p, conn = self._pairs, self._conn
        if p is not None:
            on = np.flatnonzero(conn[p.b, p.u])
            if on.size == np.count_nonzero(conn):
                return p.b[on], p.u[on]
        u, b = np.nonzero(conn.T)
        return b, u

    def _sparse_rates(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Links in range (b, u), each link's rate and each UE's summed rate."""
        b, u = self._links()
        n_bs, n_ue = self._t1.shape
        counts = np.bincount(b, minlength=n_bs)
        rates = self._bw[b, 0] * np.log2(1 + self._pair_snr(b, u)) / np.maximum(counts[b], 1)
        return b, u, rates, np.bincount(u, weights=rates, minlength=n_ue)

    def _sparse_rate_matrix(self) -> np.ndarray:
        b, u, rates, _ = self._sparse_rates()
        out = np.zeros(self._t1.shape)
        out[b, u] = np.where(self._reach[b, u], rates, 0.0)  # out of range: carries nothing
        return out

    def _sparse_station_utilities(self) -> tuple[np.ndarray, np.ndarray]:
        b, u = self._links()
        n_bs = self._t1.shape[0]
        counts = np.bincount(b, minlength=n_bs)
        sums = np.bincount(b, weights=self._util0[u], minlength=n_bs)
        return counts, np.where(counts > 0, sums / np.maximum(counts, 1), self._idle)

    def _sparse_mobile_rewards(self) -> np.ndarray:
        """mobile-env's multi-agent reward of the active UEs: own utility plus the utilities of
        the stations in range, over their UE counts plus one."""
        p, (counts, bs_util) = self._pairs, self._bs_stats
        on = p.reach & self._active_mask[p.u]
        b, u = p.b[on], p.u[on]
        n_ue = self._t1.shape[1]
        util = np.bincount(u, weights=bs_util[b], minlength=n_ue)
        count = np.bincount(u, weights=counts[b], minlength=n_ue)
        sel = self._sel
        return (util[sel] + self._util[sel]) / (count[sel] + 1)

    def _sparse_snr_db(self) -> np.ndarray:
        """10 log10 of the SNR of the links up; 0 for every other pair (never read)."""
        b, u = np.nonzero(self._conn)
        out = np.zeros(self._t1.shape)
        out[b, u] = 10.0 * np.log10(np.maximum(self._pair_snr(b, u), 1e-30))
        return out
