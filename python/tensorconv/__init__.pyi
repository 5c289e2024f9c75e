from typing import Any, Literal, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

from . import filters as filters


__version__: str
WITH_CUDA: bool
PRECISIONS: Tuple[str, ...]

Mode = Literal["full", "valid", "same"]
Boundary = Literal["fill", "wrap", "symm", "pad", "circular", "symmetric"]
Precision = Literal["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"]

from .methods import MethodInfo as MethodInfo

def methods() -> list[MethodInfo]: ...
def methods_table() -> str: ...
def gpu_archs(m: MethodInfo) -> str: ...
def cuda_available() -> bool: ...
def default_precision(*dtype_strs: str) -> str: ...

OptionValue = Optional[bool | int | str]

class PlanOption(NamedTuple):
    name: str
    methods: Tuple[str, ...]
    values: str
    default: str
    doc: str

def plan_options() -> list[PlanOption]: ...

class Plan:
    method: str
    options: dict[str, OptionValue]
    precision: str
    mode: str
    boundary: str
    fillvalue: float | complex
    complex_kernel: bool
    image_shape: Tuple[int, int]
    kernel_shape: Tuple[int, int]
    out_shape: Tuple[int, int]
    @property
    def workspace_bytes(self) -> int: ...
    def __call__(self, image: Any) -> Any:
        """An (H, W) image -> out_shape; a (B, H, W) stack (B >= 1) -> (B, *out_shape)."""

def plan(kernel: Any, image_shape: Sequence[int], *, mode: Mode = ..., boundary: Boundary = ...,
         fillvalue: complex | npt.ArrayLike = ..., method: str = ..., precision: Optional[Precision] = ...,
         convolve: bool = ..., device: Optional[Literal["cpu", "cuda"]] = ...,
         options: Optional[dict[str, OptionValue]] = ...) -> Plan: ...
def correlate2d(in1: Any, in2: Any, mode: Mode = ..., boundary: Boundary = ...,
                fillvalue: complex | npt.ArrayLike = ..., *, method: str = ...,
                precision: Optional[Precision] = ...,
                dtype: Optional[npt.DTypeLike] = ...,
                options: Optional[dict[str, OptionValue]] = ..., batch: bool = ...) -> Any: ...
def convolve2d(in1: Any, in2: Any, mode: Mode = ..., boundary: Boundary = ...,
               fillvalue: complex | npt.ArrayLike = ..., *, method: str = ...,
               precision: Optional[Precision] = ...,
               dtype: Optional[npt.DTypeLike] = ...,
               options: Optional[dict[str, OptionValue]] = ..., batch: bool = ...) -> Any: ...
def calibrate_cpu(save: bool = ...) -> dict: ...
def clear_plan_cache(device: str | int | None = ...) -> None: ...
def plan_cache_info() -> dict: ...
def set_plan_cache_limit(max_bytes: int | None = ..., device: str | int | None = ...) -> None: ...

Border = Literal["constant", "replicate", "reflect101"]
Algorithm = Literal["auto", "alg1", "alg2", "alg3", "sep", "wide", "portable"]

def filter2d_u8(image: npt.NDArray[np.uint8], kernel: npt.ArrayLike, divisor: int, *,
                border: Border = ..., anchor: Optional[Tuple[int, int]] = ...,
                threads: Optional[int] = ..., algorithm: Algorithm = ...) -> npt.NDArray[np.uint8]: ...
def filter2d_u8_info(kernel: npt.ArrayLike, divisor: int, *, algorithm: Algorithm = ...) -> dict: ...
def simd_u8_path() -> Literal["avx512", "avx2", "portable"]: ...

class Explanation(NamedTuple):
    method: str
    device: str
    reason: str
    predicted_ms: dict[str, float]
    excluded: dict[str, str]

def explain(image_shape: Sequence[int], kernel_shape: Sequence[int] | npt.ArrayLike,
            precision: Precision = ..., device: Optional[Literal["cpu", "cuda"]] = ..., *,
            mode: Mode = ...) -> Explanation: ...
def tune(sizes: Sequence[int] = ..., kernels: Sequence[int] = ...,
         precisions: Sequence[Precision] = ..., *, budget_s: float = ..., save: bool = ...,
         progress: bool = ..., out: Any = ...) -> dict: ...
