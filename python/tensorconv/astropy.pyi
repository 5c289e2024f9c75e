from typing import Any, Callable, Literal

from astropy.convolution.utils import KernelSizeError as KernelSizeError

_Boundary = Literal["fill", "wrap", "extend"] | None
_NanTreatment = Literal["interpolate", "fill"]
_Precision = Literal["fp64", "fp32"] | None

BOUNDARY_OPTIONS: tuple[_Boundary, ...]

def convolve(
    array: Any,
    kernel: Any,
    boundary: _Boundary = "fill",
    fill_value: float = 0.0,
    nan_treatment: _NanTreatment = "interpolate",
    normalize_kernel: bool = True,
    mask: Any | None = None,
    preserve_nan: bool = False,
    normalization_zero_tol: float = 1e-8,
    *,
    method: str = "auto",
    precision: _Precision = None,
) -> Any: ...
def convolve_fft(
    array: Any,
    kernel: Any,
    boundary: _Boundary = "fill",
    fill_value: float = 0.0,
    nan_treatment: _NanTreatment = "interpolate",
    normalize_kernel: bool | Callable[[Any], Any] = True,
    normalization_zero_tol: float = 1e-8,
    preserve_nan: bool = False,
    mask: Any | None = None,
    crop: bool = True,
    return_fft: bool = False,
    fft_pad: bool | None = None,
    psf_pad: bool | None = None,
    min_wt: float = 0.0,
    allow_huge: bool = False,
    fftn: Callable[..., Any] = ...,
    ifftn: Callable[..., Any] = ...,
    complex_dtype: Any = ...,
    dealias: bool = False,
    *,
    method: str = "auto",
    precision: _Precision = None,
) -> Any: ...
