"""Gymnasium spaces and values on the wire: spaces as plain dicts (`space_to_wire`,
`space_from_wire`), arrays as array objects (`array_to_wire`, `array_from_wire`), any other
value made plain (`plain`, `unplain`), and per-space encoders, decoders and bound checks built
once per connection, so a step does no space inspection of its own.

An array object is a map of exactly `dtype` (a numpy dtype name), `shape` and `data`: raw
little-endian C-order bytes (msgpack `bin`; in JSON, base64 text) or a nested list.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

spaces = gym.spaces

_ARRAY_KEYS = frozenset(("dtype", "shape", "data"))
_INF = {"inf": np.inf, "+inf": np.inf, "infinity": np.inf, "-inf": -np.inf,
        "-infinity": -np.inf, "nan": np.nan}  # fmt: skip


class SpaceError(ValueError):
    """A space or value that does not fit the protocol (one line)."""


# -- spaces -------------------------------------------------------------------------------


def space_to_wire(space: gym.Space) -> dict[str, Any]:
    """A space as a plain dict (Box, Discrete, MultiDiscrete, MultiBinary, Dict, Tuple)."""
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": space.low.tolist(), "high": space.high.tolist(),
                "shape": list(space.shape), "dtype": space.dtype.name}  # fmt: skip
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        out = {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "dtype": space.dtype.name}
        if np.any(space.start):
            out["start"] = space.start.tolist()
        return out
    if isinstance(space, spaces.MultiBinary):
        n = space.n
        return {"type": "MultiBinary", "n": int(n) if np.ndim(n) == 0 else list(map(int, n))}
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {k: space_to_wire(s) for k, s in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [space_to_wire(s) for s in space.spaces]}
    raise SpaceError(
        f"{type(space).__name__} spaces do not travel over mobrl.external (Box, Discrete, "
        "MultiDiscrete, MultiBinary, Dict and Tuple do)"
    )


def _bound(value: Any) -> Any:
    """A Box bound: numbers, nested lists, or the strings inf/-inf (a C printf writes them)."""
    if isinstance(value, str):
        return _INF[value.strip().lower()]
    if isinstance(value, list):
        return [_bound(v) for v in value]
    return value


def space_from_wire(data: Any) -> gym.Space:
    """The space a plain dict describes, or a one-line `SpaceError`."""
    try:
        kind = data["type"]
        if kind == "Box":
            shape = tuple(data["shape"]) if data.get("shape") is not None else None
            dtype = np.dtype(data.get("dtype", "float32"))
            low = np.asarray(_bound(data["low"]), dtype=np.float64)
            high = np.asarray(_bound(data["high"]), dtype=np.float64)
            if shape is not None:  # a scalar bound holds for every value
                low, high = np.broadcast_to(low, shape), np.broadcast_to(high, shape)
            if np.issubdtype(dtype, np.floating):
                low, high = low.astype(dtype), high.astype(dtype)
            return spaces.Box(low, high, shape=shape, dtype=dtype)
        if kind == "Discrete":
            return spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
        if kind == "MultiDiscrete":
            return spaces.MultiDiscrete(
                np.asarray(data["nvec"]), dtype=data.get("dtype", "int64"),
                start=np.asarray(data["start"]) if data.get("start") is not None else None,
            )  # fmt: skip
        if kind == "MultiBinary":
            return spaces.MultiBinary(data["n"])
        if kind == "Dict":
            return spaces.Dict([(k, space_from_wire(s)) for k, s in data["spaces"].items()])
        if kind == "Tuple":
            return spaces.Tuple([space_from_wire(s) for s in data["spaces"]])
    except SpaceError:
        raise
    except KeyError as err:
        raise SpaceError(f"a {data.get('type')} space without {err}") from err
    except (TypeError, ValueError, AttributeError) as err:
        raise SpaceError(f"a space that is not valid ({data!r:.120}: {err})") from err
    raise SpaceError(f"unknown space type {kind!r} (Box, Discrete, MultiDiscrete, MultiBinary, "
                     "Dict, Tuple)")  # fmt: skip


# -- arrays and plain values --------------------------------------------------------------


#: dtype -> (name, little-endian dtype): numpy's `dtype.name` is a Python property, slow
_DTYPES: dict[np.dtype, tuple[str, np.dtype]] = {}


def _dtype_info(dtype: np.dtype) -> tuple[str, np.dtype]:
    found = _DTYPES.get(dtype)
    if found is None:
        found = _DTYPES[dtype] = (dtype.name, dtype.newbyteorder("<"))
    return found


def array_to_wire(array: np.ndarray, binary: bool) -> dict[str, Any]:
    """An array object: raw little-endian bytes when `binary` (msgpack), else a nested list."""
    name, little = _dtype_info(array.dtype)
    data = np.ascontiguousarray(array, little).tobytes() if binary else array.tolist()
    return {"dtype": name, "shape": list(array.shape), "data": data}


def frame_to_wire(array: np.ndarray, binary: bool) -> dict[str, Any]:
    """A rendered frame: bytes in msgpack, base64 text in JSON (a list would be huge)."""
    out = array_to_wire(np.asarray(array), True)
    if not binary:
        out["data"] = base64.b64encode(out["data"]).decode("ascii")
    return out


def array_from_wire(obj: dict[str, Any]) -> np.ndarray:
    dtype = np.dtype(obj["dtype"])
    shape = tuple(obj["shape"])
    data = obj["data"]
    if isinstance(data, str):
        data = base64.b64decode(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        flat = np.frombuffer(data, dtype.newbyteorder("<"))
        if flat.size != int(np.prod(shape)):
            raise SpaceError(f"an array of shape {shape} with {flat.size} values")
        return flat.astype(dtype).reshape(shape)  # astype: a copy, writable, native order
    out = np.asarray(data, dtype=dtype)
    if out.shape != shape:
        out = out.reshape(shape)
    return out


def is_array_object(obj: Any) -> bool:
    return type(obj) is dict and len(obj) == 3 and obj.keys() == _ARRAY_KEYS


_SCALARS = frozenset((type(None), bool, int, float, str))


def plain(value: Any, binary: bool) -> Any:
    """`value` (an info dict, options) as JSON/msgpack types: numpy scalars as Python numbers,
    arrays as array objects, tuples as lists, other objects as their `str`."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        return {k if type(k) is str or type(k) is int else str(k): plain(v, binary)
                for k, v in value.items()}  # fmt: skip
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return array_to_wire(value, binary)
    if isinstance(value, (list, tuple)):
        return [plain(v, binary) for v in value]
    if isinstance(value, dict):
        return plain(dict(value), binary)
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value) if binary else base64.b64encode(value).decode("ascii")
    return str(value)


def unplain(value: Any) -> Any:
    """`plain`'s output read back: array objects become arrays again."""
    if type(value) is dict:
        if len(value) == 3 and value.keys() == _ARRAY_KEYS:
            return array_from_wire(value)
        return {k: unplain(v) for k, v in value.items()}
    if type(value) is list:
        return [unplain(v) for v in value]
    return value


def arrays_to_wire(arrays: Any, binary: bool) -> Any:
    """A tuple of arrays (possibly nested, as the sparse path's links) as a list of array
    objects (nested tuples as nested lists)."""
    if isinstance(arrays, tuple):
        return [arrays_to_wire(a, binary) for a in arrays]
    return array_to_wire(np.asarray(arrays), binary)


def arrays_from_wire(obj: Any) -> Any:
    if isinstance(obj, list):
        return tuple(arrays_from_wire(a) for a in obj)
    return array_from_wire(obj)


# -- per-space value codecs -----------------------------------------------------------------


def _composed(
    space: gym.Space, make: Callable[[gym.Space], Callable], sequence: type
) -> Callable[[Any], Any] | None:
    """A Dict or Tuple space's codec from its parts' (`make` of each part): a dict, or a
    `sequence` (list or tuple) of the parts' values; None for any other space."""
    if isinstance(space, spaces.Dict):
        parts = {k: make(s) for k, s in space.spaces.items()}
        return lambda value: {k: f(value[k]) for k, f in parts.items()}
    if isinstance(space, spaces.Tuple):
        items = [make(s) for s in space.spaces]
        return lambda value: sequence(f(v) for f, v in zip(items, value))
    return None


def encoder(space: gym.Space, binary: bool) -> Callable[[Any], Any]:
    """Value of `space` -> wire. Arrays of Box, MultiDiscrete and MultiBinary go as bare
    raw bytes when `binary` (the space gives dtype and shape), else as nested lists."""
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        dtype = space.dtype
        if binary:
            little = dtype.newbyteorder("<")
            return lambda x: np.ascontiguousarray(x, little).tobytes()
        return lambda x: np.asarray(x, dtype).tolist()
    if isinstance(space, spaces.Discrete):
        return int
    composed = _composed(space, lambda part: encoder(part, binary), list)
    if composed is not None:
        return composed
    raise SpaceError(f"{type(space).__name__} values do not travel over mobrl.external")


def decoder(space: gym.Space) -> Callable[[Any], Any]:
    """Wire -> value of `space`: arrays of its dtype and shape (from raw bytes, an array
    object or a nested list), Discrete as a numpy integer, Dict as dict, Tuple as tuple. A
    value of the wrong size raises `SpaceError`."""
    if isinstance(space, (spaces.Box, spaces.MultiDiscrete, spaces.MultiBinary)):
        dtype, shape = space.dtype, tuple(space.shape)
        little, size = dtype.newbyteorder("<"), int(np.prod(shape))

        def array(value: Any) -> np.ndarray:
            if type(value) is bytes:
                if len(value) != size * dtype.itemsize:
                    raise SpaceError(f"{len(value)} bytes, not the {size} {dtype.name} values of "
                                     f"shape {shape}")  # fmt: skip
                return np.frombuffer(value, little).astype(dtype).reshape(shape)
            out = array_from_wire(value) if type(value) is dict else np.asarray(value, dtype)
            if out.shape != shape:
                raise SpaceError(f"shape {out.shape}, not {shape}")
            return out if out.dtype == dtype else out.astype(dtype)

        return array
    if isinstance(space, spaces.Discrete):
        kind = space.dtype.type
        return lambda value: kind(value)
    composed = _composed(space, decoder, tuple)
    if composed is not None:
        return composed
    raise SpaceError(f"{type(space).__name__} values do not travel over mobrl.external")


def action_decoder(space: gym.Space) -> Callable[[Any], Any]:
    """Wire -> action for the env: Discrete as a Python int, arrays as numpy arrays."""
    if isinstance(space, spaces.Discrete):
        return int
    return _composed(space, action_decoder, tuple) or decoder(space)


def checker(space: gym.Space) -> Callable[[Any], bool]:
    """A fast `space.contains` for values `decoder` made (dtype and shape already right)."""
    if isinstance(space, spaces.Box):
        low, high = space.low, space.high
        if not (np.isfinite(low).any() or np.isfinite(high).any()):
            return lambda x: not np.isnan(x).any() if x.dtype.kind == "f" else True
        return lambda x: bool((x >= low).all() and (x <= high).all())
    if isinstance(space, spaces.Discrete):
        start, stop = int(space.start), int(space.start + space.n)
        return lambda x: start <= x < stop
    if isinstance(space, spaces.MultiDiscrete):
        start, stop = space.start, space.start + space.nvec
        return lambda x: bool(((x >= start) & (x < stop)).all())
    if isinstance(space, spaces.MultiBinary):
        return lambda x: bool(((x == 0) | (x == 1)).all())
    if isinstance(space, spaces.Dict):
        parts = {k: checker(s) for k, s in space.spaces.items()}
        return lambda x: all(f(x[k]) for k, f in parts.items())
    if isinstance(space, spaces.Tuple):
        items = [checker(s) for s in space.spaces]
        return lambda x: all(f(v) for f, v in zip(items, x))
    return space.contains


def batch_decoder(space: gym.Space, check: bool) -> Callable[[dict], dict | None] | None:
    """For agents sharing one Box space: all their observations decoded (and checked) with a
    few numpy calls, as rows of one array; None from the decoder when the values are not
    all raw bytes or all lists of the space's shape, or fail the check (the per-agent
    decoders then say what is wrong)."""
    if not isinstance(space, spaces.Box):
        return None
    dtype, shape = space.dtype, tuple(space.shape)
    little, nbytes = dtype.newbyteorder("<"), int(np.prod(shape)) * dtype.itemsize
    low, high = space.low, space.high

    def decode(values: dict) -> dict | None:
        n = len(values)
        try:
            blob = b"".join(values.values())
        except TypeError:  # lists (JSON), or a mix
            try:
                rows = np.array(list(values.values()), dtype)
            except (TypeError, ValueError):
                return None
            if rows.shape != (n, *shape):
                return None
        else:
            if len(blob) != n * nbytes:
                return None
            rows = np.frombuffer(bytearray(blob), little).reshape((n, *shape))
            if little != dtype:
                rows = rows.astype(dtype)
        if check and not ((rows >= low).all() and (rows <= high).all()):
            return None
        return dict(zip(values, rows))

    return decode


def outside(space: gym.Space, value: Any) -> str:
    """Where `value` leaves `space`, in a few words (for the error message)."""
    if isinstance(space, spaces.Box):
        x = np.asarray(value)
        bad = ~((x >= space.low) & (x <= space.high))
        if bad.any():
            at = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"value {x[at].item()!r} at index {at if len(at) != 1 else at[0]} outside "
                    f"[{space.low[at].item()}, {space.high[at].item()}]")  # fmt: skip
    if isinstance(space, spaces.Dict):
        for k, s in space.spaces.items():
            if not s.contains(value[k]):
                return f"key {k!r}: {outside(s, value[k])}"
    if isinstance(space, spaces.Tuple):
        for i, (s, v) in enumerate(zip(space.spaces, value)):
            if not s.contains(v):
                return f"item {i}: {outside(s, v)}"
    shown = np.array2string(np.asarray(value), threshold=8, max_line_width=80).replace("\n", "")
    return f"value {shown}"
