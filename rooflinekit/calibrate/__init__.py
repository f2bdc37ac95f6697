"""Calibration against measured runs: the measurement format, engine logs, the fit.

- :mod:`~rooflinekit.calibrate.measurements`: the measurement table, its checks and its own
  CSV/JSON files;
- :mod:`~rooflinekit.calibrate.readers`: engine benchmark outputs (``vllm bench serve`` and
  ``vllm bench latency`` results, GuideLLM, ``trtllm-bench``) as measurement rows;
- :mod:`~rooflinekit.calibrate.engine_log`: vLLM's and SGLang's start-up KV logs beside our
  budget;
- :mod:`~rooflinekit.calibrate.model`: :class:`Calibration` (fitted knobs) and :func:`predict`;
- :mod:`~rooflinekit.calibrate.fit`: :func:`calibrate` and :func:`cross_validate`.
"""

from rooflinekit.calibrate.engine_log import (
                                       ENGINES,
                                       compare_engine_log,
                                       parse_sglang_kv_log,
                                       parse_vllm_kv_log,
)
from rooflinekit.calibrate.fit import (
                                       DEFAULT_BOUNDS,
                                       ENGINE_FIT,
                                       FOLD,
                                       GROUP_KNOBS,
                                       MAX_RESAMPLES,
                                       CalibrationResult,
                                       CrossValidationResult,
                                       calibrate,
                                       cross_validate,
)
from rooflinekit.calibrate.measurements import (
                                       MEASUREMENT,
                                       MEASUREMENT_COLUMNS,
                                       REQUIRED_COLUMNS,
                                       TTFT_KINDS,
                                       concat_measurements,
                                       measured_engine,
                                       measurements_from_records,
                                       measurements_to_records,
                                       read_measurements,
                                       write_measurements,
)
from rooflinekit.calibrate.model import (
                                       ENGINE_KNOBS,
                                       GROUP_FIELDS,
                                       IDEAL,
                                       KNOBS,
                                       LINK_KNOBS,
                                       PARAMETER,
                                       PARAMETERS,
                                       PHASE,
                                       PHASES,
                                       WORKLOADS,
                                       Calibration,
                                       load_calibration,
                                       predict,
                                       save_calibration,
)
from rooflinekit.calibrate.readers import (
                                       MAX_REPORT_BYTES,
                                       read_guidellm_report,
                                       read_trtllm_bench,
                                       read_vllm_latency,
                                       read_vllm_result,
                                       read_vllm_serve_sweep,
                                       read_guidellm_sweep,
                                       recorded_model,
)

__all__ = [
    "MEASUREMENT", "PHASE", "PARAMETER", "FOLD", "PHASES", "PARAMETERS", "MEASUREMENT_COLUMNS",
    "REQUIRED_COLUMNS", "DEFAULT_BOUNDS", "IDEAL", "TTFT_KINDS", "KNOBS", "ENGINE_KNOBS",
    "LINK_KNOBS", "ENGINE_FIT", "GROUP_KNOBS", "GROUP_FIELDS", "WORKLOADS",
    "measurements_from_records", "measurements_to_records", "read_measurements",
    "write_measurements", "read_vllm_result", "concat_measurements", "measured_engine",
    "Calibration", "CalibrationResult", "CrossValidationResult",
    "predict", "calibrate", "cross_validate", "save_calibration", "load_calibration",
    "parse_vllm_kv_log", "compare_engine_log", "MAX_RESAMPLES",
    "parse_sglang_kv_log", "ENGINES", "read_vllm_latency", "read_guidellm_report",
    "read_trtllm_bench", "MAX_REPORT_BYTES", "read_vllm_serve_sweep",
    "read_guidellm_sweep", "recorded_model"]
