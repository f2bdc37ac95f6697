"""Shared fixtures: the guide's lab model and accelerator."""

import pytest

from rooflinekit import catalog


@pytest.fixture(scope="session")
def guide_model():
    """Guide §2.2's 70B-class model: L=80, H_kv=8, d=128, fp16, 70e9 parameters."""
    return catalog.model("guide-70b")


@pytest.fixture(scope="session")
def lab_gpu():
    """Guide §3.2's lab accelerator: 80 GiB, 3.35 TB/s, 989 TFLOP/s dense."""
    return catalog.gpu("guide-lab-80GB")
