"""Whether a serving engine's release has an attention kernel for a model on a GPU.

An engine picks its attention backend by the GPU's compute capability; where no backend takes
the model's attention, the engine does not start. A plan timed by that engine's profile
cannot serve such a configuration, however the roofline would time it.
"""
from __future__ import annotations

from rooflinekit._validation import check_string, check_type
from rooflinekit.hardware import GPU
from rooflinekit.models import ModelShape
from rooflinekit.profiles import shipped

__all__ = ["VLLM_SPARSE_MLA_SM120_SINCE", "missing_attention_kernel"]

#: The first vLLM release with a sparse-MLA backend for compute capability 12.x (FlashInfer's
#: SM120 sparse MLA): before it, DeepSeek-V3.2 on an RTX PRO 6000 finds none.
VLLM_SPARSE_MLA_SM120_SINCE = "0.24.0"


def missing_attention_kernel(engine, model, gpu) -> str | None:
    """Why ``engine`` would not start ``model`` on ``gpu`` for want of an attention kernel,
    or ``None`` where it has one (or the rule is not known).

    Parameters
    ----------
    engine : str or None
        The serving engine and, optionally, its release: ``"vllm"`` (a current release) or
        ``"vllm@0.20.0"``, as :func:`~rooflinekit.profiles.memory_engine` names the engine a
        plan runs. ``None`` (the ideal bound) and engines other than vLLM are not checked.
    model : ModelShape
        The model; only sparse multi-head latent attention (DeepSeek Sparse Attention: a
        ``kv_lora_rank`` and ``indexer_bytes_per_token_per_layer > 0``) lacks kernels.
    gpu : GPU
        The GPU; its :attr:`~rooflinekit.GPU.compute_capability` picks the backend (``None``:
        not an NVIDIA GPU, or not stated, and not checked).

    Returns
    -------
    str or None
        A sentence naming the engine, model, GPU and what to do instead; ``None`` where the
        engine has a kernel.

    Notes
    -----
    vLLM's sparse-MLA backends (releases 0.18.0 to 0.34.0) [1]_: FlashMLA sparse on compute
    capability 9.x and 10.x, FlashInfer's sparse MLA on 10.x, FlashAttention's sparse MLA on
    9.x (0.29.0 on), and FlashInfer's SM120 sparse MLA on 12.x from
    :data:`VLLM_SPARSE_MLA_SM120_SINCE`. None runs on 8.x (A100, L40S, RTX 4090) in any
    release, and the dense MLA backends refuse a sparse model: vLLM stops with "No valid
    attention backend found".

    References
    ----------
    .. [1] vLLM ``vllm/platforms/cuda.py`` (``_get_backend_priorities``, "No valid attention
       backend found") and ``vllm/v1/attention/backends/mla/*sparse*.py``
       (``supports_compute_capability``), releases 0.18.0, 0.20.0, 0.24.0, 0.29.0 and 0.34.0.

    See Also
    --------
    rooflinekit.memory.vllm_attention_block : the KV block vLLM's first-choice MLA kernel takes.
    """
    check_string("engine", engine, allow_none=True)
    check_type("model", model, ModelShape)
    check_type("gpu", gpu, GPU)
    if shipped.profiled_engine(engine) != "vllm" or gpu.compute_capability is None:
        return None
    if model.kv_lora_rank is None or not float(model.indexer_bytes_per_token_per_layer) > 0.0:
        return None
    major = int(gpu.compute_capability)
    if major in (9, 10):
        return None
    release = shipped.named_release(engine)
    if major == 12 and (release is None
                        or release >= shipped.release_number(VLLM_SPARSE_MLA_SM120_SINCE)):
        return None
    which = (f"before {VLLM_SPARSE_MLA_SM120_SINCE}" if major == 12 else "in any release")
    return (f"vLLM has no sparse-MLA attention kernel for {model.name} on {gpu.name} "
            f"(compute capability {gpu.compute_capability:.1f}) {which}, and stops with 'No valid "
            f"attention backend found': plan it on a Hopper or Blackwell GPU"
            + (f", or with vLLM {VLLM_SPARSE_MLA_SM120_SINCE} or later" if major == 12 else ""))
