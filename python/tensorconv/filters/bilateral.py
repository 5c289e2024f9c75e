"""tensorconv.filters.bilateral: the bilateral filter (Tomasi & Manduchi 1998; the LTV filter of
Kondo et al. 2022) on the CPU, the CUDA cores or the tensor cores."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .. import _core
from .._api import _STORAGE
from .._arrays import backend_of
from ._common import (SplitRun, can_split, check_cval, check_image, check_mode, check_positive,
                      check_precision, check_radius, image_precision)

ENTRY = "filters.bilateral"
# 'auto' on a GPU: the CUDA-core kernel (fastest in fp32/fp64, docs/design/filters.md), the
# tensor-core 32x8x16 scheme for fp16fp32 (the only one with that precision).
_GPU_ORDER = ("bilateral_cuda", "bilateral_tc_32x8x16", "bilateral_tc_16x16x16")
# Host images go to a GPU (when there is one) above this many taps: the copies cost ~ms.
_AUTO_GPU_MIN_TAPS = 2e7
_CACHE_SIZE = 16
_cache: OrderedDict = OrderedDict()


def _rows():
    from ..methods import methods
    return [m for m in methods() if m.entry == ENTRY]


def _choose(precision: str, on_device: bool, taps: float) -> str:
    rows = [m for m in _rows() if m.available and precision in m.precisions]
    gpu = sorted((m.name for m in rows if m.device == "cuda"), key=_GPU_ORDER.index)
    cpu = [m.name for m in rows if m.device == "cpu"]
    order = gpu if on_device else (gpu + cpu if taps >= _AUTO_GPU_MIN_TAPS else cpu + gpu)
    if not order:
        where = "CUDA" if on_device else "CPU or CUDA"
        raise ValueError(f"no available {where} bilateral method supports precision "
                         f"{precision!r}; methods and their precisions: " + ", ".join(
                             f"{m.name} ({'/'.join(m.precisions)}"
                             f"{'' if m.available else ', unavailable: ' + m.reason})"
                             for m in _rows()))
    return order[0]


def spatial_weights(sigma_spatial: float, radius: int) -> np.ndarray:
    """w_s over the (2 radius + 1)^2 window: exp(-(dy^2 + dx^2) / (2 sigma_spatial^2))."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    return np.exp(-(x[:, None] ** 2 + x[None, :] ** 2) / (2.0 * sigma_spatial ** 2))


def bilateral(image, sigma_spatial, sigma_range, *, radius=None, mode="reflect", cval=0.0,
              method="auto", precision=None):
    """Bilateral filter of a 2-D image.

    ::

        out(p) = I(p) + sum_q w(p, q) (I(q) - I(p)) / sum_q w(p, q)
        w(p, q) = exp(-|p - q|^2 / (2 sigma_spatial^2)) * exp(-(I(q) - I(p))^2 / (2 sigma_range^2))

    over the square window ``|p - q|_inf <= radius``; pixels outside the image follow `mode`.
    This form equals sum w I(q) / sum w: a constant window returns I(p) exactly, and the
    centre weight 1 keeps the denominator >= 1.

    Parameters
    ----------
    image : array_like
        2-D NumPy, CuPy or PyTorch (CUDA) array; the result is the same kind on the same device.
    sigma_spatial : float
        Spatial standard deviation (pixels), > 0.
    sigma_range : float
        Range standard deviation (image units), > 0.
    radius : int, optional
        Window radius (default ceil(3 sigma_spatial)).
    mode : str, optional
        scipy.ndimage's: 'reflect', 'constant' (with `cval`), 'nearest', 'mirror', 'wrap'.
    cval : float, optional
        The value outside the image for 'constant'.
    method : str, optional
        'auto' or a registry method with entry ``filters.bilateral``: 'bilateral_cpu' (fp32,
        fp64; threads), 'bilateral_cuda' (fp32, fp64; CUDA cores), 'bilateral_tc_32x8x16' and
        'bilateral_tc_16x16x16' (fp16fp32: float16 image and output, fp16 products accumulated
        in fp32 on the tensor cores; Kondo et al.'s two layouts).
    precision : str, optional
        None (float32 -> fp32, float16 -> fp16fp32, others -> fp64) or one the method has.

    Returns
    -------
    array
        The filtered image in the precision's storage dtype. An output is NaN when its window
        holds a NaN or +-inf; all others are finite and unaffected.

    Raises
    ------
    ValueError
        A non-2-D image, non-positive sigmas, a negative radius, an unknown mode, a method
        that is not a bilateral method or is unavailable here, a precision it lacks.

    Notes
    -----
    Memory: the output and the border strips' padded inputs (O(image) at any radius; the image
    is not copied).

    Examples
    --------
    >>> import numpy as np
    >>> from tensorconv import filters
    >>> step = np.zeros((8, 8)); step[:, 4:] = 1.0
    >>> out = filters.bilateral(step, sigma_spatial=2.0, sigma_range=0.1)
    >>> bool(np.abs(out - step).max() < 1e-6)      # the edge is kept
    True
    >>> flat = np.full((8, 8), 0.5, np.float32)
    >>> filters.bilateral(flat, 1.0, 0.2).dtype, float(filters.bilateral(flat, 1.0, 0.2)[3, 3])
    (dtype('float32'), 0.5)
    """
    b = backend_of(image)
    image = b.asarray(image)
    check_image(image, b)
    ss = check_positive(sigma_spatial, "sigma_spatial")
    sr = check_positive(sigma_range, "sigma_range")
    rad = math.ceil(3.0 * ss) if radius is None else check_radius(radius)
    boundary = check_mode(mode)
    cv = check_cval(cval)
    precision = check_precision(precision) or image_precision(b.dtype_str(image))
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    h, w = (int(s) for s in image.shape)
    k = 2 * rad + 1
    if method == "auto":
        method = _choose(precision, b.on_device, float(h) * w * k * k)
    else:
        names = [m.name for m in _rows()]
        if method not in names:
            raise ValueError(f"unknown bilateral method {method!r}; valid methods: auto, "
                             + ", ".join(names))
    dev = {m.name: m.device for m in _rows()}[method]
    if b.on_device and dev == "cpu":
        raise ValueError(f"method {method!r} runs on the CPU and this image is on a CUDA "
                         "device; pass a NumPy array or choose a CUDA method")
    storage = _STORAGE[precision]
    # Interior + strips on the array's own device (no padded copy of the image), unless host
    # images go to a GPU method (padded whole and staged once) or the window covers the image.
    split = (b.on_device or dev == "cpu") and can_split((h, w), rad, rad)
    key = (method, precision, h, w, rad, ss, sr, split, boundary, cv if boundary == "fill"
           else 0.0)
    run = _cache.get(key)
    if run is None:
        ws = spatial_weights(ss, rad)

        def make(ih, iw):
            return _core.make_filter_plan(method, ENTRY, ws, ih, iw, precision, sr)

        run = SplitRun(make, (h, w), rad, rad, boundary, cv) if split else make(
            h + 2 * rad, w + 2 * rad)
        _cache[key] = run
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    else:
        _cache.move_to_end(key)
    x = b.to_storage(image, storage)
    out = b.empty((h, w), storage, like=x)
    if split:
        return run(b, x, out, storage)
    x = b.pad(x, ((rad, rad), (rad, rad)), boundary, cv)
    if b.row_stride(x) != x.shape[1]:
        x = b.to_storage(x, storage)
    run.run(b.pointer(x), x.shape[0], x.shape[1], b.row_stride(x), b.pointer(out), h, w, w,
            storage, b.on_device, b.stream(x))
    return out
