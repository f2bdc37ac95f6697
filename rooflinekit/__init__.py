"""rooflinekit: how many conversations fit, how fast they run, and what they cost.

Vectorised KV-cache, roofline, batching and pricing models for planning LLM serving capacity.
Importing the package compiles no numba code; kernels compile on first use.
"""

from . import catalog, dims, units
from .hardware import GPU
from .models import ModelShape

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "catalog", "dims", "units",
    "GPU", "ModelShape",
]
