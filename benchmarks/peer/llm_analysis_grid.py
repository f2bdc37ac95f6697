"""Time llm-analysis's `infer` once per configuration over the 1,152-cell grid.

Runs in the peer's own virtual environment (it does not import rooflinekit); see README.md.
Prints one JSON object: configurations, seconds, configurations per second, and how many
configurations llm-analysis rejected (its `assert` that the model fits), which are counted as
evaluated: rejecting a configuration is an answer too.

The grid matches benchmarks/sweep.py's 1,152 cells: llm-analysis's bundled configs of Llama-2-70B
(upstage_Llama-2-70b-instruct-v2) and Llama-2-7B (NousResearch_Llama-2-7b-hf); a100-sxm-40gb,
a100-sxm-80gb, h100-sxm-80gb; tp 1, 2, 4, 8; seq_len 128 ... 4096; batch 1 ... 128; one token
generated (the cheapest `infer` call: one prefill and one decode step).
"""

import itertools
import json
import logging
import sys
import time

from llm_analysis.analysis import infer

MODELS = ["upstage_Llama-2-70b-instruct-v2", "NousResearch_Llama-2-7b-hf"]
GPUS = ["a100-sxm-40gb", "a100-sxm-80gb", "h100-sxm-80gb"]
TP = [1, 2, 4, 8]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128]


def run():
    configs = list(itertools.product(MODELS, GPUS, TP, CONTEXTS, BATCHES))
    rejected = 0
    # first call outside the clock: it loads the bundled JSON configs
    infer(model_name=MODELS[1], gpu_name=GPUS[2], log_level="ERROR")
    start = time.perf_counter()
    for model, gpu, tp, ctx, batch in configs:
        try:
            infer(model_name=model, gpu_name=gpu, tp_size=tp, seq_len=ctx,
                  batch_size_per_gpu=batch, num_tokens_to_generate=1, log_level="ERROR")
        except AssertionError:
            rejected += 1
    seconds = time.perf_counter() - start
    return {"tool": "llm-analysis infer", "configurations": len(configs), "seconds": seconds,
            "configs_per_second": len(configs) / seconds, "rejected_do_not_fit": rejected}


if __name__ == "__main__":
    logging.disable(logging.WARNING)
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    best = min((run() for _ in range(repeat)), key=lambda r: r["seconds"])
    best["repeat"] = repeat
    print(json.dumps(best))
