"""Shared fixtures: the guide's lab model and accelerator, and its §6.3 prices."""

import os

import pytest
from hypothesis import settings

from rooflinekit import catalog
from rooflinekit.pricing import PayAsYouGo, Provisioned

# The suite runs the same examples on every machine (a red run names a case anyone
# reproduces, and a fresh clone passes as this one did); ROOFLINEKIT_EXPLORE=1 lets hypothesis
# explore new examples, which is how new cases are found (then pinned with @example).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("explore" if os.environ.get("ROOFLINEKIT_EXPLORE") else "ci")


def pytest_configure(config):
    """Fill numba's cache of the simulator's kernels once, before any test needs one.

    Run by the main process only (pytest-xdist's workers start after it and load the kernels
    from the cache), the kernel families side by side on the machine's cores. Without it each
    worker compiled whatever kernel its first simulating test needed, the same ones at the
    same time. A warm cache costs a look at numba's index files.
    """
    if hasattr(config, "workerinput"):            # a pytest-xdist worker
        return
    from rooflinekit.batching import compile_kernels
    compile_kernels()


@pytest.fixture(scope="session")
def guide_model():
    """Guide §2.2's 70B-class model: L=80, H_kv=8, d=128, fp16, 70e9 parameters."""
    return catalog.model("guide-70b")


@pytest.fixture(scope="session")
def lab_gpu():
    """Guide §3.2's lab accelerator: 80 GiB, 3.35 TB/s, 989 TFLOP/s dense."""
    return catalog.gpu("guide-lab-80GB")


@pytest.fixture
def guide_payg():
    """Guide §6.3: input $3 / output $12 per 1M tokens."""
    return PayAsYouGo(3.0, 12.0)


@pytest.fixture
def guide_provisioned():
    """Guide §6.3: $12,000/month for 4B tokens."""
    return Provisioned(12_000.0, 4e9)

