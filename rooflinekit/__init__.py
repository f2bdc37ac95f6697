"""rooflinekit: how many conversations fit, how fast they run, and what they cost.

Vectorised KV-cache, roofline, batching and pricing models for planning LLM serving capacity.
Importing the package compiles no numba code; kernels compile on first use.
"""

from . import catalog, dims, units
from .hardware import GPU
from .memory import (
    blocks_per_sequence,
    engine_kv_cache,
    kv_budget_tokens,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_concurrent_sequences,
    max_context_length,
    paged_waste_bytes,
    usable_kv_bytes,
    weight_bytes,
)
from .models import ModelShape

__version__ = "0.1.0"

__all__ = [
    "__version__",
    # modules
    "catalog", "dims", "units",
    # specs
    "GPU", "ModelShape",
    # memory (§2)
    "kv_bytes_per_token", "kv_bytes_per_sequence", "weight_bytes", "usable_kv_bytes",
    "max_concurrent_sequences", "kv_budget_tokens", "max_context_length",
    "blocks_per_sequence", "paged_waste_bytes", "engine_kv_cache",
]
