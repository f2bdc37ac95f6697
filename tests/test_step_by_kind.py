"""The step model reads a model's weight groups in their own formats and attends only in the
layers with a KV cache (hybrid models), and is unchanged, to the bit, for every other model."""

import json
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import roofline

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
H100 = rk.catalog.gpu("H100-SXM-80GB")


def _cost(model):
    return roofline.step_cost_coefficients(model, H100, engine=rk.IDEAL)


def test_gpt_oss_reads_its_experts_in_mxfp4():
    """A decode step reads the body and LM head in bf16 and k routed experts in MXFP4: the same
    bytes as the model's active weights less the input table (looked up, not read whole)."""
    m = rk.ModelShape.from_hf_config(CONFIGS / "gpt-oss-120b.json")
    c = _cost(m)
    k = m.n_experts_per_token
    read = c.nonexpert_weight_bytes + k * c.expert_weight_bytes
    looked_up = m.input_embedding_params * m.bytes_per_embedding_param
    assert read == pytest.approx(m.active_weight_bytes - looked_up, rel=1e-12)
    assert c.expert_weight_bytes == pytest.approx(
        m.expert_params / m.n_experts * m.bytes_per_expert_param, rel=1e-12)
    # the uniform 0.5 B/param the format's name says would read 2.1 GB less per token
    uniform = _cost(m.replace(bytes_per_param=0.5))
    assert read > uniform.nonexpert_weight_bytes + k * uniform.expert_weight_bytes + 2e9


def test_a_hybrid_attends_in_its_attention_layers_only():
    """Qwen3-Next: 48 layers, full attention every 4th (12), 16 query heads of 256: attention
    FLOPs per (query, cached token) pair 4 · 16 · 256 · 12, all of it full attention."""
    config = json.loads((CONFIGS / "qwen3-next-80b-a3b-instruct.json").read_text())
    layers = config["num_hidden_layers"] // config["full_attention_interval"]
    c = _cost(rk.ModelShape.from_hf_config(CONFIGS / "qwen3-next-80b-a3b-instruct.json"))
    assert c.attention_flops_per_pair == 4 * config["num_attention_heads"] * config["head_dim"] \
        * layers == 196_608
    assert c.full_attention_fraction == 1.0


@pytest.mark.parametrize("name", ["Llama-3.1-8B", "Llama-3.1-70B", "Mixtral-8x7B"])
def test_a_model_without_groups_is_timed_as_before(name):
    """Giving every group the model's own format takes the ungrouped path: the same step."""
    m = rk.catalog.model(name)
    same = m.replace(body_bytes_per_param=m.bytes_per_param,
                     expert_bytes_per_param=m.bytes_per_param,
                     embedding_bytes_per_param=m.bytes_per_param)
    assert _cost(same) == _cost(m)
    assert roofline.decode_step_time(same, H100, 8, 1000, engine=rk.IDEAL) == \
        roofline.decode_step_time(m, H100, 8, 1000, engine=rk.IDEAL)


def test_a_config_file_named_for_its_model_gives_the_model_its_name():
    """``.../gpt-oss-120b.json`` is "gpt-oss-120b" (its folder, tests/data/hf_configs, names
    nothing); a download's ``.../Llama-3.1-8B/config.json`` keeps its folder's name."""
    assert rk.catalog.resolve_model(str(CONFIGS / "gpt-oss-120b.json")).name == "gpt-oss-120b"


def test_gpt_oss_120b_plans_on_one_h100(capsys):
    """Issue 29's must-hold: the plan of gpt-oss-120b (MXFP4 experts) fits one H100 at TP 1."""
    from rooflinekit.cli.main import main
    assert main(["plan", str(CONFIGS / "gpt-oss-120b.json"), "--gpus", "h100", "--rate", "2",
                 "--prompt-mean", "1000", "--output-mean", "200", "--ttft", "1", "--itl",
                 "0.05", "--replicates", "2", "--requests", "60", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["configurations"]
    assert rows[0]["gpu"] == "H100-SXM-80GB" and rows[0]["tp"] == 1 and rows[0]["gpus"] >= 1
    assert rows[0]["binding"] not in ("does_not_fit", "invalid_layout")


@pytest.mark.parametrize("gpu, fp8", [("H100-SXM-80GB", True), ("H200-SXM-141GB", True),
                                      ("A100-SXM-80GB", False)])
def test_one_byte_weights_multiply_on_fp8_tensor_cores_where_the_gpu_has_them(gpu, fp8):
    """An FP8 checkpoint runs W8A8 (vLLM, SGLang, TensorRT-LLM on Hopper and later; calibrate
    fits FP8 rows so): the step's GEMM peak is the GPU's FP8 dense peak, its 16-bit one on a GPU
    without FP8 (A100) and for every other format; an engine that names its format wins."""
    spec = rk.catalog.gpu(gpu)
    fp8_model = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param="fp8")
    c = roofline.step_cost_coefficients(fp8_model, spec, engine=rk.IDEAL)
    assert c.peak_flops == (spec.peak_flops_by_dtype["fp8"] if fp8 else spec.peak_flops)
    assert (spec.peak_flops_by_dtype.get("fp8", 0) > spec.peak_flops) == fp8
    for other in ("bf16", "int4"):
        m = rk.catalog.model("Llama-3.1-70B").replace(bytes_per_param=other)
        assert roofline.step_cost_coefficients(m, spec, engine=rk.IDEAL).peak_flops == \
            spec.peak_flops
    widened = roofline.step_cost_coefficients(fp8_model, spec,
                                              engine=rk.IDEAL.replace(compute_dtype="bf16"))
    assert widened.peak_flops == spec.flops_for("bf16")


def test_python_takes_what_the_cli_takes():
    """``plan(models=<config path>)`` reads the file, as ``rooflinekit plan <path>`` does
    (it said "unknown model"), and names the model after the file."""
    plan = rk.plan(rk.Traffic(1.0, 100, 10), rk.SLO(ttft=1.0),
                   models=str(CONFIGS / "gpt-oss-20b.json"), gpus="H100-SXM-80GB",
                   replicates=1, requests=20, max_num_batched_tokens="auto")
    assert list(plan["model"].values) == ["gpt-oss-20b"]
    curve = rk.planning.load_curve(rk.Traffic(1.0, 100, 10), rk.SLO(ttft=1.0),
                                   model=str(CONFIGS / "gpt-oss-20b.json"), gpu="H100-SXM-80GB",
                                   rates=[1.0], replicates=1, requests=20)
    assert curve.attrs["model"] == "gpt-oss-20b"


def test_a_window_above_the_context_is_refused_naming_the_field():
    """Issue 29's bad configs: a sliding window longer than max_position_embeddings."""
    config = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
    config["sliding_window"] = config["max_position_embeddings"] + 1
    with pytest.raises(ValueError, match="'sliding_window' .* exceeds 'max_position_embeddings'"):
        rk.ModelShape.from_hf_config(config)
