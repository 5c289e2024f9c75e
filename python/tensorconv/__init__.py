"""tensorconv: 2-D convolution and correlation by the methods of five papers, on CPUs and GPUs,
behind scipy.signal's API, with the accuracy of every method measured against float64."""

from . import _core


def _cuda_library_dirs() -> list:
    """The NVIDIA pip wheels' library folder (nvidia-cufft, nvidia-cublas: nvidia/cu13/lib) in
    this package's site-packages and every other one on sys.path: cuFFT and cuBLAS are opened
    from there first, at their first use (csrc/cuda/runtime/cuda_libs.cpp)."""
    import os
    import sys

    roots = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] + sys.path
    dirs = []
    for root in roots:
        d = os.path.join(root or ".", "nvidia", "cu13", "lib")
        if d not in dirs and os.path.isdir(d):
            dirs.append(d)
    return dirs


if _core.WITH_CUDA:
    _core.set_cuda_library_dirs(_cuda_library_dirs())
from ._api import PRECISIONS, Plan, convolve2d, correlate2d, default_precision, plan
from ._api import calibrate_cpu, clear_plan_cache, plan_cache_info, set_plan_cache_limit
from ._api import Explanation, explain
from ._api import PlanOption, plan_options
from ._autotune import tune
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
__all__ += ["Explanation", "explain", "tune"]
__all__ += ["PlanOption", "plan_options"]
