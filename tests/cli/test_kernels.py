"""The fast engine matches stock mobile-env whichever BLAS kernel OpenBLAS picks for the CPU.

OpenBLAS chooses its kernels per CPU (AVX-512 machines get SkylakeX's, whose dot product uses
fused multiply-adds); mobile-env moves UEs with `np.linalg.norm`, which goes through that dot.
The engine-equality tests run here in fresh processes under two forced kernels, each of which
reports itself (OPENBLAS_VERBOSE), so a pass cannot come from the kernel of this machine only.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

KERNELS = ("Haswell", "SkylakeX")


@pytest.mark.parametrize("kernel", KERNELS)
def test_engine_equality_under_blas_kernel(kernel: str) -> None:
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel, "OPENBLAS_VERBOSE": "2"}
    test = "tests/unit/test_engine.py::test_fast_engine_reproduces_stock_episodes"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", test, "-k", "small", "-q", "-s", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode < 0:  # killed by a signal: the CPU cannot run that kernel at all
        pytest.skip(f"this CPU cannot run OpenBLAS's {kernel} kernel (signal {-done.returncode})")
    assert f"Core: {kernel}" in done.stderr + done.stdout, "the forced kernel was not used"
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout
