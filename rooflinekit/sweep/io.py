"""Writing a sweep to disk: netCDF or zarr, streamed block by block when the sweep is lazy."""

from __future__ import annotations

__all__ = ["save"]


def save(ds, path):
    """Write a sweep to ``path``: zarr for a ``.zarr`` folder, netCDF otherwise.

    netCDF needs ``netCDF4`` (or scipy's netCDF3 for ``.nc3``) and zarr needs ``zarr``; both come
    with ``pip install rooflinekit[io]``. A lazy sweep streams to disk chunk by chunk.
    """
    if str(path).endswith(".zarr"):
        try:
            import zarr  # noqa: F401  (only to fail early with the extra to install)
        except ImportError as exc:
            raise ImportError("writing .zarr needs zarr; install it with "
                              "`pip install rooflinekit[io]`") \
                from exc
        # format 2: the model/gpu name labels are fixed-length strings, which zarr's format 3
        # has no stable specification for yet
        ds.to_zarr(path, mode="w", zarr_format=2, consolidated=True)
    else:
        ds.to_netcdf(path)
