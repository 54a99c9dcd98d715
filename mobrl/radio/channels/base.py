"""The channel-model interface: what a path-loss model declares and the two things it computes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

#: metres per second (exact, SI): the breakpoint distance and free space need it with fc in Hz
SPEED_OF_LIGHT = 299_792_458.0

#: the effective environment height hE of TR 38.901 Table 7.4.1-1 note 1, fixed at 1 m: the
#: standard draws a larger hE for UMa UEs above 13 m, which would make path loss random
H_E = 1.0

#: what the models accept: a number or anything numpy turns into a float array
ArrayLike = npt.ArrayLike
#: what they return: a numpy float64 for scalar inputs, an array of the broadcast shape otherwise
FloatResult = np.float64 | npt.NDArray[np.float64]


def distance_3d(d2d: Any, h_bs: Any, h_ue: Any) -> Any:
    """The 3D distance between BS and UE antennas, d3D = sqrt(d2D^2 + (hBS - hUT)^2)."""
    return np.sqrt(d2d * d2d + (h_bs - h_ue) ** 2)


def breakpoint_distance(fc_ghz: Any, h_bs: Any, h_ue: Any) -> Any:
    """TR 38.901 Table 7.4.1-1 note 1: d'BP = 4 h'BS h'UT fc / c, with h' = h - hE, fc in Hz."""
    return 4.0 * (h_bs - H_E) * (h_ue - H_E) * (fc_ghz * 1e9) / SPEED_OF_LIGHT


#: added to a LOS link's NLOS loss before the larger of the two is taken (a selection by
#: arithmetic: numpy's masked selections branch per element, several times slower)
_NEVER_DB = 1e4
#: the same in single precision, so that a float32 simulation stays in float32 (1e4 is exact
#: in both: a float64 one's numbers do not change)
_NEVER_DB_F32 = np.float32(_NEVER_DB)


@dataclass(frozen=True)
class LossTerms:
    """A path-loss formula with its frequency and height terms worked out once, for a
    simulation that evaluates it at many distances with the same stations and UEs: each
    segment is `a + slope * log10(d3D)`, the LOS one `near` up to the breakpoint (2D distance
    `breakpoint`) and `far` beyond it, the NLOS one `nlos` (None: no LOS state; the NLOS loss is
    the larger of the two). Arrays broadcast to (station, UE)."""

    dh2: Any  # (hBS - hUT)^2
    breakpoint: Any
    near: tuple[Any, float]
    far: tuple[Any, float]
    nlos: tuple[Any, float] | None

    def columns(self, cols: slice) -> LossTerms:
        """These terms for the UEs `cols` only (the UE axis, the last, sliced where an array
        has one)."""
        return self._each(lambda v: v[..., cols] if np.ndim(v) == 2 and np.shape(v)[-1] > 1 else v)

    def astype(self, dtype: Any) -> LossTerms:
        """These terms with their arrays in `dtype` (float32: a simulation's arithmetic in
        single precision, the slopes stay Python floats and so keep it)."""
        return self._each(lambda v: np.asarray(v, dtype=dtype))

    def _each(self, f: Any) -> LossTerms:
        """These terms with `f` applied to each array (the slopes kept)."""
        return LossTerms(
            f(self.dh2),
            f(self.breakpoint),
            (f(self.near[0]), self.near[1]),
            (f(self.far[0]), self.far[1]),
            None if self.nlos is None else (f(self.nlos[0]), self.nlos[1]),
        )

    def loss_db(self, d2d: Any, los: Any) -> Any:
        """The path loss (dB) at 2D distances `d2d` with LOS states `los` (what the model's
        `path_loss_db` computes: the 3D distance from d2D and the heights, the LOS formula
        before and after the breakpoint, NLOS never below LOS)."""
        return self.loss_db_sq(d2d * d2d, los)

    def loss_db_sq(self, d2d_sq: Any, los: Any) -> Any:
        """`loss_db` at squared 2D distances. The two LOS segments meet at the breakpoint
        (the far one's log10(d'BP^2 + (hBS - hUT)^2) term makes them equal at d2D = d'BP) and
        the far one is steeper, so the LOS loss is the larger of the two: the near one up to
        the breakpoint, the far one beyond it, without a per-element branch."""
        lg = np.log10(d2d_sq + self.dh2)  # 2 log10(d3D)
        (a1, s1), (a2, s2) = self.near, self.far
        pl = a1 + (0.5 * s1) * lg
        if s2 != s1 or not np.array_equal(a1, a2):  # two segments
            pl = np.maximum(pl, a2 + (0.5 * s2) * lg)
        if self.nlos is None or los is True:
            return pl
        a3, s3 = self.nlos
        # NLOS: max(PL_LOS, PL_NLOS'); LOS: PL_LOS (its NLOS term pushed far below)
        return np.maximum(pl, (a3 + (0.5 * s3) * lg) - los * _NEVER_DB_F32)


@dataclass(frozen=True)
class Channel:
    """A deterministic path-loss model: its parameters, provenance and formulas.

    `path_loss_db` and `los_probability` broadcast over every argument with numpy's rules: a
    (3, 1) array of distances against a (1, 4) array of frequencies gives a (3, 4) result;
    scalars give a numpy float64. Outside the range a model is specified for (`min_distance_2d_m`
    up to 5 km for the 3GPP ones) the formula is evaluated as is, without clipping.
    Subclasses implement `_path_loss_db` and `_los_probability` on float arrays of one shape.
    """

    name: str
    #: where the formulas come from, down to the table
    source: str
    default_bs_height_m: float
    #: shadow-fading standard deviations; None when the model has none
    sigma_los_db: float | None
    sigma_nlos_db: float | None
    #: shadow-fading decorrelation distances (TR 38.901 Table 7.5-6 Part-1, the SF row)
    sf_decorrelation_los_m: float | None
    sf_decorrelation_nlos_m: float | None
    #: correlation distance of the LOS state (TR 38.901 Table 7.6.3.1-2)
    los_decorrelation_m: float | None
    #: False: `los` is ignored by `path_loss_db`
    has_los_state: bool
    #: the smallest 2D distance the formula is specified for
    min_distance_2d_m: float

    @property
    def has_shadowing(self) -> bool:
        """Whether the model gives a shadow-fading sigma."""
        return self.sigma_los_db is not None

    def path_loss_db(
        self, d2d: ArrayLike, fc_ghz: ArrayLike, h_bs: ArrayLike, h_ue: ArrayLike, los: ArrayLike
    ) -> FloatResult:
        """Path loss in dB without shadowing, over 2D distance (m), carrier frequency (GHz),
        BS and UE antenna heights (m) and the LOS state (bool; ignored without a LOS state)."""
        d, f, hb, hu = (np.asarray(x, dtype=np.float64) for x in (d2d, fc_ghz, h_bs, h_ue))
        _check_positive(d, f)
        d, f, hb, hu, los_b = np.broadcast_arrays(d, f, hb, hu, np.asarray(los, dtype=bool))
        return np.asarray(self._path_loss_db(d, f, hb, hu, los_b), dtype=np.float64)[()]

    def los_probability(self, d2d: ArrayLike, h_ue: ArrayLike) -> FloatResult:
        """The probability that a UE at 2D distance `d2d` (m) and height `h_ue` (m) is in LOS."""
        d, hu = (np.asarray(x, dtype=np.float64) for x in (d2d, h_ue))
        _check_positive(d, None)
        d, hu = np.broadcast_arrays(d, hu)
        return np.asarray(self._los_probability(d, hu), dtype=np.float64)[()]

    def loss_terms(self, fc_ghz: Any, h_bs: Any, h_ue: Any) -> LossTerms:
        """`LossTerms` of this model for these frequencies and heights (3GPP-style models)."""
        raise NotImplementedError(f"{self.name} has no log-distance terms")

    def los_probability_of(self, d2d: Any, h_ue: Any) -> Any:
        """`los_probability` on arrays that broadcast, without checking or broadcasting them
        first (for simulations that call it every step)."""
        return self._los_probability(d2d, h_ue)

    def _path_loss_db(self, d2d: Any, fc_ghz: Any, h_bs: Any, h_ue: Any, los: Any) -> Any:
        # one formula per model: its `loss_terms`, read at these distances
        return self.loss_terms(fc_ghz, h_bs, h_ue).loss_db(d2d, los)

    def _los_probability(self, d2d: Any, h_ue: Any) -> Any:
        raise NotImplementedError


def _check_positive(d2d: Any, fc_ghz: Any) -> None:
    # nonsense inputs fail here with their name instead of as NaNs and log10 warnings later
    if np.any(d2d < 0):
        raise ValueError("distance_2d_m must be >= 0 (metres)")
    if fc_ghz is not None and np.any(fc_ghz <= 0):
        raise ValueError("frequency_ghz must be > 0 (GHz)")
