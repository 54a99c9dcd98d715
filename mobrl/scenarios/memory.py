"""How much memory a layout takes: an estimate per env copy, and the machine's memory."""

from __future__ import annotations

import os

#: resident memory of one env copy per (station, UE) pair: the engine's arrays and the full
#: (BS, UE) matrices the baselines and the oracle read (`mobrl evaluate` of metro, 400 x 4,000:
#: 507 MB against 231 MB on large, 13 x 30; scripts/bench.py city for the engine alone)
BYTES_PER_PAIR = 180
#: memory a mobrl process needs besides the layout (Python, numpy, mobile-env; evaluate on large)
BASE_BYTES = 250 * 2**20
#: the share of the machine's memory one env copy may take
FIT_SHARE = 0.5


def memory_bytes(stations: int, ues: int) -> int:
    """Estimated resident memory of a process playing one copy of a layout this size."""
    return BASE_BYTES + BYTES_PER_PAIR * stations * ues


def machine_bytes() -> int:
    """This machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def fitting_ues(stations: int, machine: int) -> int:
    """The most UEs a layout of `stations` may have on a machine of `machine` bytes."""
    return max(int((FIT_SHARE * machine - BASE_BYTES) // (BYTES_PER_PAIR * stations)), 0)
