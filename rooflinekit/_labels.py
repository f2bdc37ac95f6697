"""Same type in, same type out: the conventions that let one formula serve every input kind.

:func:`formula` checks the arguments, reads spec fields, lays every number out on one
:class:`Grid` (labelled inputs broadcast by dimension name), runs the body on raw arrays and
labels the result; :func:`table` does so for several quantities; :func:`document` fills shared
parameter docs into docstrings.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import textwrap
import types

import numpy as np
import xarray as xr

from rooflinekit._validation import describe

__all__ = [
    "HELD_CONTEXT",
    "PARAMETERS",
    "Grid",
    "align_inputs",
    "dataset",
    "document",
    "finish",
    "formula",
    "is_labelled",
    "lay_out",
    "returns_entry",
    "spec_fields",
    "spec_value",
    "table",
    "where",
    "widen",
]


def is_labelled(value) -> bool:
    """True for xarray objects, which broadcast by dimension name."""
    return isinstance(value, (xr.DataArray, xr.Dataset))


def align_inputs(named: dict, dims: dict | None = None) -> dict:
    """Label plain 1-D arrays by their argument's dimension when any input is labelled.

    Parameters
    ----------
    named : dict
        Argument name -> value (scalars, sequences, ndarrays, DataArrays or Datasets).
    dims : dict, optional
        Argument name -> dimension name, where it differs from the argument's name.

    Returns
    -------
    dict
        The mapping with lists as ndarrays and, when any value is labelled, every 1-D ndarray
        as a DataArray along its dimension (coordinate = the values).

    Raises
    ------
    TypeError
        An unlabelled array of 2 or more dimensions meets a labelled input.
    """
    dims = dims or {}
    out = {k: (np.asarray(v) if isinstance(v, (list, tuple)) else v) for k, v in named.items()}
    if not any(is_labelled(v) for v in out.values()):
        return out
    for key, value in out.items():
        if isinstance(value, np.ndarray) and value.ndim >= 1:
            if value.ndim > 1:
                raise TypeError(
                    f"{key} is an unlabelled {value.ndim}-d array while other inputs are labelled; "
                    f"pass it as an xarray.DataArray so its dimensions can be matched by name"
                )
            dim = dims.get(key, key)
            out[key] = xr.DataArray(value, dims=(dim,), coords={dim: value})
    return out


def finish(result, units: str, long_name: str, name: str | None = None):
    """``result`` in the kind its inputs had: 0-d as a Python number, ndarrays as they are,
    DataArrays with ``units``, ``long_name`` (and ``name``)."""
    if isinstance(result, xr.DataArray):
        result = result.copy(deep=False)
        result.attrs = {"units": units, "long_name": long_name}
        if name is not None:
            result.name = name
        return result
    if isinstance(result, np.ndarray) and result.ndim == 0:
        result = result[()]
    if isinstance(result, np.generic):
        return result.item()
    return result


def spec_value(spec, field: str):
    """A field of a spec object, or the matching variable of a catalogue Dataset."""
    if isinstance(spec, xr.Dataset):
        if field not in spec:
            raise TypeError(f"catalogue Dataset has no variable {field!r}; build it with "
                            f"rooflinekit.catalog.models(as_dataset=True) / gpus(as_dataset=True)")
        return spec[field]
    return getattr(spec, field)


def where(cond, a, b):
    """``np.where`` that keeps labels when any operand is a DataArray (then ``xr.where``)."""
    if any(isinstance(v, xr.DataArray) for v in (cond, a, b)):
        return xr.where(cond, a, b)
    return np.where(cond, a, b)


# ------------------------------------------------------------------------------------------------
# One grid and the decorator that lays a formula's inputs out on it.
# ------------------------------------------------------------------------------------------------

class Grid:
    """Inputs broadcast by dimension name (shared dimensions with equal coordinates), laid out
    on the union of dimensions as raw numpy arrays; the result is wrapped once."""

    def __init__(self, values: dict, exact=()):
        self.labelled = any(isinstance(v, xr.DataArray) for v in values.values())
        self.raw = {}
        if not self.labelled:
            self.raw = {k: _raw(v, k in exact) for k, v in values.items()}
            try:
                # Python numbers are 0-d: only arrays take part in the broadcast
                self.shape = np.broadcast_shapes(*(np.shape(v) for v in self.raw.values()
                                                   if not isinstance(v, (float, int))))
            except ValueError:
                shapes = {k: np.shape(v) for k, v in values.items() if np.ndim(v)}
                raise ValueError(f"array inputs do not broadcast together: {shapes}; pass "
                                 f"xarray.DataArrays to combine them by dimension name") from None
            return
        order, sizes, indexes, coords = [], {}, {}, {}
        for key, value in values.items():
            if not isinstance(value, xr.DataArray):
                continue
            for dim in value.dims:
                if dim not in sizes:
                    order.append(dim)
                    sizes[dim] = value.sizes[dim]
                elif value.sizes[dim] != sizes[dim]:
                    raise ValueError(f"{key}: dimension {dim!r} has {value.sizes[dim]} entries "
                                     f"where another input has {sizes[dim]}")
                if dim in value.indexes:
                    index = value.indexes[dim]
                    if dim not in indexes:
                        indexes[dim] = index
                    elif index is not indexes[dim] and not index.equals(indexes[dim]):
                        raise ValueError(f"{key}: coordinates of dimension {dim!r} differ from "
                                         f"another input's; select or reindex so they match")
            for name, coord in value.coords.items():
                coords.setdefault(name, coord.variable)
        self.dims = tuple(order)
        self.shape = tuple(sizes[d] for d in order)
        self.coords = coords
        for key, value in values.items():
            if isinstance(value, xr.DataArray):
                present = [d for d in order if d in value.dims]
                data = _raw(value.transpose(*present).values, key in exact)
                self.raw[key] = data.reshape([sizes[d] if d in value.dims else 1 for d in order])
            else:
                self.raw[key] = _raw(value, key in exact)

    def __getitem__(self, key):
        return self.raw[key]

    def wrap(self, result, units: str, long_name: str, name: str | None = None):
        """The result in its inputs' kind: DataArray over the grid, ndarray, or Python scalar."""
        return finish(self.spread(result), units, long_name, name)

    def spread(self, result):
        """The result over the whole grid: a DataArray when labelled, else an ndarray."""
        result = np.asarray(result)
        if result.shape != self.shape:
            result = np.broadcast_to(result, self.shape).copy()
        if self.labelled:
            result = xr.DataArray(result, dims=self.dims, coords=self.coords)
        return result


def _raw(value, exact: bool):
    """A number for the grid: as float64, or when ``exact`` narrow and unsigned integers as
    int64 and narrow floats as float64 (no formula computes in a narrow type that wraps)."""
    if exact:
        kind = type(value)
        if kind is int or kind is float:
            return value
        data = np.asarray(value)
        if data.dtype.kind in "iu" and data.dtype != np.int64:
            data = data.astype(np.int64)
        elif data.dtype.kind == "f" and data.dtype != np.float64:
            data = data.astype(np.float64)
        if isinstance(value, np.generic) or (isinstance(value, numbers.Real)
                                             and not isinstance(value, np.ndarray)):
            return data[()]          # a numpy scalar stays a scalar
        return data
    if isinstance(value, float):
        return value
    if type(value) is int:
        return float(value)
    return np.asarray(value, dtype=float)


def widen(value):
    """``value`` in the computing types (:func:`_raw`, exact), for formulas written by hand:
    narrow and unsigned integers as int64, float16/float32 as float64, DataArrays labelled;
    anything else passes unchanged (the same object)."""
    if isinstance(value, xr.DataArray):
        if value.dtype.kind in "iuf" and value.dtype not in (np.int64, np.float64):
            return value.copy(data=_raw(value.values, True))
        return value
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, np.bool_):
        if value.dtype.kind in "iuf" and value.dtype not in (np.int64, np.float64):
            return _raw(value, True)
    return value


def _is_number(value) -> bool:
    """What goes on the grid: real numbers, numeric arrays and DataArrays (not bools or None)."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, numbers.Real):
        return True
    return isinstance(value, (np.ndarray, xr.DataArray)) and value.dtype.kind in "iuf"


def spec_fields(*fields, unknown=None):
    """A spec reader for :func:`formula`: these ``fields`` of a spec object or catalogue Dataset,
    ``None`` (not known) read as ``unknown[field]``, NaN by default."""
    unknown = dict(unknown or {})

    def read(spec, arguments):
        values = {f: spec_value(spec, f) for f in fields}
        return {f: (unknown.get(f, np.nan) if v is None else v) for f, v in values.items()}
    return read


def formula(units: str, long_name: str, *, checks=None, validate=None, specs=None, derive=None,
            dims=None, order=(), keep=(), exact=(), cast=None, name=None, parameters=None,
            as_dims=(), returns=None):
    """Wrap a formula written on plain numbers so it takes every input kind.

    The wrapped function keeps its own name, signature and docstring (``functools.wraps``),
    completed from ``parameters`` and ``returns`` (:func:`document`).

    Parameters
    ----------
    units, long_name : str
        Stamped on a labelled result's ``attrs``.
    checks : dict, optional
        Argument name -> ``check(name, value)``, run in signature order before any work, each
        raising naming the argument; names that are not parameters are ignored (one mapping
        serves a family of formulas).
    validate : callable, optional
        ``validate(arguments)``: checks that span arguments, run after ``checks``.
    specs : dict, optional
        Argument name -> ``read(spec, arguments)`` returning that spec's fields by name
        (:func:`spec_fields`); the body receives a namespace of those fields, on the grid.
    derive : callable, optional
        ``derive(inputs) -> inputs``: what the body receives, computed from the laid-out inputs
        (e.g. coefficients of a step). Runs on raw arrays.
    dims : dict, optional
        Argument name -> dimension name, where a 1-D numpy argument meeting labelled inputs
        should take a dimension other than its own name.
    order : tuple of str
        Arguments (specs included) whose dimensions come first in a labelled result, in this
        order; the specs follow, then the rest in signature order.
    keep : tuple of str
        Arguments the body receives as given, off the grid (a list of candidates, say).
    exact : tuple of str
        Arguments laid out with their own dtype rather than as floats (whole counts stay
        integers).
    cast : callable, optional
        Applied to the wrapped result (e.g. whole numbers as ``int`` where finite).
    name : str, optional
        ``name`` of a labelled result.
    parameters : mapping, optional
        Shared parameter documentation (see :func:`document`).
    as_dims : tuple of str
        Arguments whose lists and 1-D arrays are always dimensions of their name (a table's
        axes), labelled or not; a 2-D array there raises ``TypeError``. Done before ``checks``.
    returns : str, optional
        The Returns entry of a docstring that has none (see :func:`document`);
        :func:`returns_entry` writes it from ``units`` and ``long_name``.

    Notes
    -----
    Numbers, arrays and DataArrays go on one :class:`Grid` (:func:`align_inputs`); anything
    else reaches the body as given. The body runs once on raw arrays; its result is wrapped once.
    """
    def complete(grid, result):
        result = grid.wrap(result, units, long_name, name)
        return result if cast is None else cast(result)
    return _decorator(complete, checks=checks, validate=validate, specs=specs, derive=derive,
                      dims=dims, order=order, keep=keep, exact=exact, parameters=parameters,
                      as_dims=as_dims, returns=returns)


def table(variables: dict, **options):
    """:func:`formula` for a body that returns several quantities: one labelled Dataset.

    ``variables`` maps each variable's name to its ``(units, long_name)``, in order; the body
    returns a mapping with those keys; ``options`` are :func:`formula`'s keywords, less
    ``units``, ``long_name``, ``cast`` and ``name``.
    """
    variables = dict(variables)

    def complete(grid, result):
        return dataset({key: (grid.spread(result[key]), units, long_name)
                        for key, (units, long_name) in variables.items()})
    return _decorator(complete, **options)


def dataset(variables: dict) -> xr.Dataset:
    """One Dataset of ``name -> (value, units, long_name)``; an unlabelled value becomes a
    DataArray of its own (0-d for a number)."""
    data = {}
    for key, (value, units, long_name) in variables.items():
        data[key] = finish(value if isinstance(value, xr.DataArray) else
                           xr.DataArray(np.asarray(value)), units, long_name)
    return xr.Dataset(data)


def _decorator(complete, *, checks=None, validate=None, specs=None, derive=None, dims=None,
               order=(), keep=(), exact=(), parameters=None, as_dims=(), returns=None):
    """The wrapper of :func:`formula` and :func:`table`: ``complete(grid, result)`` ends it."""
    checks = dict(checks or {})
    specs = dict(specs or {})

    def decorate(func):
        if parameters is not None or returns is not None:
            document(parameters or {}, returns=returns)(func)
        signature = inspect.signature(func)
        ordered = [k for k in signature.parameters if k in checks]

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = bound.arguments
            for key, value in arguments.items():     # float16 / uint8 checked and computed wide
                arguments[key] = widen(value)
            for key in as_dims:
                arguments[key] = _as_dim(func.__name__, key, arguments[key], (dims or {}))
            for key in ordered:
                checks[key](key, arguments[key])
            if validate is not None:
                validate(arguments)
            grid, inputs = lay_out(arguments, specs, dims, order, keep=keep, exact=exact)
            if derive is not None:
                inputs = derive(inputs)
            return complete(grid, func(**inputs))

        return wrapper

    return decorate


def _as_dim(function: str, key: str, value, dims: dict):
    """A list or 1-D array as a DataArray along its dimension (coordinate = the values)."""
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim):
        value = np.asarray(value)
        if value.ndim != 1:
            raise TypeError(f"{key} must be 1-D or a DataArray for {function}")
        dim = dims.get(key, key)
        value = xr.DataArray(value, dims=(dim,), coords={dim: value})
    return value


def lay_out(arguments: dict, specs: dict, dims: dict | None = None, order=(), *, keep=(),
            exact=()):
    """The grid of ``arguments`` and the inputs a formula body receives (see :func:`formula`)."""
    aligned = align_inputs({k: v for k, v in arguments.items() if k not in keep}, dims)
    sequence = [k for k in order if k in aligned] + [k for k in specs if k not in order] + [
        k for k in aligned if k not in order and k not in specs]
    values = {}
    for key in sequence:
        if key in specs:
            try:
                fields = specs[key](arguments[key], aligned)
            except AttributeError:
                # not a spec at all (None, a string, a number): say so before any work
                raise TypeError(f"{key} must be a spec object (ModelShape or GPU) or a catalogue "
                                f"Dataset; got {describe(arguments[key])}") from None
            values.update({f"{key}.{f}": v for f, v in fields.items()})
        elif _is_number(aligned[key]):
            values[key] = aligned[key]
    grid = Grid(values, exact)
    inputs = {**aligned, **{k: arguments[k] for k in keep}}
    for key, value in grid.raw.items():
        if "." not in key:
            inputs[key] = value
    for key in specs:
        prefix = key + "."
        inputs[key] = types.SimpleNamespace(**{k[len(prefix):]: v for k, v in grid.raw.items()
                                               if k.startswith(prefix)})
    return grid, inputs


# ------------------------------------------------------------------------------------------------
# Parameter documentation written once, filled into each docstring.
# ------------------------------------------------------------------------------------------------

_SECTIONS = ("Returns", "Yields", "Raises", "Warns", "See Also", "Notes", "References",
             "Examples")


def parameter_entries(text: str) -> dict:
    """numpydoc Parameters entries (``name : type`` and indented lines) by each name they cover."""
    entries, current = {}, None
    for line in textwrap.dedent(text).strip("\n").splitlines():
        if line and not line[0].isspace():
            current = [line]
            for name in line.split(" : ")[0].split(","):
                entries[name.strip()] = current
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).rstrip() for name, lines in entries.items()}


#: The fields the catalogue's specs (:class:`~rooflinekit.GPU`, :class:`~rooflinekit.ModelShape`)
#: share, documented once.
SPEC_PARAMETERS = parameter_entries("""
    name : str
        Label: the spec's coordinate (``gpu``, ``model``) in catalogue Datasets, and the name
        tables and plans print.
""")


#: The arguments the formula modules share, documented once.
PARAMETERS = parameter_entries("""
    model : ModelShape or xarray.Dataset
        The model, or a catalogue Dataset over ``model``.
    gpu : GPU or xarray.Dataset
        One accelerator (``tp`` of them form the group), or a catalogue Dataset over ``gpu``.
    tp : int, array_like or xarray.DataArray
        Tensor-parallel degree [1], ≥ 1.
    batch_size : int, array_like or xarray.DataArray
        Sequences decoded together in one step [1], ≥ 1.
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence has cached [tokens], ≥ 0.
    prompt_tokens : int, array_like or xarray.DataArray
        Prompt tokens [tokens], ≥ 1.
    reserve : float
        Share of the memory left after weights kept as working space (activations, CUDA
        context, allocator fragmentation), in [0, 1). Default 0.10 (guide §2.4).
    """)

#: ``context_length`` where every sequence holds at least one token (sequences in a budget).
HELD_CONTEXT = parameter_entries("""
    context_length : int, array_like or xarray.DataArray
        Tokens each sequence holds [tokens], ≥ 1.
    """)


def returns_entry(units: str, long_name: str,
                  kind: str = "float, ndarray or xarray.DataArray") -> str:
    """The numpydoc Returns entry of a formula labelled ``units`` and ``long_name``
    (``"Decode step time [s]."`` for ``("s", "decode step time")``)."""
    unit = f" [{units}]" if units else ""
    return f"{kind}\n    {long_name[:1].upper()}{long_name[1:]}{unit}."


def document(shared, *, returns: str | None = None):
    """Complete a docstring's Parameters section from ``shared`` entries, in signature order.

    An entry of the docstring's own wins; a parameter documented nowhere raises ``TypeError``
    at import. A docstring without a Returns section takes ``returns`` after its Parameters.
    """
    def decorate(func):
        func.__doc__ = _with_parameters(func, shared, returns)
        return func
    return decorate


def _with_parameters(func, shared, returns=None) -> str:
    lines = (func.__doc__ or "").splitlines()
    body = [line for line in lines[1:] if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in body), default=4)
    text = [lines[0]] + [line[indent:] for line in lines[1:]] if lines else [""]
    headers = [i for i in range(len(text) - 1)
               if text[i].strip() and set(text[i + 1].strip()) == {"-"}
               and len(text[i + 1].strip()) == len(text[i].strip())]
    start = next((i for i in headers if text[i].strip() == "Parameters"), None)
    if start is None:
        after = [i for i in headers if text[i].strip() in _SECTIONS]
        start = end = after[0] if after else len(text)
        own = {}
    else:
        end = next((i for i in headers if i > start), len(text))
        own = parameter_entries("\n".join(text[start + 2:end]))
    params = inspect.signature(func).parameters.values()
    names = [("**" if p.kind is p.VAR_KEYWORD else "") + p.name for p in params]
    if not names:
        return func.__doc__
    section, done = ["Parameters", "----------"], set()
    for name in names:
        entry = own.get(name, shared.get(name))
        if entry is None:
            raise TypeError(f"{func.__qualname__}: parameter {name} has no documentation")
        if entry not in done:
            done.add(entry)
            section.extend(entry.splitlines())
    if returns is not None and not any(text[i].strip() in ("Returns", "Yields") for i in headers):
        section.extend(["", "Returns", "-------", *returns.splitlines()])
    if start == len(text):
        # no section follows: the Parameters go last, before the closing line
        start = end = len(text) - 1 if not text[-1].strip() else len(text)
        section.insert(0, "")
    out = text[:start] + section + [""] + text[end:]
    pad = " " * indent
    return "\n".join([out[0]] + [(pad + line) if line else "" for line in out[1:]])
