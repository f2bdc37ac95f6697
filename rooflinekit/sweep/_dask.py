"""dask as an optional dependency of the sweeps: imported on use, with the extra to install."""

from __future__ import annotations

import sys

__all__ = ["DISTRIBUTED_EXTRA", "require_dask", "distributed_client"]

#: The extra that installs dask and dask.distributed.
DISTRIBUTED_EXTRA = "rooflinekit[distributed]"


def require_dask():
    """Import dask (and dask.array), or raise ``ImportError`` naming the extra to install."""
    try:
        import dask
        import dask.array  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"chunked (lazy) sweeps need dask; install it with "
                          f"`pip install {DISTRIBUTED_EXTRA}`") from exc
    return dask


def distributed_client():
    """The active ``dask.distributed`` client, or ``None``."""
    if "distributed" not in sys.modules:
        return None
    from distributed import get_client
    try:
        return get_client()
    except ValueError:
        return None
