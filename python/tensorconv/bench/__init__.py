"""Benchmarks shipped with the package: `python -m tensorconv.bench` (see .cli), and the sweep
that tune() (tensorconv._autotune, beside the cost model it builds) runs for method='auto' on
the GPU."""

from __future__ import annotations

from .._autotune import TUNE_KERNELS, TUNE_SIZES, complete_points, tune  # noqa: F401
from ._sweep import Part, Sweep

__all__ = ["tune", "Part", "Sweep"]
