"""Writing a sweep to disk: netCDF or zarr, streamed block by block when the sweep is lazy."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["save"]


def save(ds, path, *, overwrite=False):
    """Write a sweep to ``path``: zarr for a ``.zarr`` folder, netCDF otherwise.

    The extension is read lower-case, as the CLI's ``--output`` reads it. netCDF needs
    ``netCDF4`` (or scipy for ``.nc3``) and zarr ``zarr``: ``pip install rooflinekit[io]``. A
    lazy sweep streams to disk chunk by chunk.

    Parameters
    ----------
    ds : xarray.Dataset
        A :func:`sweep` result (or any Dataset).
    path : str or os.PathLike
        Where to write. An empty folder may take a ``.zarr`` store.
    overwrite : bool
        Replace an existing file, or a folder's contents (default ``False``: refused, so that
        nothing is lost by a mistyped path).

    Raises
    ------
    FileExistsError
        ``path`` exists (a file, or a folder with anything in it) and ``overwrite`` is false; or
        a ``.zarr`` path is a file.
    IsADirectoryError
        A netCDF path is a folder.
    """
    text = os.fspath(path)
    zarr_store = Path(text).suffix.lower() == ".zarr"
    if os.path.isdir(text):
        if not zarr_store:
            raise IsADirectoryError(f"{text!r} is a folder; a netCDF file needs a file path")
        if not overwrite and any(os.scandir(text)):
            raise FileExistsError(f"{text!r} is a folder that is not empty; pass "
                                  f"overwrite=True to replace its contents")
    elif os.path.lexists(text):
        if zarr_store:
            raise FileExistsError(f"{text!r} is a file, and a .zarr store is a folder")
        if not overwrite:
            raise FileExistsError(f"{text!r} exists; pass overwrite=True to replace it")
    if zarr_store:
        try:
            import zarr  # noqa: F401  (only to fail early with the extra to install)
        except ImportError as exc:
            raise ImportError("writing .zarr needs zarr; install it with "
                              "`pip install rooflinekit[io]`") \
                from exc
        # format 2: the model/gpu name labels are fixed-length strings, which zarr's format 3
        # has no stable specification for yet
        ds.to_zarr(text, mode="w", zarr_format=2, consolidated=True)
    else:
        ds.to_netcdf(text)
