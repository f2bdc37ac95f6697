"""asv benchmarks: the formula decorator against ``xarray.apply_ufunc`` on one formula.

``decode_step_time`` through :func:`rooflinekit._labels.formula` (the roofline's
``step_formula``) against the same body under ``xr.apply_ufunc``: on Python scalars, on 1e6-element
numpy arrays and on labelled DataArrays (model × gpu × tp × context_length × batch_size).
"""

import numpy as np
import xarray as xr

from rooflinekit import catalog, roofline
from rooflinekit.roofline import IDEAL

_BODY = roofline.decode_step_time.__wrapped__
_FIELDS = ("n_layers", "n_heads", "head_dim", "attention_width", "hidden_size", "n_params",
           "n_active_params", "n_experts", "n_experts_per_token", "bytes_per_param",
           "kv_bytes_per_element", "kv_bytes_per_token", "kv_bytes_per_token_per_layer",
           "n_full_layers", "n_sliding_layers", "sliding_window", "input_embedding_params",
           "lm_head_params")


def _axis(dim, values):
    values = np.asarray(values)
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


def _via_apply_ufunc(models, gpus, batch, ctx, tp):
    """decode_step_time's body run by xr.apply_ufunc on the specs' variables, by name."""
    from types import SimpleNamespace

    from rooflinekit.roofline.options import OPTIONAL_MODEL_FIELDS
    from rooflinekit.roofline.step import _coefficients

    model_vars = [models[k].astype(float) for k in _FIELDS]
    gpu_vars = [gpus[k].astype(float) for k in ("hbm_bandwidth", "peak_flops", "n_gpus",
                                                 "interconnect_bandwidth",
                                                 "interconnect_latency")]

    def kernel(b, c, t, *fields):
        model = SimpleNamespace(**dict(zip(_FIELDS, fields[:len(_FIELDS)])))
        for k, default in OPTIONAL_MODEL_FIELDS.items():     # fields the catalogue lacks
            setattr(model, k, getattr(model, k, default))
        gpu = SimpleNamespace(**dict(zip(("hbm_bandwidth", "peak_flops", "n_gpus",
                                          "interconnect_bandwidth", "interconnect_latency"),
                                         fields[len(_FIELDS):])))
        gpu.attention_peak_flops = gpu.peak_flops      # the 16-bit peak: bf16 activations
        gpu.peak_flops_16bit = gpu.peak_flops          # bf16 weights: no low-precision path
        gpu.fp4_path = False                           # nor an FP4 one
        # the ideal engine's fields, as the formula lays them out beside the specs
        inputs = _coefficients({"model": model, "gpu": gpu, "tp": t, "engine": IDEAL,
                                **IDEAL.fields()})
        return _BODY(inputs["model"], inputs["gpu"], b, c, t)

    out = xr.apply_ufunc(kernel, batch, ctx, tp, *model_vars, *gpu_vars, join="exact")
    out.attrs = {"units": "s", "long_name": "decode step time (ITL)"}
    return out


class DecodeStepTimeKinds:
    """One formula, three input kinds, two wrappers."""

    def setup(self):
        rng = np.random.default_rng(0)
        self.model = catalog.model("guide-70b")
        self.gpu = catalog.gpu("guide-lab-80GB")
        self.models = catalog.models(catalog.model_names()[:8], as_dataset=True)
        self.gpus = catalog.gpus(catalog.gpu_names()[:6], as_dataset=True)
        self.batch = rng.integers(1, 512, size=1_000_000)
        self.ctx = rng.integers(0, 131_072, size=1_000_000)
        self.tp = _axis("tp", [1, 2, 4, 8])
        self.ctx_axis = _axis("context_length", np.linspace(0, 32_768, 16).round())
        self.batch_axis = _axis("batch_size", np.arange(1, 129))

    def time_scalar_wrapper(self):
        roofline.decode_step_time(self.model, self.gpu, 8, 1024, 2)

    def time_scalar_apply_ufunc(self):
        xr.apply_ufunc(lambda b, c: roofline.decode_step_time(self.model, self.gpu, b, c, 2),
                       8, 1024)

    def time_numpy_wrapper(self):
        roofline.decode_step_time(self.model, self.gpu, self.batch, self.ctx, 8)

    def time_numpy_apply_ufunc(self):
        xr.apply_ufunc(lambda b, c: roofline.decode_step_time(self.model, self.gpu, b, c, 8),
                       self.batch, self.ctx)

    def time_labelled_wrapper(self):
        roofline.decode_step_time(self.models, self.gpus, self.batch_axis, self.ctx_axis, self.tp)

    def time_labelled_apply_ufunc(self):
        _via_apply_ufunc(self.models, self.gpus, self.batch_axis, self.ctx_axis, self.tp)
