"""The formula decorator's contract: same type in, same type out, names kept, checks first."""

import inspect

import numpy as np
import pytest
import xarray as xr

from rooflinekit import catalog, memory
from rooflinekit._labels import document, formula, returns_entry, spec_fields
from rooflinekit._validation import check_nonnegative
from rooflinekit.roofline import (
    Engine,
    amortized_token_time,
    decode_bound,
    decode_step_time,
    prefill_bound,
)


@formula("m²", "area", checks={"width": check_nonnegative, "height": check_nonnegative})
def area(width, height=1.0, *, scale=1.0):
    """Width × height × scale [m²]."""
    return width * height * scale


def _axis(dim, values):
    return xr.DataArray(values, dims=(dim,), coords={dim: values})


def test_scalar_gives_float():
    out = area(2, 3)
    assert isinstance(out, float) and out == 6.0


def test_ndarray_gives_ndarray():
    out = area(np.array([1.0, 2.0]), 3.0)
    assert isinstance(out, np.ndarray) and list(out) == [3.0, 6.0]


def test_dataarray_gives_labelled_dataarray():
    out = area(_axis("width", [1.0, 2.0]), 3.0)
    assert isinstance(out, xr.DataArray) and out.dims == ("width",)
    assert out.attrs == {"units": "m²", "long_name": "area"}


def test_dims_broadcast_by_name():
    out = area(_axis("width", [1.0, 2.0]), _axis("height", [1.0, 10.0, 100.0]))
    assert out.dims == ("width", "height") and out.shape == (2, 3)
    assert float(out.sel(width=2.0, height=100.0)) == 200.0
    # a 1-D numpy array meeting a labelled input becomes a dimension of its argument's name
    mixed = area(_axis("width", [1.0, 2.0]), np.array([1.0, 10.0]))
    assert mixed.dims == ("width", "height")


def test_mismatched_coordinate_names_the_argument():
    with pytest.raises(ValueError, match="height: coordinates of dimension 'width' differ"):
        area(_axis("width", [1.0, 2.0]),
             xr.DataArray([1.0, 2.0], dims=("width",), coords={"width": [5.0, 6.0]}))


def test_checks_run_first_and_name_the_argument():
    with pytest.raises(ValueError, match="height must lie in"):
        area(1.0, -1.0)


def test_signature_and_docstring_are_the_formulas_own():
    assert str(inspect.signature(area)) == "(width, height=1.0, *, scale=1.0)"
    assert area.__doc__ == "Width × height × scale [m²]."
    assert area.__name__ == "area"


def test_spec_fields_read_objects_and_datasets():
    model = catalog.model("guide-70b")
    models = catalog.models(["guide-70b", "Gemma-2-9B"], as_dataset=True)
    one = memory.kv_bytes_per_sequence(model, 1024)
    many = memory.kv_bytes_per_sequence(models, _axis("context_length", [1024, 8192]))
    assert isinstance(one, float)
    assert many.dims == ("model", "context_length")
    assert float(many.sel(model="guide-70b", context_length=1024)) == one
    assert spec_fields("sliding_window", unknown={"sliding_window": np.inf})(model, {}) == {
        "sliding_window": np.inf}


def test_roofline_signature_takes_one_engine():
    assert "__signature__" not in vars(decode_step_time)
    params = inspect.signature(decode_step_time).parameters
    assert list(params) == ["model", "gpu", "batch_size", "context_length", "tp", "ep",
                            "engine"]
    assert params["ep"].kind is inspect.Parameter.KEYWORD_ONLY and params["ep"].default == 1
    assert params["engine"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["engine"].default is None
    # the engine's fields are documented once, on Engine, and each formula says which it uses
    for field in Engine().fields():
        assert field not in params and f"    {field} : " in Engine.__doc__
    assert "engine : Engine or Calibration" in decode_step_time.__doc__
    assert "See Also" in decode_step_time.__doc__ and "amortized_token_time" in (
        decode_step_time.__doc__)
    assert "decode_step_time" in amortized_token_time.__doc__


def test_returns_section_says_what_the_labels_say():
    # written from units and long_name where the docstring has none, so the two cannot differ
    assert returns_entry("s", "decode step time (ITL)") == (
        "float, ndarray or xarray.DataArray\n    Decode step time (ITL) [s].")
    doc = decode_step_time.__doc__
    assert "Returns\n    -------\n    float, ndarray or xarray.DataArray\n" \
        "        Decode step time (ITL) [s]." in doc
    assert doc.index("Parameters") < doc.index("Returns") < doc.index("See Also")
    # a Returns section of its own wins, and shared text serves a family of formulas
    assert amortized_token_time.__doc__.count("Returns") == 1
    assert "decode_step_time / batch_size" in amortized_token_time.__doc__
    assert decode_bound.__doc__.split("Returns")[1].split("See Also")[0] == (
        prefill_bound.__doc__.split("Returns")[1].split("See Also")[0])


def test_document_puts_returns_after_the_parameters():
    def half(x):
        """Half of ``x`` [1].

        Notes
        -----
        Exact in binary floating point.
        """
    doc = inspect.cleandoc(document({"x": "x : float\n    A number [1]."},
                                    returns="float\n    Half [1].")(half).__doc__)
    assert doc.index("Parameters") < doc.index("Returns") < doc.index("Notes")
    assert "\nReturns\n-------\nfloat\n    Half [1].\n" in doc


def test_unknown_keyword_is_refused_by_the_signature():
    model, gpu = catalog.model("guide-70b"), catalog.gpu("guide-lab-80GB")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bandwith_efficiency'"):
        decode_step_time(model, gpu, bandwith_efficiency=0.5)
