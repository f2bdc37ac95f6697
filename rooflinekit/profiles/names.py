"""The serving engines by name: what ``engine=`` and ``--engine`` take, and how a name reads.

``"vllm"``, ``"sglang"``, ``"trtllm"`` or ``"ideal"``, optionally ``@VERSION``. Below the
calibrations and the shipped profiles, which both name engines.
"""

from __future__ import annotations

from rooflinekit._validation import check_one_of

__all__ = ["ENGINE_NAMES", "DEFAULT_ENGINE", "ENGINE_CHOICES", "split_engine_name",
           "is_engine_name"]

#: The serving engines a profile can describe, by the name ``engine=`` and ``--engine`` take.
ENGINE_NAMES = ("vllm", "sglang", "trtllm")
#: The engine a planning answer is timed with unless told otherwise.
DEFAULT_ENGINE = "vllm"
#: What ``engine=`` and ``--engine`` accept by name: an engine's profile, or the ideal bound.
ENGINE_CHOICES = (*ENGINE_NAMES, "ideal")


def split_engine_name(text: str) -> tuple[str, str | None]:
    """An engine named as ``--engine`` and ``engine=`` take it: ``"NAME"`` or
    ``"NAME@VERSION"``.

    Parameters
    ----------
    text : str
        One of :data:`ENGINE_CHOICES` (any case), optionally followed by ``@`` and an engine
        version for :func:`engine_profile` (``"vllm@0.11.0"``).

    Returns
    -------
    name : str
        The engine, lower case.
    version : str or None
        The version after ``@``; ``None`` without one.

    Raises
    ------
    ValueError
        An unknown engine, an ``@`` without a version, or a version for ``"ideal"``.
    TypeError
        ``text`` not a string.

    See Also
    --------
    engine_profile, is_engine_name
    """
    if not isinstance(text, str):
        raise TypeError(f"engine must be a string here; got {type(text).__name__}")
    name, sep, version = text.strip().partition("@")
    name = check_one_of("engine", name.strip().lower(), ENGINE_CHOICES)
    version = version.strip()
    if sep and not version:
        raise ValueError(f"engine {text!r}: '@' must be followed by an engine version, as in "
                         f"'vllm@0.11.0'")
    if sep and name == "ideal":
        raise ValueError(f"engine {text!r}: the ideal roofline has no versions")
    return name, (version if sep else None)


def is_engine_name(text) -> bool:
    """Whether ``text`` names an engine (:func:`split_engine_name` takes it), as opposed to a
    file of engine knobs."""
    try:
        split_engine_name(text)
    except (TypeError, ValueError):
        return False
    return True
