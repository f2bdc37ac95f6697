"""A hybrid's recurrent state against measured Gated DeltaNet kernels.

The step model charges each decode token of a hybrid model its recurrent layers' whole state,
read and written once (``2 · state_bytes_per_sequence`` a token, :mod:`rooflinekit.roofline`),
at the step's bandwidth. aiconfigurator-core 0.12.0 (the profiles' development extra) ships
the Gated DeltaNet kernels' times that vLLM 0.24.0 and SGLang 0.5.14 run for Qwen3.5-397B-A17B
(``linear_attention/<engine>/<version>/gdn_perf.parquet``, phase ``generation``: the short
convolution's update and the fused recurrent delta-rule step, per layer, by batch and by the
value heads one GPU holds). Here the state is counted from the model's config.json, not by the
package: per layer 64 value heads of 128 × 128 fp32 values, and a convolution window of 3
tokens of the 2·16·128 + 64·128 bf16 q/k/v channels. Skipped where the extra is absent.
"""

import pathlib

import numpy as np
import pytest

from rooflinekit import catalog

#: Qwen3.5-397B-A17B's Gated DeltaNet layers (config.json: linear_num_value_heads 64,
#: linear_num_key_heads 16, head dims 128, linear_conv_kernel_dim 4; 45 of 60 layers).
V_HEADS, K_HEADS, HEAD, CONV, LAYERS = 64, 16, 128, 4, 45
STATE_PER_LAYER = V_HEADS * HEAD * HEAD * 4 + (CONV - 1) * (2 * K_HEADS * HEAD + V_HEADS * HEAD) * 2

#: The aiconfigurator systems measured, by catalogue name.
SYSTEMS = {"h100_sxm": "H100-SXM-80GB", "h200_sxm": "H200-SXM-141GB", "b200_sxm": "B200",
           "b300_sxm": "B300", "gb200": "GB200", "gb300": "GB300", "l40s": "L40S",
           "rtx_pro_6000_server": "RTX-PRO-6000-Server"}


def test_the_catalogue_counts_the_state_as_the_config_gives_it():
    model = catalog.model("Qwen3.5-397B-A17B")
    assert model.n_linear_attention_layers == LAYERS
    assert model.state_bytes_per_sequence == LAYERS * STATE_PER_LAYER == 192_061_440


def _shares():
    """Per (system, engine, tensor-parallel degree, batch): the share of the GPU's datasheet
    bandwidth at which the measured decode kernels of one layer read and write its state."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    aic = pytest.importorskip("aiconfigurator_core")
    root = pathlib.Path(aic.__file__).parent / "systems" / "data"
    shares = {}
    for system, name in SYSTEMS.items():
        bandwidth = catalog.gpu(name).hbm_bandwidth
        for engine in ("vllm", "sglang"):
            for path in sorted((root / system / "linear_attention" / engine).glob(
                    "*/gdn_perf.parquet")):
                table = pd.read_parquet(path)
                table = table[(table.model_name == "Qwen/Qwen3.5-397B-A17B")
                              & (table.phase == "generation")]
                for tp in (1, 2):
                    rows = table[table.num_v_heads == V_HEADS // tp]
                    seconds = rows.groupby("batch_size").latency.sum() * 1e-3   # ms -> s
                    for batch in (64, 256):
                        if batch in seconds.index:
                            moved = 2 * STATE_PER_LAYER / tp * batch           # read + write
                            shares[(system, engine, path.parent.name, tp, batch)] = (
                                moved / seconds[batch] / bandwidth)
    if not shares:
        pytest.skip("aiconfigurator-core has no Gated DeltaNet tables")
    return shares


def test_the_decode_kernels_read_and_write_the_whole_state_each_token():
    """Over 64 points (8 GPUs, two engines, TP 1 and 2, 64 and 256 sequences) the kernels move
    the state twice at a median 78 % of the datasheet bandwidth (the profiles' bandwidth
    efficiencies are 0.76-0.86); one pass would need a median 156 %, beyond any GPU, so the
    step's two passes are what the engines run."""
    shares = _shares()
    values = np.array(list(shares.values()))
    assert len(values) >= 60
    assert 0.70 <= float(np.median(values)) <= 0.90
    # three of 64 stray: on the RTX PRO 6000 at TP 2 and 64 sequences the 134 MB a layer
    # nearly fits its 128 MB L2, which a kernel timed again and again on one operand reads
    # from (122 and 142 %); H200 SGLang at TP 2 and 256 sequences is 31 %, where its TP 1 and
    # vLLM's are 73-84 %
    stray = {k for k, v in shares.items() if not 0.6 < v <= 1.0}
    assert stray <= {("rtx_pro_6000_server", "vllm", "0.24.0", 2, 64),
                     ("rtx_pro_6000_server", "sglang", "0.5.14", 2, 64),
                     ("h200_sxm", "sglang", "0.5.14", 2, 256)}
