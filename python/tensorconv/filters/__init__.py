"""Image filters: 8-bit filter2D (simd_u8), the Gaussian filter of scipy.ndimage on any
correlate2d method, and the bilateral filter (CPU, CUDA cores, tensor cores)."""

from .bilateral import bilateral
from .gaussian import gaussian
from .u8 import ALGORITHMS, BORDERS, filter2d_u8, filter2d_u8_info, simd_u8_path

__all__ = ["ALGORITHMS", "BORDERS", "bilateral", "filter2d_u8", "filter2d_u8_info", "gaussian",
           "simd_u8_path"]
