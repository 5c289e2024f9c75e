from typing import Any, Literal, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

Border = Literal["constant", "replicate", "reflect101"]
Algorithm = Literal["auto", "alg1", "alg2", "alg3", "sep", "pairs", "wide", "portable"]
Mode = Literal["reflect", "constant", "nearest", "mirror", "wrap", "grid-mirror",
               "grid-constant", "grid-wrap"]
Precision = Literal["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"]
PerAxis = Union[float, Sequence[float]]

BORDERS: Tuple[str, ...]
ALGORITHMS: Tuple[str, ...]

def filter2d_u8(image: npt.NDArray[np.uint8], kernel: npt.ArrayLike, divisor: int, *,
                border: Border = ..., anchor: Optional[Tuple[int, int]] = ...,
                threads: Optional[int] = ..., algorithm: Algorithm = ...) -> npt.NDArray[np.uint8]: ...
def filter2d_u8_info(kernel: npt.ArrayLike, divisor: int, *, algorithm: Algorithm = ...) -> dict: ...
def simd_u8_path() -> Literal["avx512", "avx2", "portable"]: ...
def gaussian(image: Any, sigma: PerAxis, *, order: Union[int, Sequence[int]] = ...,
             mode: Union[Mode, Sequence[Mode]] = ..., cval: float = ..., truncate: float = ...,
             radius: Optional[Union[int, Sequence[int]]] = ..., method: str = ...,
             precision: Optional[Precision] = ...) -> Any: ...
def bilateral(image: Any, sigma_spatial: float, sigma_range: float, *,
              radius: Optional[int] = ..., mode: Mode = ..., cval: float = ...,
              method: str = ..., precision: Optional[Precision] = ...) -> Any: ...
