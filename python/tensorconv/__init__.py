"""tensorconv: 2-D convolution and correlation by the methods of five papers, on CPUs and GPUs,
behind scipy.signal's API, with the accuracy of every method measured against float64."""

from . import _core
from ._api import PRECISIONS, Plan, convolve2d, correlate2d, default_precision, plan
from ._api import calibrate_cpu, clear_plan_cache, plan_cache_info, set_plan_cache_limit
from ._api import Explanation, explain
from ._api import PlanOption, plan_options
from . import filters
from .filters import filter2d_u8, filter2d_u8_info, simd_u8_path
from .methods import MethodInfo, methods, methods_table

from ._version import version as _version

__version__: str = _version()
WITH_CUDA: bool = bool(_core.WITH_CUDA)


def cuda_available() -> bool:
    """Whether this build has CUDA and a CUDA device can be used. Never raises.

    Returns
    -------
    bool
        False in a build without CUDA, without a device, or with a driver that fails (a broken
        driver reads as "no GPU" rather than an exception).

    See Also
    --------
    methods : each method's availability, with the reason when it cannot run.

    Examples
    --------
    >>> import tensorconv as tc
    >>> tc.cuda_available() in (True, False)
    True
    >>> tc.WITH_CUDA or not tc.cuda_available()      # no device use without CUDA compiled in
    True
    """
    try:
        return bool(_core.cuda_available())
    except Exception:  # a broken driver must read as "no GPU", not crash the caller
        return False


__all__ = ["PRECISIONS", "Plan", "MethodInfo", "WITH_CUDA", "convolve2d", "correlate2d",
           "cuda_available", "default_precision", "filter2d_u8", "filter2d_u8_info", "filters",
           "methods", "methods_table", "plan", "simd_u8_path", "__version__"]
__all__ += ["calibrate_cpu", "clear_plan_cache", "plan_cache_info", "set_plan_cache_limit"]


def tune(*args, **kwargs) -> dict:
    """Measure ``method='auto'``'s GPU cost model on this device and keep it.

    Times every available CUDA correlate2d method on this device over a grid of square images
    and kernels in each precision (kernel timing, median of 10 after 2 warm-ups, MAPE against
    float64) and keeps the model in the user's cache directory for this device name and package
    version, where ``method='auto'`` reads it. Takes minutes (bounded by `budget_s`).

    Parameters
    ----------
    sizes : sequence of int, optional
        Square image sides of the grid.
    kernels : sequence of int, optional
        Square kernel sides of the grid.
    precisions : sequence of str, optional
        Precisions to time (default: all of `PRECISIONS`).
    budget_s : float, optional
        Wall-clock budget in seconds (default 300).
    save : bool, optional
        Keep the model in the cache directory (default True).
    progress : bool, optional
        Print progress.
    out : path, optional
        Also write the raw timing rows there as JSON.

    Returns
    -------
    dict
        The model, with ``'path'`` (where it was saved).

    Raises
    ------
    ValueError
        Without a usable CUDA device, without PyTorch or CuPy (needed for device arrays and CUDA
        events), or with an unknown precision.

    Examples
    --------
    >>> import tensorconv as tc
    >>> if tc.cuda_available():                 # doctest: +SKIP
    ...     model = tc.tune(sizes=(1024,), kernels=(3, 15), precisions=("fp32",), budget_s=60)
    """
    from .bench import tune as _tune

    return _tune(*args, **kwargs)


__all__ += ["Explanation", "explain", "tune"]
__all__ += ["PlanOption", "plan_options"]
