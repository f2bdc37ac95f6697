"""Energy of serving under the roofline model: the joules behind each generated token.

A board draws a share of its rated power while it waits (idle power) and the rest in proportion
to the time its binding roof is busy in the one step formula.
"""

from __future__ import annotations

import numpy as np

from rooflinekit._validation import check_range
from rooflinekit.roofline.step import (
    decode_step,
    step_bytes,
    step_flops,
    step_formula,
    step_time,
)

__all__ = ["DEFAULT_IDLE_POWER_FRACTION", "energy_per_token"]

#: Default idle draw as a share of board power [1]: between a waiting board's draw and an
#: H100's at batch-1 decode (see :func:`energy_per_token`).
DEFAULT_IDLE_POWER_FRACTION = 0.3


def _fraction(name, value):
    check_range(name, value, lo=0, hi=1)


@step_formula("J/token", "GPU energy per generated token",
              checks={"idle_power_fraction": _fraction}, gpu_fields=("board_power",))
def energy_per_token(model, gpu, batch_size=1, context_length=0, tp=1, *,
        idle_power_fraction=DEFAULT_IDLE_POWER_FRACTION, engine=None):
    """GPU energy of one generated token in a decode step [J/token].

    Parameters
    ----------
    idle_power_fraction : float, array_like or xarray.DataArray
        Share of the board power a GPU draws while its roofs are idle [1], in [0, 1]. Default
        0.3.

    Returns
    -------
    float, ndarray or xarray.DataArray
        Joules per generated token: the group's power during the step times the step time,
        shared over the ``batch_size`` tokens of the step. GPU boards only (no host, network or
        cooling: :class:`rooflinekit.pricing.SelfHosted` takes the facility's PUE).

    Raises
    ------
    ValueError
        If the GPU has no ``board_power`` (``gpu.board_power`` is unknown).

    See Also
    --------
    decode_step_time, amortized_token_time, decode_compute_time, decode_memory_time,
    rooflinekit.pricing.SelfHosted

    Notes
    -----
    With ``T`` the decode step time, ``T_c`` its compute time and ``T_m`` its memory time (the
    two roofs of the step, efficiencies included), the step's utilisation, the share of the
    step the binding roof is busy, is ``u = max(T_c, T_m) / T``: below 1 by the step overhead
    and the all-reduce time. Each GPU draws ``P_gpu = P_board × (i + (1 − i) × u)``, with ``i``
    = ``idle_power_fraction`` (a line from idle power to the rated board power), and the group
    of ``tp`` GPUs ``tp × P_gpu``. The energy per token is then

    ``E = tp × P_gpu × T / B = tp × P_board × (i·T + (1 − i)·max(T_c, T_m)) / B``.

    Both roofs drawing the rated power while busy is an upper bound: memory-bound decode runs
    below the board's rating. A waiting board with a model loaded draws a constant idle power,
    set by its clock state rather than by the memory it holds [2]; an H100 SXM decoding at
    batch 1 draws about 300 W of its 700 W (0.43), at batch 128 about 600 W (0.86) [3]. The
    default 0.3 lies between the idle draw and the batch-1 draw.

    References
    ----------
    .. [1] Guide §3.1, §4.1 (decode step time shared over the batch).
    .. [2] Vadari, "The Model Parking Tax: Quantifying the Hidden Energy Cost of Always-On GPU
       Model Deployment", arXiv:2605.23918 (idle power with a CUDA context loaded).
    .. [3] ML.ENERGY Benchmark v3.0 (H100 SXM, batch 1 and batch 128), as cited by vLLM
       Semantic Router's power model reference,
       https://vllm-semantic-router.com/docs/fleet-sim/power-model
    """
    if np.isnan(gpu.board_power).any():
        raise ValueError("gpu.board_power is unknown (None) for this GPU; give the GPU a "
                         "board_power [W], > 0, to compute its energy")
    step = decode_step(model, batch_size, context_length)
    busy = np.maximum(step_flops(model, step) / gpu.peak_flops,
                      step_bytes(model, step) / gpu.bandwidth)
    group_power = gpu.board_power / gpu.n_gpus * gpu.tp          # W of the group at full load
    i = idle_power_fraction
    return group_power * (i * step_time(model, gpu, step) + (1.0 - i) * busy) / batch_size
