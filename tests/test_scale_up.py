"""A tensor-parallel group stays within one scale-up domain (NVLink/NVSwitch, Infinity Fabric):
beyond it the all-reduces would cross the network, which the step model does not time, so every
planner refuses it and says why (issue 30: "TP 16 for an 8-KV-head model is shown at NVLink
speed"). Domains from the catalogue: HGX boards 8 GPUs, GB200/GB300 NVL72 72."""

import pytest

import rooflinekit as rk
from rooflinekit.catalog import _gpu_from_row


@pytest.mark.parametrize("gpu, domain", [("H100-SXM-80GB", 8), ("H200-SXM-141GB", 8),
                                         ("B200", 8), ("GB200", 72), ("MI300X", 8),
                                         ("L40S", None)])
def test_the_catalogue_knows_the_domains(gpu, domain):
    assert rk.catalog.gpu(gpu).scale_up_gpus == domain


def test_a_domain_without_its_source_is_refused():
    row = {"name": "x", "memory_gib": 80, "hbm_bandwidth_tb_s": 3.0,
           "dense_tflops": {"bf16": 900.0}, "source": "s", "scale_up_gpus": 8}
    with pytest.raises(ValueError, match="scale_up_gpus needs a scale_up_source"):
        _gpu_from_row(row, {})


def test_plan_marks_a_group_beyond_the_domain():
    traffic, slo = rk.Traffic(1.0, 500, 50), rk.SLO(ttft=5.0)
    model = rk.catalog.model("Llama-3.1-405B").replace(bytes_per_param="fp8")
    plan = rk.plan(traffic, slo, models=model, gpus=["H100-SXM-80GB", "GB200"], tp=[8, 16],
                   replicates=2, requests=40, max_num_batched_tokens="auto",
                   prices={"GB200": 6.0}).squeeze("model")
    assert str(plan["binding"].sel(gpu="H100-SXM-80GB", tp=16).values) == "beyond_scale_up"
    assert int(plan["gpus"].sel(gpu="H100-SXM-80GB", tp=16)) == 0
    assert str(plan["binding"].sel(gpu="GB200", tp=16).values) != "beyond_scale_up"
    assert float(plan["max_rate"].sel(gpu="GB200", tp=16)) > 0


def test_the_sweep_and_layouts_keep_tp_within_the_domain():
    model = rk.catalog.model("Llama-3.1-405B").replace(bytes_per_param="fp8")
    ds = rk.sweep.sweep([model], ["H100-SXM-80GB", "GB200"], tp=[16], context_length=[1024],
                        batch_size=[1], engine="ideal").squeeze()
    assert not bool(ds["fits"].sel(gpu="H100-SXM-80GB"))
    assert bool(ds["fits"].sel(gpu="GB200"))
    layouts = rk.roofline.layouts(model, rk.catalog.gpu("H100-SXM-80GB"), 16, batch_size=8,
                                  context_length=1024,
                                  max_tp=16)
    assert int(layouts["tp"].max()) == 8


def test_capacity_refuses_tp_beyond_the_domain(capsys):
    from rooflinekit.cli.main import main
    assert main(["capacity", "llama-3.1-405b", "h100", "--tp", "16"]) == 2
    err = capsys.readouterr().err
    assert "--tensor-parallel-size 16 is more than one scale-up domain of H100-SXM-80GB (8 GPUs" \
        in err and err.count("\n") == 1
