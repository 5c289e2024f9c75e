from typing import Any, Literal, Optional

import numpy.typing as npt

Mode = Literal["full", "valid", "same"]
Boundary = Literal["fill", "wrap", "symm", "pad", "circular", "symmetric"]
Precision = Literal["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"]
Halos = Literal["auto", "gather", "map_overlap"]

def exact_methods() -> list[str]: ...
def clear_plans() -> None: ...
def correlate2d(x: Any, kernel: Any, mode: Mode = ..., boundary: Boundary = ...,
                fillvalue: Any = ..., *, method: str = ..., precision: Optional[Precision] = ...,
                dtype: Optional[npt.DTypeLike] = ..., halos: Halos = ...) -> Any: ...
def convolve2d(x: Any, kernel: Any, mode: Mode = ..., boundary: Boundary = ...,
               fillvalue: Any = ..., *, method: str = ..., precision: Optional[Precision] = ...,
               dtype: Optional[npt.DTypeLike] = ..., halos: Halos = ...) -> Any: ...
