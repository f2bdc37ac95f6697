"""Hostile files given to every reader: special files, huge counts, YAML aliases and nesting,
oversized documents, numbers beyond float range, string booleans, odd quantization widths,
other encodings and wrong-typed fields (issue 31, rows 2, 3, 4, 5, 10, 11, 21, 22 and 31).

Each reader refuses with one ``ValueError``/``TypeError`` that names the file and the field,
before any heavy work, and every command exits 2 with one line. Cases that exhausted memory or
hung before the fix run in a child process whose address space is capped
(:data:`CHILD_EXTRA_BYTES` above what the import takes) and whose every case has an alarm, so
that a regression fails here instead of taking the machine with it; a FIFO is unblocked by a
writer after a few seconds for the same reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

import rooflinekit as rk
from rooflinekit import _validation, calibrate, catalog, hf_config
from rooflinekit.cli._args import load_engine
from rooflinekit.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "hf_configs"
PUBLIC_CSV = DATA / "measurements" / "public.csv"
GUIDELLM = DATA / "engine_outputs" / "guidellm_report.json"
VLLM_RESULT = DATA / "measurements" / "vllm_result_lambda_h100_llama3_8b.json"
WHERE = {"model": "llama-3.1-8b", "gpu": "H100-SXM-80GB"}

#: How much memory the child running the formerly fatal cases may take beyond its imports.
CHILD_EXTRA_BYTES = 1536 * 2**20

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/null")
# the child caps its address space (RLIMIT_AS) and reads /proc: Linux
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_AS")


def _cfg(name="llama-3.1-8b") -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


# Every reader of a file, by the file name it expects (the suffix picks the format).
READERS = {
    "load_hf_config": ("config.json", hf_config.load_hf_config),
    "from_hf_config": ("config.json", rk.ModelShape.from_hf_config),
    "resolve_model": ("config.json", catalog.resolve_model),
    "read_measurements csv": ("runs.csv", calibrate.read_measurements),
    "read_measurements json": ("runs.json", calibrate.read_measurements),
    "load_calibration": ("calibration.json", calibrate.load_calibration),
    "load_engine": ("engine.json", load_engine),
    "read_vllm_result": ("result.json", lambda p: calibrate.read_vllm_result(p, **WHERE)),
    "read_vllm_latency": ("latency.json", lambda p: calibrate.read_vllm_latency(
        p, batch_size=8, prompt_tokens=1024, output_tokens=1, **WHERE)),
    "read_guidellm_report json": ("report.json",
                                  lambda p: calibrate.read_guidellm_report(p, **WHERE)),
    "read_guidellm_report yaml": ("report.yaml",
                                  lambda p: calibrate.read_guidellm_report(p, **WHERE)),
    "read_trtllm_bench": ("report.json", lambda p: calibrate.read_trtllm_bench(p, **WHERE)),
}


def _exit_code(argv, capsys):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    return code, err


def _one_line_error(code, err):
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err


class _Unblocker:
    """Opens ``fifo`` for writing, again and again, until stopped: a reader blocked in
    ``open()`` on it is released (and reads an empty file) instead of hanging the test run."""

    def __init__(self, fifo: Path, after: float = 3.0):
        self.fifo, self.after, self.stop = fifo, after, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        if self.stop.wait(self.after):
            return
        while not self.stop.is_set():
            try:
                os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass                                    # no reader yet
            self.stop.wait(0.2)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def _special(kind: str, folder: Path, name: str) -> Path:
    """A file called ``name`` in ``folder`` that is not a regular file."""
    path = folder / name
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        os.symlink(os.devnull, path)          # a symlink to a character device
    elif kind == "directory":
        path.mkdir()
        if name == "config.json":
            (path / "config.json").mkdir()    # a model folder whose config.json is a folder
    return path


# -- row 2: special files ----------------------------------------------------------------------

@posix_only
@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_a_special_file_naming_it(reader, kind, tmp_path):
    name, read = READERS[reader]
    path = _special(kind, tmp_path, name)
    with _Unblocker(path if kind == "fifo" else tmp_path / "none"):
        with pytest.raises(ValueError, match="not a regular file") as info:
            read(path)
    assert str(path) in str(info.value)


@posix_only
def test_a_symlink_to_a_regular_file_reads_as_the_file(tmp_path):
    link = tmp_path / "config.json"
    os.symlink(CONFIGS / "llama-3.1-8b.json", link)
    assert hf_config.load_hf_config(link) == _cfg()
    runs = tmp_path / "runs.csv"
    os.symlink(PUBLIC_CSV, runs)
    assert calibrate.read_measurements(runs).equals(calibrate.read_measurements(PUBLIC_CSV))


@posix_only
def test_read_regular_file_states_what_it_refuses(tmp_path):
    fifo = _special("fifo", tmp_path, "x.json")
    with pytest.raises(ValueError, match=r"x\.json.*not a regular file \(a FIFO\)"):
        _validation.read_regular_file(fifo, "test file", 100)
    with pytest.raises(ValueError, match=r"not a regular file \(a character device\)"):
        _validation.read_regular_file(os.devnull, "test file", 100)
    with pytest.raises(ValueError, match=r"not a regular file \(a directory\)"):
        _validation.read_regular_file(tmp_path, "test file", 100)
    with pytest.raises(FileNotFoundError):
        _validation.read_regular_file(tmp_path / "missing.json", "test file", 100)
    with pytest.raises(TypeError, match="path"):
        _validation.read_regular_file(3, "test file", 100)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    with pytest.raises(ValueError, match=r"big\.json.*101 bytes.*at most 100 bytes"):
        _validation.read_regular_file(big, "test file", 100)


@posix_only
@pytest.mark.parametrize("command", [
    ["capacity", "{config.json}", "h100", "--tp", "1"],
    ["calibrate", "{runs.csv}", "--resamples", "2"],
    ["calibrate", "--vllm-result", "{result.json}", "--model", "llama-3.1-8b", "--gpu", "h100"],
    ["calibrate", "--from", "guidellm", "{report.yaml}", "--model", "llama-3.1-8b",
     "--gpu", "h100"],
    ["calibrate", PUBLIC_CSV, "--model-config", "mine={config.json}", "--resamples", "2"],
    ["simulate", "--model", "llama-3.1-8b", "--gpu", "h100", "--engine", "{engine.json}"],
])
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_commands_refuse_a_special_file_in_one_line(command, kind, tmp_path, capsys):
    argv, special = [], None
    for arg in command:
        text = str(arg)
        if "{" in text:
            head, _, rest = text.partition("{")
            name = rest.rstrip("}")
            special = _special(kind, tmp_path, name)
            text = head + str(special)
        argv.append(text)
    with _Unblocker(special if kind == "fifo" else tmp_path / "none"):
        code, err = _exit_code(argv, capsys)
    _one_line_error(code, err)
    assert str(special) in err and "not a regular file" in err, err


# -- cases that ran out of memory or hung: run in a capped child --------------------------------

_CHILD = r'''
import json, os, resource, signal, sys
import rooflinekit as rk
from rooflinekit import calibrate, hf_config
from rooflinekit.cli._args import load_engine
from rooflinekit.cli.main import main

cases, tmp, extra = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with open("/proc/self/status") as fh:
    vm = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + extra, vm + extra))

class Alarm(BaseException):
    pass

def ring(*_):
    raise Alarm("took more than 60 s")

signal.signal(signal.SIGALRM, ring)
WHERE = {"model": "llama-3.1-8b", "gpu": "H100-SXM-80GB"}
results = {}
for name, code in cases.items():
    signal.alarm(60)
    try:
        exec(code, {"rk": rk, "calibrate": calibrate, "hf_config": hf_config, "main": main,
                    "load_engine": load_engine, "tmp": tmp, "WHERE": WHERE, "json": json,
                    "os": os})
        results[name] = ["returned", ""]
    except BaseException as exc:
        results[name] = [type(exc).__name__, str(exc)[:2000]]
    finally:
        signal.alarm(0)
print(json.dumps(results))
'''

# a command run in the child: its exit code and stderr, as a ValueError when it exits 2 in one line
_MAIN = ("import contextlib, io\nbuf = io.StringIO()\n"
         "with contextlib.redirect_stderr(buf):\n    code = main({argv})\n"
         "err = buf.getvalue()\n"
         "assert code == 2 and err.count(chr(10)) == 1 and 'Traceback' not in err, (code, err)\n"
         "raise ValueError(err)\n")
_ZERO = "p = os.path.join(tmp, {name!r}); os.path.lexists(p) or os.symlink('/dev/zero', p)\n"
_LAYERS = ("cfg = json.load(open({config!r})); cfg['num_hidden_layers'] = 10**9\n"
           "json.dump(cfg, open(os.path.join(tmp, 'deep.json'), 'w'))\n")
_BOMB = textwrap.dedent("""\
    a: &a [x, x, x, x, x, x, x, x, x]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
    i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
    benchmarks: [*i]
    """)

#: name -> (code run in the child, what its ValueError must say besides the file name).
LIMITED = {
    # row 2: /dev/zero behind a symlink, for every file input
    **{f"dev/zero {reader}": (
        _ZERO.format(name=f"zero-{i}-{READERS[reader][0]}")
        + f"p = os.path.join(tmp, 'zero-{i}-{READERS[reader][0]}')\n" + call,
        "not a regular file")
       for i, (reader, call) in enumerate({
           "load_hf_config": "hf_config.load_hf_config(p)",
           "from_hf_config": "rk.ModelShape.from_hf_config(p)",
           "read_measurements csv": "calibrate.read_measurements(p)",
           "read_measurements json": "calibrate.read_measurements(p)",
           "load_calibration": "calibrate.load_calibration(p)",
           "load_engine": "load_engine(p)",
           "read_vllm_result": "calibrate.read_vllm_result(p, **WHERE)",
           "read_guidellm_report yaml": "calibrate.read_guidellm_report(p, **WHERE)",
           "read_trtllm_bench": "calibrate.read_trtllm_bench(p, **WHERE)",
       }.items())},
    "dev/zero capacity": (
        _ZERO.format(name="c.json") + "p = os.path.join(tmp, 'c.json')\n"
        + _MAIN.format(argv="['capacity', p, 'h100']"), "not a regular file"),
    # row 3: a billion layers allocated a list per layer
    "num_hidden_layers 1e9": (
        _LAYERS.format(config=str(CONFIGS / "llama-3.1-8b.json"))
        + "p = os.path.join(tmp, 'deep.json')\nrk.ModelShape.from_hf_config(p)\n",
        "num_hidden_layers"),
    "num_hidden_layers 1e9 capacity": (
        _LAYERS.format(config=str(CONFIGS / "llama-3.1-8b.json"))
        + "p = os.path.join(tmp, 'deep.json')\n" + _MAIN.format(argv="['capacity', p, 'h100']"),
        "num_hidden_layers"),
    # row 4: 561 bytes of YAML aliases, whose repr in a message is 8 GB
    "yaml alias bomb": (
        f"p = os.path.join(tmp, 'bomb.yaml'); open(p, 'w').write({_BOMB!r})\n"
        "calibrate.read_guidellm_report(p, **WHERE)\n", "alias"),
    "yaml alias bomb via the CLI": (
        f"p = os.path.join(tmp, 'bomb2.yaml'); open(p, 'w').write({_BOMB!r})\n"
        + _MAIN.format(argv="['calibrate', '--from', 'guidellm', p, '--model', "
                            "'llama-3.1-8b', '--gpu', 'h100']"),
        "alias"),
    "show of shared lists": (
        "from rooflinekit._validation import show, describe\nbomb = ['x'] * 9\n"
        "for _ in range(12):\n    bomb = [bomb] * 9\n"
        "shown, described = show(bomb), describe(bomb)\n"
        "assert len(shown) <= 80 and len(described) <= 90, (shown, described)\n"
        "raise ValueError('shown bounded: ' + shown)\n", "shown bounded"),
    # row 5: a JSON report of empty objects, 24x its size once parsed
    "json of empty objects": (
        "p = os.path.join(tmp, 'empty.json')\n"
        "open(p, 'w').write('{\"benchmarks\": [' + '{},' * (22 * 2**20) + '{}]}')\n"
        "calibrate.read_guidellm_report(p, **WHERE)\n", "elements"),
}


@pytest.fixture(scope="module")
def limited_results(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("limited")
    cases = {name: code for name, (code, _) in LIMITED.items()}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases), str(tmp),
                           str(CHILD_EXTRA_BYTES)], capture_output=True, text=True,
                          timeout=900, env=env)
    for path in tmp.iterdir():            # the large files go at once
        path.unlink()
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@linux_only
@pytest.mark.parametrize("case", sorted(LIMITED))
def test_formerly_fatal_files_are_refused_within_bounded_memory(case, limited_results):
    kind, message = limited_results[case]
    assert kind == "ValueError", (kind, message[:500])
    assert LIMITED[case][1] in message, message[:500]
    assert len(message) < 1000, message[:500]


# -- row 3: counts that would be allocated per layer -------------------------------------------

@pytest.mark.parametrize("layers", [2**53, 10**6])
def test_a_config_with_more_layers_than_any_model_is_refused_naming_the_field(layers, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(_cfg(), num_hidden_layers=layers)), encoding="utf-8")
    with pytest.raises(ValueError, match="num_hidden_layers") as info:
        rk.ModelShape.from_hf_config(path)
    assert str(path) in str(info.value)
    with pytest.raises(ValueError, match="num_hidden_layers"):
        hf_config.count_params(dict(_cfg(), num_hidden_layers=layers))


def test_model_shape_bounds_its_layer_count():
    from rooflinekit.models import MAX_LAYERS
    fields = dict(name="x", n_layers=MAX_LAYERS, n_heads=8, n_kv_heads=8, head_dim=64,
                  n_params=1e9)
    assert rk.ModelShape(**fields).n_layers == MAX_LAYERS
    with pytest.raises(ValueError, match=r"n_layers must be at most"):
        rk.ModelShape(**dict(fields, n_layers=MAX_LAYERS + 1))


# -- row 4: YAML aliases; bounded messages -----------------------------------------------------

def test_yaml_aliases_are_refused_naming_the_file_and_line(tmp_path):
    path = tmp_path / "report.yaml"
    path.write_text("a: &x [1]\nbenchmarks: *x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2.*alias") as info:
        calibrate.read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


def test_show_is_bounded_for_shared_and_nested_structures():
    # (the 9**13-element structure of shared lists is shown in the capped child: LIMITED)
    deep = []
    for _ in range(100_000):
        deep = [deep]
    assert len(_validation.show(deep)) <= 80
    assert len(_validation.show(10**5000)) <= 80
    assert len(_validation.show({"a" * 10**6: 1})) <= 80
    # small values are shown exactly as their repr
    for value in ([1, 2.5, "a"], {"a": [1, (2,)]}, (1,), "x'y", None, 3, {1, 2}, frozenset(),
                  [], {}, ()):
        assert _validation.show(value) == repr(value)


# -- row 5: a bound on elements parsed ---------------------------------------------------------

def test_json_with_more_elements_than_allowed_is_refused_before_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(_validation, "MAX_JSON_ELEMENTS", 1000)
    path = tmp_path / "report.json"
    path.write_text('{"benchmarks": [' + "{}," * 2000 + "{}]}", encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than 1,000 JSON elements") as info:
        calibrate.read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)
    # commas, brackets and colons inside strings are not elements
    text = json.dumps({"benchmarks": [], "notes": "[{,:}]" * 5000})
    assert _validation.parse_json(text, "x") == json.loads(text)


def test_yaml_with_more_nodes_than_allowed_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(_validation, "MAX_YAML_NODES", 1000)
    path = tmp_path / "report.yaml"
    path.write_text("benchmarks:\n" + "- {}\n" * 2000, encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than 1,000 nodes") as info:
        calibrate.read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


def test_measurement_files_are_bounded_in_rows(tmp_path, monkeypatch):
    from rooflinekit.calibrate import measurements
    monkeypatch.setattr(measurements, "MAX_MEASUREMENT_ROWS", 3)
    header, *rows = [line for line in PUBLIC_CSV.read_text(encoding="utf-8").splitlines()
                     if not line.startswith("#")]
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, *rows[:4]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than 3 rows") as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value)
    as_json = tmp_path / "runs.json"
    as_json.write_text(json.dumps([{"model": "m"}] * 4), encoding="utf-8")
    with pytest.raises(ValueError, match=r"more than 3 rows"):
        calibrate.read_measurements(as_json)


# -- row 10: numbers beyond float range --------------------------------------------------------

HUGE = "9" * 400


def _vllm_result(**changes):
    data = json.loads(VLLM_RESULT.read_text(encoding="utf-8"))
    data.update(changes)
    return data


@pytest.mark.parametrize("number", [HUGE, "1e999", "-" + HUGE], ids=["400 digits", "1e999",
                                                                  "-400 digits"])
@pytest.mark.parametrize("case", ["vllm result completed", "vllm result ttft",
                                  "vllm latency", "guidellm ttft", "trtllm ttft",
                                  "measurement json", "calibration knob", "engine field",
                                  "quantization bits", "config hidden_size"])
def test_numbers_beyond_float_range_are_refused_naming_file_and_field(case, number, tmp_path):
    path = tmp_path / "file.json"
    if case == "vllm result completed":
        text, field, read = json.dumps(_vllm_result()).replace(
            '"completed": 10,', f'"completed": {number},'), "completed", \
            lambda p: calibrate.read_vllm_result(p, **WHERE)
    elif case == "vllm result ttft":
        data = _vllm_result()
        text = json.dumps(data).replace(f'"median_ttft_ms": {json.dumps(data["median_ttft_ms"])}',
                                        f'"median_ttft_ms": {number}')
        field, read = "median_ttft_ms", lambda p: calibrate.read_vllm_result(p, **WHERE)
    elif case == "vllm latency":
        text, field = '{"avg_latency": 1.0, "percentiles": {"50": %s}}' % number, \
            "percentiles.50"
        read = lambda p: calibrate.read_vllm_latency(  # noqa: E731
            p, batch_size=8, prompt_tokens=1024, output_tokens=1, **WHERE)
    elif case == "guidellm ttft":
        data = json.loads(GUIDELLM.read_text(encoding="utf-8"))
        data["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["median"] = \
            123456789
        text = json.dumps(data).replace("123456789", number)
        field, read = "time_to_first_token_ms", \
            lambda p: calibrate.read_guidellm_report(p, **WHERE)
    elif case == "trtllm ttft":
        data = json.loads((DATA / "engine_outputs" / "trtllm_bench_report.json")
                          .read_text(encoding="utf-8"))
        data["streaming_metrics"]["ttft_percentiles"]["p50"] = 123456789
        text = json.dumps(data).replace("123456789", number)
        field, read = "ttft_percentiles", lambda p: calibrate.read_trtllm_bench(p, **WHERE)
    elif case == "measurement json":
        row = {"model": "m", "gpu": "g", "tp": 1, "batch_size": 1, "prompt_tokens": 10,
               "output_tokens": 10, "ttft_ms": 0, "source": "s"}
        text = json.dumps([row]).replace('"ttft_ms": 0', f'"ttft_ms": {number}')
        path = tmp_path / "runs.json"
        field, read = "ttft_ms", calibrate.read_measurements
    elif case == "calibration knob":
        text = '{"prefill": {"compute_efficiency": %s}, "decode": {}}' % number
        field, read = "compute_efficiency", calibrate.load_calibration
    elif case == "engine field":
        text, field, read = '{"step_overhead": %s}' % number, "step_overhead", load_engine
    elif case == "quantization bits":
        text = json.dumps(dict(_cfg(), quantization_config={"quant_method": "gptq", "bits": 0}))
        text = text.replace('"bits": 0', f'"bits": {number}')
        field, read = "bits", rk.ModelShape.from_hf_config
    else:
        text = json.dumps(dict(_cfg(), hidden_size=0)).replace('"hidden_size": 0',
                                                                f'"hidden_size": {number}')
        field, read = "hidden_size", rk.ModelShape.from_hf_config
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=field) as info:
        read(path)
    assert str(path) in str(info.value)
    assert len(str(info.value)) < len(str(path)) + 400


@pytest.mark.parametrize("number", [HUGE, "1.0e+999"], ids=["400 digits", "1e999"])
def test_yaml_numbers_beyond_float_range_are_refused(number, tmp_path):
    yaml = pytest.importorskip("yaml")
    data = json.loads(GUIDELLM.read_text(encoding="utf-8"))
    data["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["median"] = \
        123456789
    text = yaml.safe_dump(data).replace("123456789", number)
    path = tmp_path / "report.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="time_to_first_token_ms") as info:
        calibrate.read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


def test_real_number_refuses_integers_beyond_float_range():
    with pytest.raises(ValueError, match="at most 1e\\+30"):
        _validation.real_number("x", 10**400)
    with pytest.raises(ValueError, match="at most 1e\\+30"):
        _validation.check_range("x", 10**400)


# -- row 11: CSV fields and YAML nesting beyond the parsers' limits ----------------------------

def test_a_csv_field_longer_than_the_parser_takes_is_refused_naming_the_line(tmp_path):
    header, first = [line for line in PUBLIC_CSV.read_text(encoding="utf-8").splitlines()
                     if not line.startswith("#")][:2]
    path = tmp_path / "runs.csv"
    path.write_text(f'{header}\n{first}\nm,g,1,,1,1,1,,1,,,,"{"x" * 200_000}",\n',
                    encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 3.*131,072") as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value) and len(str(info.value)) < len(str(path)) + 300


def test_a_csv_with_a_nul_byte_is_refused(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(PUBLIC_CSV.read_bytes().replace(b"Llama", b"Ll\x00ama", 1))
    with pytest.raises(ValueError, match="NUL") as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text", ["benchmarks: " + "[" * 20_000 + "]" * 20_000 + "\n",
                                  "benchmarks:\n" + "".join(" " * i + "- \n"
                                                            for i in range(0, 3000))],
                         ids=["flow", "block"])
def test_yaml_nested_beyond_any_report_is_refused(text, tmp_path):
    pytest.importorskip("yaml")
    path = tmp_path / "report.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="nest") as info:
        calibrate.read_guidellm_report(path, **WHERE)
    assert str(path) in str(info.value)


# -- row 21: booleans only as JSON booleans ----------------------------------------------------

@pytest.mark.parametrize("config, field", [
    (dict(_cfg("falcon-7b"), multi_query="false"), "multi_query"),
    (dict(_cfg("falcon-7b"), new_decoder_architecture="true"), "new_decoder_architecture"),
    (dict(_cfg("falcon-7b"), bias="false"), "bias"),
    (dict(_cfg("falcon-7b"), parallel_attn="false"), "parallel_attn"),
    (dict(_cfg("qwen2.5-7b"), use_sliding_window="false"), "use_sliding_window"),
    (dict(_cfg(), attention_bias="false"), "attention_bias"),
    (dict(_cfg(), mlp_bias=1), "mlp_bias"),
    (dict(_cfg("phi-2"), qk_layernorm="false"), "qk_layernorm"),
    (dict(_cfg(), quantization_config={"load_in_4bit": "false"}),
     "quantization_config.load_in_4bit"),
    (dict(_cfg("gemma-3-4b-it"), vision_config=dict(_cfg("gemma-3-4b-it")["vision_config"],
                                                    vision_use_head="false")),
     "vision_config.vision_use_head"),
])
def test_string_booleans_in_a_config_are_refused_naming_the_field(config, field, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(TypeError, match=f"'{field}'.*true or false") as info:
        rk.ModelShape.from_hf_config(path)
    assert str(path) in str(info.value)


def test_json_booleans_in_a_config_still_read():
    falcon = _cfg("falcon-7b")
    assert falcon["multi_query"] is True
    assert rk.ModelShape.from_hf_config(falcon).n_kv_heads == 1
    assert rk.ModelShape.from_hf_config(dict(falcon, multi_query=False)).n_kv_heads == 71
    qwen = _cfg("qwen2.5-7b")
    assert rk.ModelShape.from_hf_config(dict(qwen, use_sliding_window=None)).sliding_window \
        is None


# -- row 22: quantization widths from the real set ---------------------------------------------

@pytest.mark.parametrize("bits", [1e-300, 0.5, 1e300, 0, -4, 4.5, 16, 32])
def test_quantization_bits_outside_the_real_widths_are_refused(bits):
    config = dict(_cfg(), quantization_config={"quant_method": "gptq", "bits": bits})
    with pytest.raises(ValueError, match=r"'quantization_config\.bits'.*1, 2, 3, 4"):
        rk.ModelShape.from_hf_config(config)


@pytest.mark.parametrize("bits", ["4", True, [4]])
def test_quantization_bits_of_the_wrong_kind_are_refused(bits):
    config = dict(_cfg(), quantization_config={"quant_method": "gptq", "bits": bits})
    with pytest.raises(TypeError, match=r"'quantization_config\.bits'"):
        rk.ModelShape.from_hf_config(config)


@pytest.mark.parametrize("bits, expected", [(2, 0.25), (3, 0.375), (4, 0.5), (8, 1.0),
                                            (4.0, 0.5)])
def test_real_quantization_widths_read(bits, expected):
    config = dict(_cfg(), quantization_config={"quant_method": "gptq", "bits": bits})
    assert rk.ModelShape.from_hf_config(config).bytes_per_param == expected


def test_exl2_fractional_widths_read():
    config = dict(_cfg(), quantization_config={"quant_method": "exl2", "bits": 4.65})
    assert rk.ModelShape.from_hf_config(config).bytes_per_param == 4.65 / 8
    with pytest.raises(ValueError, match="bits"):
        rk.ModelShape.from_hf_config(
            dict(_cfg(), quantization_config={"quant_method": "exl2", "bits": 0.5}))


# -- row 31: encodings, wrong-typed fields, messages naming the right file and field -----------

def test_a_utf16_config_is_refused_saying_so(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_cfg()), encoding="utf-16")
    with pytest.raises(ValueError, match="UTF-16") as info:
        rk.ModelShape.from_hf_config(path)
    assert str(path) in str(info.value)
    bare = tmp_path / "bare.json"
    bare.write_bytes(json.dumps(_cfg()).encode("utf-16-le"))      # no byte-order mark
    with pytest.raises(ValueError, match="NUL") as info:
        rk.ModelShape.from_hf_config(bare)
    assert str(bare) in str(info.value)


def test_a_csv_with_a_byte_order_mark_reads_as_without(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_bytes(b"\xef\xbb\xbf" + PUBLIC_CSV.read_bytes())
    ds = calibrate.read_measurements(path)
    assert ds.drop_attrs().equals(calibrate.read_measurements(PUBLIC_CSV).drop_attrs())
    config = tmp_path / "config.json"
    config.write_bytes(b"\xef\xbb\xbf" + (CONFIGS / "llama-3.1-8b.json").read_bytes())
    assert hf_config.load_hf_config(config) == _cfg()


def test_a_latin1_csv_is_refused_naming_the_line(tmp_path):
    path = tmp_path / "runs.csv"
    text = PUBLIC_CSV.read_text(encoding="utf-8").replace("Llama-3.1-8B", "Llama-3.1-8B é", 3)
    path.write_bytes(text.encode("latin-1", errors="replace"))
    line = text.split("\n").index(next(s for s in text.split("\n") if "é" in s)) + 1
    with pytest.raises(ValueError, match=rf"not UTF-8 text \(line {line}") as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("change, kind, field", [
    ({"mlp_only_layers": 5}, TypeError, "mlp_only_layers"),
    ({"mlp_only_layers": ["a"]}, TypeError, "mlp_only_layers"),
    ({"layer_types": [{"a": 1}] * 32, "sliding_window": 4096}, TypeError, "layer_types"),
    ({"layer_types": "full_attention"}, ValueError, "layer_types"),
    ({"num_attention_heads": "32"}, TypeError, "num_attention_heads"),
])
def test_wrong_typed_config_fields_are_refused_naming_file_and_field(change, kind, field,
                                                                     tmp_path):
    config = dict(_cfg("qwen1.5-moe-a2.7b") if "mlp_only" in field else _cfg(), **change)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(kind, match=f"'{field}'") as info:
        rk.ModelShape.from_hf_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("section, drop", [("vision_config", "patch_size"),
                                           ("vision_config", "hidden_size"),
                                           ("audio_config", "d_model")])
def test_an_encoder_config_missing_a_field_is_named_as_the_encoders(section, drop):
    config = _cfg("gemma-3-4b-it") if section == "vision_config" else _cfg("qwen2-audio-7b")
    sub = {k: v for k, v in config[section].items() if k not in (drop, "model_type")}
    with pytest.raises(ValueError, match=rf"'{section}\.{drop}' is missing"):
        hf_config.count_params(dict(config, **{section: sub}))


@pytest.mark.parametrize("payload, match", [
    ({"measurements": 5}, "'measurements' must be a list"),
    ({"measurements": [5]}, "measurement 0: each row must be a mapping"),
    ([1, 2], "measurement 0: each row must be a mapping"),
    ("text", "list of rows"),
])
def test_a_measurement_json_of_the_wrong_shape_names_file_and_field(payload, match, tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises((TypeError, ValueError), match=match) as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("field, value", [("completed", "ten"), ("total_input_tokens", None),
                                          ("total_output_tokens", [1]),
                                          ("max_concurrency", "all"),
                                          ("median_ttft_ms", "fast"),
                                          ("request_throughput", True)])
def test_a_vllm_result_with_a_wrong_typed_field_names_file_and_field(field, value, tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(_vllm_result(**{field: value})), encoding="utf-8")
    with pytest.raises(ValueError, match=f"'{field}'") as info:
        calibrate.read_vllm_result(path, **WHERE)
    assert str(path) in str(info.value)


def test_valid_files_read_as_before():
    # the readers' results on the package's own files, unchanged by the bounded reader
    a = calibrate.read_measurements(PUBLIC_CSV)
    with PUBLIC_CSV.open(encoding="utf-8") as fh:
        import csv
        rows = list(csv.DictReader(r for r in fh if not r.lstrip().startswith("#")))
    b = calibrate.measurements_from_records(rows)
    assert a.attrs.pop("file") == str(PUBLIC_CSV)
    assert a.identical(b)
    path, mapping = (calibrate.read_vllm_result(r, **WHERE)
                     for r in (VLLM_RESULT, json.loads(VLLM_RESULT.read_text())))
    path.attrs.pop("file", None)
    assert path.drop_vars("source").identical(mapping.drop_vars("source"))


def test_a_measurement_row_of_many_unknown_columns_is_named_in_a_bounded_message(tmp_path):
    row = {"model": "m", "gpu": "g", "tp": 1, "batch_size": 1, "prompt_tokens": 10,
           "output_tokens": 10, "ttft_ms": 1, "source": "s",
           **{f"{'x' * 1000}{i}": 1 for i in range(1000)}}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([row]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"unknown column.*and 997 more") as info:
        calibrate.read_measurements(path)
    assert str(path) in str(info.value) and len(str(info.value)) < len(str(path)) + 600
    with pytest.raises(ValueError, match="dtype: unknown dtype") as info:
        calibrate.measurements_from_records([dict(row, dtype="fp7" * 10**5)
                                             for row in [{k: v for k, v in row.items()
                                                          if len(k) < 100}]])
    assert len(str(info.value)) < 600


def test_the_bounded_yaml_loader_reads_reports_as_pyyaml_does():
    yaml = pytest.importorskip("yaml")
    data = json.loads(GUIDELLM.read_text(encoding="utf-8"))
    for text in (yaml.dump(data), yaml.safe_dump(data, default_flow_style=True),
                 "a: [1, 2.5, -3e4, .inf, ~, yes, 'q', \"x\\ty\"]\nb: {c: 2024-01-02}\n"):
        assert _validation.parse_yaml(text, "x") == yaml.safe_load(text)


@pytest.mark.parametrize("shape", ["{}", "[]", '{"a":0}', "0.5", '"ab"', '{"a":{}}'])
def test_json_at_the_element_bound_parses_within_the_documented_memory(shape, monkeypatch):
    import tracemalloc
    limit = 200_000
    monkeypatch.setattr(_validation, "MAX_JSON_ELEMENTS", limit)
    per = _validation._json_elements(shape, limit) + 1          # its elements and a comma
    n = limit // per
    text = "[" + ",".join([shape] * n) + "]"
    assert _validation._json_elements(text, limit) <= limit
    tracemalloc.start()
    try:
        _validation.parse_json(text, "x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # documented: about 100 bytes per element at most; never twice that
    assert peak <= 2 * 100 * limit, peak / limit
    with pytest.raises(ValueError, match="JSON elements"):
        _validation.parse_json("[" + ",".join([shape] * (n + 1)) + "]", "x")


def test_yaml_at_the_node_bound_parses_within_the_documented_memory(monkeypatch):
    pytest.importorskip("yaml")
    import tracemalloc
    limit = 20_000
    monkeypatch.setattr(_validation, "MAX_YAML_NODES", limit)
    text = "".join("- {}\n" for _ in range(limit - 1))
    tracemalloc.start()
    try:
        _validation.parse_yaml(text, "x")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 2 * 750 * limit, peak / limit          # documented: 0.3-0.75 kB a node


def test_null_booleans_read_as_before():
    falcon = _cfg("falcon-7b")
    # null is false where the field was read by truth (parallel_attn: two norms a layer) ...
    two_norms = hf_config.count_params(dict(falcon, parallel_attn=False))
    assert hf_config.count_params(dict(falcon, parallel_attn=None)) == two_norms
    assert hf_config.count_params({k: v for k, v in falcon.items() if k != "parallel_attn"}) \
        == hf_config.count_params(dict(falcon, parallel_attn=True))
    # ... and the class default for tie_word_embeddings
    llama = _cfg()
    assert hf_config.count_params(dict(llama, tie_word_embeddings=None)) == \
        hf_config.count_params({k: v for k, v in llama.items() if k != "tie_word_embeddings"})
