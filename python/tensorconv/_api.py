"""correlate2d / convolve2d / plan: validation, scipy's mode and boundary rules, precision
resolution and dispatch. Every method computes only the *valid* correlation; 'same' and 'full'
and the three boundaries are padding plus one valid call (im2tensor paper, section 2.1.1)."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._arrays import backend_of
from .methods import methods as _methods

PRECISIONS = ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64")
_STORAGE = {"fp16": "float16", "fp16fp32": "float16", "bf16": "float32", "tf32": "float32",
            "fp32": "float32", "fp64": "float64"}
_MODES = ("full", "valid", "same")
_BOUNDARIES = {"fill": "fill", "pad": "fill", "wrap": "wrap", "circular": "wrap",
               "symm": "symm", "symmetric": "symm"}
# 'auto' sends host arrays to the GPU only above this many multiply-adds (staging costs ~ms).
_AUTO_GPU_MIN_MACS = 5e7


def default_precision(*dtype_strs: str) -> str:
    """float64 -> fp64, float32 -> fp32, float16 -> fp16fp32; integers, bool and anything wider
    than float64 -> fp64 (numpy's promotion of the two inputs decides)."""
    dt = np.result_type(*[np.dtype(d) if d != "bfloat16" else np.float32 for d in dtype_strs])
    if dt == np.float16:
        return "fp16fp32"
    if dt == np.float32:
        return "fp32"
    return "fp64"


def _check_array(x, backend, name: str):
    kind = backend.dtype_kind(x)
    if kind == "c":
        raise TypeError(f"{name} is complex ({backend.dtype_str(x)}); tensorconv supports real "
                        "inputs only: correlate the real and imaginary parts separately")
    if kind not in "biuf":
        raise TypeError(f"{name} has dtype {backend.dtype_str(x)}; expected a real numeric "
                        "array (bool, integer or floating)")
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got ndim={x.ndim}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")


def _check_precision(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; valid precisions: "
                         + ", ".join(PRECISIONS))
    return precision


def _check_mode(mode: str) -> str:
    if mode not in _MODES:
        raise ValueError(f"unknown mode {mode!r}; valid modes: full, valid, same")
    return mode


def _check_boundary(boundary: str) -> str:
    if boundary not in _BOUNDARIES:
        raise ValueError(f"unknown boundary {boundary!r}; valid boundaries: fill, wrap, symm "
                         "(aliases pad, circular, symmetric)")
    return _BOUNDARIES[boundary]


def _check_fillvalue(fillvalue) -> float:
    if isinstance(fillvalue, (complex, np.complexfloating)):
        raise TypeError("fillvalue must be real; complex values are unsupported")
    if not isinstance(fillvalue, (numbers.Real, np.bool_, np.number)) and not (
            np.ndim(fillvalue) == 0 and np.asarray(fillvalue).dtype.kind in "biuf"):
        raise TypeError(f"fillvalue must be a real scalar, got {type(fillvalue).__name__}")
    return float(fillvalue)


# Fastest deterministic GPU method per precision, from benchmarks/results (H100, 4096², same
# runs as the peers): small kernels are memory-bound (naive_shmem); the half formats go to the
# tensor cores (im2tensor_fused); fp32/fp64 switch to cuFFT above k ~ 15; rank-1 kernels take
# the separable passes (its fused pass beats naive_shmem from 3x3 on in the scalar precisions,
# e.g. fp32 0.068 vs 0.102 ms; fp16's half2 passes only from k ~ 10). im2tensor_atomic is faster
# still in bf16 but its last bits vary between runs, so 'auto' never picks it.
_SMALL_AREA = 100
_FFT_AREA = 225


def _rank1(kernel: np.ndarray, precision: str) -> bool:
    if min(kernel.shape) == 1:
        return True
    if not np.isfinite(kernel).all():
        return False
    s = np.linalg.svd(kernel, compute_uv=False)
    tol = 1e-13 if precision == "fp64" else 1e-6
    return bool(s[0] > 0 and s[1] <= tol * s[0])


def _gpu_preference(precision: str, kernel: np.ndarray | None) -> list:
    if kernel is None:
        return []
    area = kernel.shape[0] * kernel.shape[1]
    prefs = []
    if (area > _SMALL_AREA or precision != "fp16") and area > 1 and _rank1(kernel, precision):
        prefs.append("separable")
    if area <= _SMALL_AREA or precision == "tf32":
        prefs.append("naive_shmem")
    elif precision in ("fp16", "fp16fp32", "bf16"):
        prefs.append("im2tensor_fused")
    elif area > _FFT_AREA:
        prefs.append("fft")
    prefs.append("naive_shmem")
    return prefs


def choose_method(precision: str, on_device: bool, macs: float = 0.0,
                  kernel: np.ndarray | None = None) -> str:
    """The 'auto' rule. Device arrays stay on their device; host arrays go to the GPU when the
    work (`macs` multiply-adds) pays for the copies. On the GPU the measured ranking above
    decides, given the host float64 `kernel`; otherwise registry order."""
    rows = [m for m in _methods() if m.available and precision in m.precisions
            and m.entry == "correlate2d"]
    gpu = [m.name for m in rows if m.device == "cuda"]
    cpu = [m.name for m in rows if m.device == "cpu"]
    if gpu:  # the ranking needs an SVD of the kernel: skip it where no GPU method can run
        gpu = [n for n in _gpu_preference(precision, kernel) if n in gpu] + gpu
    if on_device:
        order = gpu
    else:
        order = gpu + cpu if macs >= _AUTO_GPU_MIN_MACS else cpu + gpu
    if not order:
        where = "CUDA" if on_device else "CPU or CUDA"
        raise ValueError(f"no available {where} method supports precision {precision!r}; "
                         "see tensorconv.methods() for what each method supports and why it "
                         "may be unavailable")
    return order[0]


def _pads(mode: str, kh: int, kw: int, convolve: bool):
    """Padding that turns a valid correlation into scipy's 'full' or 'same' output."""
    if mode == "valid":
        return (0, 0), (0, 0)
    if mode == "full":
        return (kh - 1, kh - 1), (kw - 1, kw - 1)
    # 'same' is centred as scipy centres it: correlation leans up/left, convolution down/right
    t = kh // 2 if convolve else (kh - 1) // 2
    l = kw // 2 if convolve else (kw - 1) // 2
    return (t, kh - 1 - t), (l, kw - 1 - l)


class Plan:
    """A reusable correlation (or convolution) of images of one shape with one kernel.

    Holds the method's prepared kernel state and workspace; call it with an image.
    """

    def __init__(self, kernel, image_shape, *, mode="full", boundary="fill", fillvalue=0,
                 method="auto", precision=None, convolve=False, device=None):
        kb = backend_of(kernel)
        kernel = kb.asarray(kernel)
        _check_array(kernel, kb, "kernel")
        self.mode = _check_mode(mode)
        self.boundary = _check_boundary(boundary)
        self.fillvalue = _check_fillvalue(fillvalue)
        self.convolve = bool(convolve)
        try:
            ih, iw = (int(s) for s in image_shape)
        except (TypeError, ValueError):
            raise ValueError(f"image_shape must be two integers, got {image_shape!r}") from None
        if ih < 1 or iw < 1:
            raise ValueError(f"image_shape must be positive, got {(ih, iw)}")
        self.image_shape = (ih, iw)
        kh, kw = int(kernel.shape[0]), int(kernel.shape[1])
        if self.mode == "valid" and (kh > ih or kw > iw):
            raise ValueError(f"for 'valid' mode the image {self.image_shape} must be at least as "
                             f"large as the kernel {(kh, kw)} in every dimension")
        self.precision = _check_precision(
            precision if precision is not None else default_precision(kb.dtype_str(kernel)))
        self.storage = _STORAGE[self.precision]
        self.pads = _pads(self.mode, kh, kw, self.convolve)
        ph = ih + self.pads[0][0] + self.pads[0][1]
        pw = iw + self.pads[1][0] + self.pads[1][1]
        if not isinstance(method, str):
            raise TypeError(f"method must be a string, got {type(method).__name__}")
        k64 = kb.to_host_float64(kernel)
        if self.convolve:
            k64 = np.ascontiguousarray(k64[::-1, ::-1])
        if method == "auto":
            on_device = kb.on_device if device is None else device == "cuda"
            method = choose_method(self.precision, on_device,
                                   float(ph - kh + 1) * (pw - kw + 1) * kh * kw, k64)
        self.method = method
        self._device = {m.name: m.device for m in _methods()}.get(method)
        self._plan = _core.make_plan(method, k64, ph, pw, self.precision)
        self.kernel_shape = (kh, kw)
        self.out_shape = tuple(self._plan.out_shape)

    @property
    def workspace_bytes(self) -> int:
        """Extra memory the method holds or needs beyond input and output."""
        return int(self._plan.workspace_bytes)

    def __repr__(self):
        return (f"tensorconv.Plan(method={self.method!r}, precision={self.precision!r}, "
                f"kernel={self.kernel_shape}, image={self.image_shape}, mode={self.mode!r}, "
                f"boundary={self.boundary!r})")

    def __call__(self, image):
        b = backend_of(image)
        image = b.asarray(image)
        _check_array(image, b, "image")
        if tuple(image.shape) != self.image_shape:
            raise ValueError(f"plan was made for images of shape {self.image_shape}, got "
                             f"{tuple(image.shape)}")
        if b.on_device and self._device == "cpu":
            raise ValueError(f"method {self.method!r} runs on the CPU and this image is on a CUDA "
                             "device; pass a NumPy array or choose a CUDA method")
        x = b.pad(b.to_storage(image, self.storage), self.pads, self.boundary, self.fillvalue)
        if b.row_stride(x) != x.shape[1]:
            x = b.to_storage(x, self.storage)
        out = b.empty(self.out_shape, self.storage, like=x)
        self._plan.run(b.pointer(x), x.shape[0], x.shape[1], b.row_stride(x), b.pointer(out),
                       out.shape[0], out.shape[1], b.row_stride(out), self.storage, b.on_device,
                       b.stream(x))
        return out


def plan(kernel, image_shape, *, mode="full", boundary="fill", fillvalue=0, method="auto",
         precision=None, convolve=False, device=None) -> Plan:
    """Prepare a reusable correlation (convolve=False) or convolution of `kernel` over images of
    `image_shape`. `device` ('cpu' or 'cuda') guides method='auto' for host kernels."""
    return Plan(kernel, image_shape, mode=mode, boundary=boundary, fillvalue=fillvalue,
                method=method, precision=precision, convolve=convolve, device=device)


def _run(in1, in2, mode, boundary, fillvalue, method, precision, convolve: bool):
    b1, b2 = backend_of(in1), backend_of(in2)
    in1, in2 = b1.asarray(in1), b2.asarray(in2)
    _check_array(in1, b1, "in1")
    _check_array(in2, b2, "in2")
    _check_mode(mode)
    if precision is None:
        precision = default_precision(b1.dtype_str(in1), b2.dtype_str(in2))
    swapped = False
    if mode == "valid":
        s1, s2 = tuple(in1.shape), tuple(in2.shape)
        ok1 = all(a >= b for a, b in zip(s1, s2))
        ok2 = all(a <= b for a, b in zip(s1, s2))
        if not (ok1 or ok2):
            raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                             f"every dimension (got {s1} and {s2})")
        if not ok1:  # scipy swaps the inputs and flips the result
            in1, in2, b1, b2, swapped = in2, in1, b2, b1, True
    device = "cuda" if b1.on_device else None
    p = Plan(in2, in1.shape, mode=mode, boundary=boundary, fillvalue=fillvalue, method=method,
             precision=precision, convolve=convolve, device=device)
    out = p(in1)
    # scipy flips a swapped correlation; convolution commutes, so it needs no flip
    return b1.flip(out) if swapped and not convolve else out


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, *, method="auto",
                precision=None):
    """Cross-correlate two 2-D arrays, as scipy.signal.correlate2d, by any registry method."""
    return _run(in1, in2, mode, boundary, fillvalue, method, precision, convolve=False)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, *, method="auto",
               precision=None):
    """Convolve two 2-D arrays, as scipy.signal.convolve2d, by any registry method."""
    return _run(in1, in2, mode, boundary, fillvalue, method, precision, convolve=True)
