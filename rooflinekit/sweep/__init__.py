"""Design-space sweeps: every quantity over models × GPUs × TP × context × batch × prompt.

The variable registry, :func:`sweep` (in memory or lazily in dask blocks), streaming reductions
(best, cheapest, Pareto front, best TP) and writing to netCDF or zarr.
"""

from rooflinekit.sweep._dask import DISTRIBUTED_EXTRA, distributed_client
from rooflinekit.sweep.grid import (
                                          AUTO_BLOCK_CELLS,
                                          MAX_SWEEP_BLOCKS,
                                          MIN_BLOCK_CELLS,
                                          SWEEP_MEMORY_LIMIT,
                                          check_blocks,
                                          in_memory_bytes,
                                          sweep,
                                          sweep_cells,
)
from rooflinekit.sweep.io import save
from rooflinekit.sweep.reductions import (
                                          PARETO_POINT,
                                          best_configuration,
                                          best_tp,
                                          cheapest_configuration,
                                          pareto_front,
                                          progress_bar,
)
from rooflinekit.sweep.variables import SPECULATIVE_VARIABLES, SWEEP_DIMS, VARIABLES

__all__ = ["SWEEP_DIMS", "VARIABLES", "SPECULATIVE_VARIABLES", "AUTO_BLOCK_CELLS", "PARETO_POINT", "sweep", "sweep_cells",
           "best_configuration", "best_tp", "cheapest_configuration", "pareto_front",
           "progress_bar", "save", "DISTRIBUTED_EXTRA", "distributed_client", "SWEEP_MEMORY_LIMIT", "in_memory_bytes",
           "MAX_SWEEP_BLOCKS", "MIN_BLOCK_CELLS", "check_blocks"]
