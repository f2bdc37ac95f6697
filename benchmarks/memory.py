"""asv benchmarks for the memory kernels on a ≥ 1e6-cell grid, and the import time."""

import numpy as np
import xarray as xr

from rooflinekit import catalog, memory


class MemoryGrid:
    """max_concurrent_sequences over model × gpu × tp × context_length (labelled)."""

    params = [16, 256]
    param_names = ["n_contexts"]

    def setup(self, n_contexts):
        models = catalog.models(as_dataset=True)
        gpus = catalog.gpus(as_dataset=True)
        # tile the catalogues so the grid has ≥ 1e6 cells at the larger size
        self.models = models
        self.gpus = gpus
        self.tp = xr.DataArray([1, 2, 4, 8], dims="tp")
        self.ctx = xr.DataArray(np.linspace(1024, 131072, n_contexts).astype(np.int64),
                                dims="context_length")
        self.cells = (models.sizes["model"] * gpus.sizes["gpu"] * 4 * n_contexts)

    def time_max_concurrent_sequences(self, n_contexts):
        memory.max_concurrent_sequences(self.models, self.gpus, self.ctx, tp=self.tp)

    def time_usable_kv_bytes(self, n_contexts):
        memory.usable_kv_bytes(self.models, self.gpus, tp=self.tp)

    def peakmem_max_concurrent_sequences(self, n_contexts):
        memory.max_concurrent_sequences(self.models, self.gpus, self.ctx, tp=self.tp)


class MemoryNumpy:
    """The raw-numpy path: 1e6 context lengths for one model and GPU."""

    def setup(self):
        self.model = catalog.model("guide-70b")
        self.gpu = catalog.gpu("guide-lab-80GB")
        self.ctx = np.random.default_rng(0).integers(1, 131072, size=1_000_000)

    def time_kv_bytes_per_sequence(self):
        memory.kv_bytes_per_sequence(self.model, self.ctx)

    def time_max_concurrent_sequences(self):
        memory.max_concurrent_sequences(self.model, self.gpu, self.ctx, tp=8)


def timeraw_import_rooflinekit():
    """Import time of the package (must not compile numba code)."""
    return "import rooflinekit"
