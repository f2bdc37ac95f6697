"""asv benchmarks for the roofline kernels on ≥ 1e6-cell grids, and the numba step kernel."""

import numba
import numpy as np
import xarray as xr

from rooflinekit import catalog, parallel, roofline


def _axis(dim, values):
    values = np.asarray(values)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


class DecodeGrid:
    """Decode step time over model × gpu × tp × context_length × batch_size, labelled.

    16 models × 12 GPUs × 4 degrees × ``n_contexts`` × 128 batch sizes: 16 contexts give
    1,572,864 cells.
    """

    params = [4, 16]
    param_names = ["n_contexts"]

    def setup(self, n_contexts):
        self.models = catalog.models(catalog.model_names()[:16], as_dataset=True)
        self.gpus = catalog.gpus(catalog.gpu_names()[:12], as_dataset=True)
        self.tp = _axis("tp", [1, 2, 4, 8])
        self.ctx = _axis("context_length", np.linspace(0, 32_768, n_contexts).round())
        self.batch = _axis("batch_size", np.arange(1, 129))

    def time_decode_step_time(self, n_contexts):
        roofline.decode_step_time(self.models, self.gpus, self.batch, self.ctx, self.tp)

    def time_decode_time_allreduce(self, n_contexts):
        roofline.decode_step_time(self.models, self.gpus, self.batch, self.ctx, self.tp,
                                  engine=roofline.Engine(allreduce=True))

    def time_decode_throughput(self, n_contexts):
        roofline.decode_throughput(self.models, self.gpus, self.batch, self.ctx, self.tp)

    def time_arithmetic_intensity(self, n_contexts):
        roofline.arithmetic_intensity(self.models, self.batch, self.ctx)

    def time_critical_batch_size(self, n_contexts):
        roofline.critical_batch_size(self.models, self.gpus, self.ctx, self.tp)

    def peakmem_decode_step_time(self, n_contexts):
        roofline.decode_step_time(self.models, self.gpus, self.batch, self.ctx, self.tp)


class PrefillGrid:
    """Prefill time and end-to-end latency over model × gpu × tp × prompt_tokens (≈ 1e6 cells
    with 16 × 12 × 4 × 1,366 prompts)."""

    def setup(self):
        self.models = catalog.models(catalog.model_names()[:16], as_dataset=True)
        self.gpus = catalog.gpus(catalog.gpu_names()[:12], as_dataset=True)
        self.tp = _axis("tp", [1, 2, 4, 8])
        self.prompt = _axis("prompt_tokens", np.arange(1, 32_768, 24))

    def time_prefill_time(self):
        roofline.prefill_time(self.models, self.gpus, self.prompt, self.tp)

    def time_request_latency(self):
        roofline.request_latency(self.models, self.gpus, self.prompt, 256, 32, self.tp)


class DecodeNumpy:
    """The unlabelled path: 1e6 random (batch, context) pairs for one model and GPU group."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.model = catalog.model("guide-70b")
        self.gpu = catalog.gpu("guide-lab-80GB")
        self.batch = rng.integers(1, 512, size=1_000_000)
        self.ctx = rng.integers(0, 131_072, size=1_000_000)

    def time_decode_step_time(self):
        roofline.decode_step_time(self.model, self.gpu, self.batch, self.ctx, 8)

    def time_mixed_step_time(self):
        roofline.mixed_step_time(self.model, self.gpu, self.batch, 256, self.batch * self.ctx, 8)

    def time_generation_time(self):
        roofline.generation_time(self.model, self.gpu, 256, self.ctx, self.batch, 8)


@numba.njit
def _simulate_steps(cost, n_decode, kv_read):
    total = 0.0
    for i in range(n_decode.shape[0]):
        total += _step(cost[0], cost[1], cost[2], cost[3], cost[4], cost[5], cost[6], cost[7],
                       cost[8], cost[9], cost[10], cost[11], cost[12], cost[13], cost[14],
                       cost[15], cost[16], cost[17], cost[18], cost[19], cost[20], cost[21],
                       cost[22], cost[23], cost[24], cost[25], cost[26], cost[27], cost[28],
                       cost[29], cost[30], n_decode[i], 0.0, kv_read[i], 0.0, 0.0)
    return total


_step = numba.njit(roofline.mixed_step_time_kernel)


class StepKernel:
    """The numba step kernel as the batching simulator calls it: 1e6 steps in a loop."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.cost = np.array(roofline.step_cost_coefficients(
            catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB"), 8,
            engine=roofline.Engine(allreduce=True)))
        self.n = rng.integers(1, 256, size=1_000_000).astype(float)
        self.kv = self.n * rng.integers(0, 8192, size=1_000_000)
        _simulate_steps(self.cost, self.n[:10], self.kv[:10])        # compile in setup

    def time_one_million_steps(self):
        _simulate_steps(self.cost, self.n, self.kv)


class SmallestTP:
    """smallest_tp over model × gpu × concurrency × context_length (≈ 1e6 cells)."""

    def setup(self):
        self.models = catalog.models(catalog.model_names()[:16], as_dataset=True)
        self.gpus = catalog.gpus(catalog.gpu_names()[:12], as_dataset=True)
        self.concurrency = _axis("concurrency", np.arange(1, 81))
        self.ctx = _axis("context_length", np.linspace(1024, 131_072, 64).round().astype(int))

    def time_smallest_tp(self):
        parallel.smallest_tp(self.models, self.gpus, concurrency=self.concurrency,
                             context_length=self.ctx)
