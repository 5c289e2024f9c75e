"""8-bit image filtering with OpenCV's filter2D semantics on integer kernels, computed exactly by
the Kelefouras & Keramidas (2022) AVX2 method (`simd_u8`), with a portable fallback."""

from __future__ import annotations

import numbers

import numpy as np

from .. import _core

BORDERS = ("constant", "replicate", "reflect101")
ALGORITHMS = ("auto", "alg1", "alg2", "alg3", "sep", "pairs", "wide", "portable")
_MAX_K = 15
_U8 = np.dtype(np.uint8)
# Kernel dtypes that convert to the core's int32 exactly (the core checks the 16-bit range).
_EXACT_INT32 = frozenset(np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32))


def _int_arg(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def _check_image(image) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"image must be a NumPy uint8 array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise TypeError(f"image must have dtype uint8, got {image.dtype}")
    if image.ndim != 2:
        raise ValueError(f"image must be 2-D (one channel), got ndim={image.ndim}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"image is empty (shape {image.shape})")
    return np.ascontiguousarray(image)


def _check_kernel(kernel) -> np.ndarray:
    kernel = np.asarray(kernel)
    if kernel.dtype.kind not in "iu":
        raise TypeError(f"kernel must have an integer dtype (int8, or int16 for larger values), "
                        f"got {kernel.dtype}")
    if kernel.ndim != 2:
        raise ValueError(f"kernel must be 2-D, got ndim={kernel.ndim}")
    if kernel.shape[0] == 0 or kernel.shape[1] == 0:
        raise ValueError(f"kernel is empty (shape {kernel.shape})")
    if kernel.shape[0] > _MAX_K or kernel.shape[1] > _MAX_K:
        raise ValueError(f"kernel shape {kernel.shape} exceeds {_MAX_K}x{_MAX_K}, the largest "
                         "simd_u8 supports")
    if kernel.dtype.itemsize > 2 or kernel.dtype == np.uint16:  # int8/uint8/int16 always fit
        _check_range(kernel)
    return np.ascontiguousarray(kernel, dtype=np.int32)


def _check_range(kernel) -> None:
    if kernel.min() < -32768 or kernel.max() > 32767:
        raise ValueError("kernel values must fit 16 bits (-32768..32767); got "
                         f"[{kernel.min()}, {kernel.max()}]")


def _check_divisor(divisor) -> int:
    d = _int_arg(divisor, "divisor")
    if d < 1 or d > 2**31 - 1:
        raise ValueError(f"divisor must be a positive integer below 2**31, got {d}")
    return d


def _check_algorithm(algorithm) -> str:
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; valid: {', '.join(ALGORITHMS)}")
    return algorithm


def filter2d_u8(image, kernel, divisor, *, border="reflect101", anchor=None, threads=None,
                algorithm="auto"):
    """Filter a uint8 image with an integer kernel, exactly, with OpenCV ``filter2D``'s borders.

    ``out[i, j] = clip(floor(sum_uv image[i + u - ay, j + v - ax] * kernel[u, v] / divisor), 0,
    255)`` (a correlation; anchor (ay, ax) defaults to (kh // 2, kw // 2)), with the pixels
    outside the image given by `border`, placed as OpenCV places them. The quotient rounds down:
    OpenCV's ``filter2D`` with the float kernel ``kernel / divisor`` rounds to nearest instead,
    so the two agree exactly when `divisor` is 1 (the first example below differs from OpenCV's
    where a ninth is above one half). This is Kelefouras and Keramidas (2022)'s 8-bit direct
    convolution (the ``simd_u8`` registry method).

    Parameters
    ----------
    image : numpy.ndarray
        2-D uint8 image.
    kernel : array_like
        2-D integer kernel, at most 15 x 15. int8 values use the paper's 8-bit maddubs
        algorithms; values up to 16 bits use 16-bit coefficients. Intermediate results are
        16-bit when every possible sum fits, else 32-bit.
    divisor : int
        Positive divisor of the sums (exact division, rounding down).
    border : {'reflect101', 'replicate', 'constant'}, optional
        OpenCV's border rules ('constant' is 0 outside).
    anchor : tuple of int, optional
        (ay, ax), the kernel's reference point.
    threads : int, optional
        Worker threads over rows (None: all hardware threads).
    algorithm : str, optional
        'auto', or force one of the paper's algorithms ('alg1', 'alg2', 'alg3', 'sep') or the
        package's extensions ('pairs': broadcast coefficient pairs; 'wide': 16-bit
        coefficients; 'portable': scalar). See `ALGORITHMS`.

    Returns
    -------
    numpy.ndarray
        uint8, the image's shape.

    Raises
    ------
    ValueError
        A non-uint8 or non-2-D image, a kernel that is empty, too large or not integer, a
        non-positive divisor, an unknown border or algorithm, an anchor outside the kernel, or a
        forced algorithm that cannot be exact for this kernel (the message says why).

    Notes
    -----
    Vector paths: AVX-512 (sep and pairs) where the CPU has AVX-512 BW, else AVX2;
    ``TENSORCONV_FORCE_AVX2=1`` caps them at AVX2, ``TENSORCONV_FORCE_PORTABLE=1`` runs the
    portable scalar path. Every path gives the same bytes.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> img = np.array([[10, 20, 30, 40],
    ...                 [50, 60, 70, 80],
    ...                 [90, 100, 110, 120]], np.uint8)
    >>> box = np.ones((3, 3), np.int8)
    >>> tc.filter2d_u8(img, box, 9)
    array([[43, 46, 56, 60],
           [56, 60, 70, 73],
           [70, 73, 83, 86]], dtype=uint8)
    >>> sobel = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], np.int8)
    >>> tc.filter2d_u8(img, sobel, 1, border="replicate")
    array([[40, 80, 80, 40],
           [40, 80, 80, 40],
           [40, 80, 80, 40]], dtype=uint8)
    """
    # Fast path for the common call (C-contiguous uint8 image, integer ndarray kernel, int
    # divisor, default anchor): a few identity tests instead of the full validation
    # below (which gives the same results and the detailed errors), since small images take
    # only microseconds.
    if (type(image) is np.ndarray and type(kernel) is np.ndarray and type(divisor) is int
            and anchor is None and (threads is None or type(threads) is int and threads > 0)
            and image.dtype is _U8
            and image.ndim == 2 and kernel.ndim == 2 and kernel.dtype in _EXACT_INT32
            and 0 < divisor < 2**31 and border in BORDERS and algorithm in ALGORITHMS
            and image.flags.c_contiguous):
        kh, kw = kernel.shape
        h, w = image.shape
        if 0 < kh <= _MAX_K and 0 < kw <= _MAX_K and h and w:
            return _core.filter2d_u8(image, kernel, divisor, border, kh // 2, kw // 2, algorithm,
                                     threads or 0)
    image = _check_image(image)
    k = _check_kernel(kernel)
    d = _check_divisor(divisor)
    if border not in BORDERS:
        raise ValueError(f"unknown border {border!r}; valid borders: {', '.join(BORDERS)}")
    kh, kw = k.shape
    if anchor is None:
        ay, ax = kh // 2, kw // 2
    else:
        try:
            ay, ax = (_int_arg(a, "anchor") for a in anchor)
        except TypeError:
            raise TypeError(f"anchor must be a pair of integers, got {anchor!r}") from None
        if not (0 <= ay < kh and 0 <= ax < kw):
            raise ValueError(f"anchor {(ay, ax)} must lie inside the kernel {(kh, kw)}")
    if threads is None:
        nthreads = 0
    else:
        nthreads = _int_arg(threads, "threads")
        if nthreads < 1:
            raise ValueError(f"threads must be a positive integer or None, got {nthreads}")
    return _core.filter2d_u8(image, k, d, border, ay, ax, _check_algorithm(algorithm), nthreads)


def filter2d_u8_info(kernel, divisor, *, algorithm="auto") -> dict:
    """How `filter2d_u8` computes this kernel here, and why.

    Parameters
    ----------
    kernel : array_like
        2-D integer kernel, as for `filter2d_u8`.
    divisor : int
        Positive divisor.
    algorithm : str, optional
        'auto' or a forced algorithm, as for `filter2d_u8`.

    Returns
    -------
    dict
        ``algorithm``, ``ir_bits`` and ``ir_unsigned`` (the intermediate width), ``division_case``
        (A/B/C), ``separable`` and ``factors``, ``sum_range``, ``register_blocking``, ``path``
        (the vector tier) and ``why``.

    Raises
    ------
    ValueError
        As `filter2d_u8`, for the kernel, divisor and algorithm.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> info = tc.filter2d_u8_info(np.ones((3, 3), np.int8), 9)
    >>> info["algorithm"], info["separable"], info["factors"]
    ('sep', True, ([1, 1, 1], [1, 1, 1]))
    """
    return dict(_core.filter2d_u8_info(_check_kernel(kernel), _check_divisor(divisor),
                                       _check_algorithm(algorithm)))


def simd_u8_path() -> str:
    """The vector tier `filter2d_u8`'s ``sep`` and ``pairs`` algorithms use now.

    ``TENSORCONV_FORCE_AVX2=1`` caps it at 'avx2', ``TENSORCONV_FORCE_PORTABLE=1`` forces
    'portable'. Algorithms 1-3 and 'wide' are AVX2 on both vector tiers.

    Returns
    -------
    str
        'avx512', 'avx2' or 'portable'.

    Examples
    --------
    >>> import tensorconv as tc
    >>> tc.simd_u8_path() in ("avx512", "avx2", "portable")
    True
    """
    return filter2d_u8_info(np.ones((1, 1), np.int8), 1)["path"]
