"""Per-image kernels: a stack of K kernels, image i of a (K, H, W) stack with kernel i, or every
image of channel c of an (N, K, H, W) stack with kernel c (the depthwise layout).

The rule (correlate2d / convolve2d with batch=True, and tensorconv.plan): a 3-D in2 / kernel
is a stack of K kernels (K, kh, kw); the images are then (K, H, W) or (N, K, H, W), and any
other count of images along the kernel axis is a ValueError (never a broadcast). Mode, boundary
and fill apply to every image as scipy applies them to one.

Methods whose registry row says kernel_stack (direct on the CPU; on the GPU naive_shmem, and fft
for real fp16fp32 / fp32 / fp64) take every kernel in one plan and a device stack in one call;
every other method, and host stacks on a CUDA method, run one tensorconv.Plan per kernel over
that kernel's images (a strided sub-stack each). `auto` on a device stack in fft's precisions
takes fft or naive_shmem, whichever the GPU cost model predicts faster for one padded image.
"""

from __future__ import annotations

import numpy as np

from . import _api, _autotune
from ._arrays import backend_of
from .methods import _rows as _methods

# precisions the fft method takes per-image kernels in (its fp16 transforms take one kernel)
_FFT_STACK_PRECISIONS = ("fp16fp32", "fp32", "fp64")


def _check_kernels(kernels, kb):
    kind = kb.dtype_kind(kernels)
    if kind not in "biuf":
        raise TypeError(f"per-image kernels have dtype {kb.dtype_str(kernels)}; they take real "
                        "numeric arrays (bool, integer or floating; complex is not supported)")
    if kernels.ndim != 3:
        raise ValueError(f"per-image kernels are a 3-D stack (K, kh, kw), got ndim={kernels.ndim}")
    if 0 in tuple(kernels.shape):
        raise ValueError(f"the kernel stack is empty (shape {tuple(kernels.shape)})")


class PerImagePlan:
    """A reusable correlation (or convolution) of stacks of images of one shape, image i with
    kernel i of a (K, kh, kw) stack: call it with a (K, H, W) or (N, K, H, W) stack."""

    def __init__(self, kernels, image_shape, *, mode="full", boundary="fill", fillvalue=0,
                 method="auto", precision=None, convolve=False, device=None, options=None):
        kb = backend_of(kernels)
        kernels = kb.asarray(kernels)
        _check_kernels(kernels, kb)
        self.options = _api.check_options(options)
        if self.options and method == "auto":
            raise ValueError("plan options choose code paths inside one method; name the method")
        if not isinstance(method, str):
            raise TypeError(f"method must be a string, got {type(method).__name__}")
        self.mode = _api._check_mode(mode)
        self.boundary = _api._check_boundary(boundary)
        fill = _api._check_fillvalue(fillvalue)
        self.fillvalue = _api._fill_for(fill, False)
        self.convolve = bool(convolve)
        if device not in _api._DEVICES:
            raise ValueError(f"unknown device {device!r}; valid devices: None, 'cpu', 'cuda'")
        self.image_shape = _api._image_shape(image_shape)
        ih, iw = self.image_shape
        K, kh, kw = (int(d) for d in kernels.shape)
        if self.mode == "valid" and (kh > ih or kw > iw):
            raise ValueError(f"for 'valid' mode the image {self.image_shape} must be at least as "
                             f"large as the kernels {(kh, kw)} in every dimension")
        self.precision = _api._check_precision(
            precision if precision is not None else _api.default_precision(kb.dtype_str(kernels)))
        self.storage = _api._STORAGE[self.precision]
        self.kernel_count, self.kernel_shape = K, (kh, kw)
        self.pads = _api._pads(self.mode, kh, kw, self.convolve)
        ph = ih + sum(self.pads[0])
        pw = iw + sum(self.pads[1])
        self._padded = (ph, pw)
        self.out_shape = (ph - kh + 1, pw - kw + 1)
        k64 = kb.to_host_float64(kernels)
        self._kernels = k64  # as given (each Plan of the per-kernel path flips its own)
        rows = {m.name: m for m in _methods() if m.entry == "correlate2d"}
        on_device = kb.on_device if device is None else device == "cuda"
        if method == "auto":
            method = self._auto(rows, on_device, k64, ph, pw)
        if method not in rows:
            _api.make_core_plan(method, k64[0], ph, pw, self.precision)  # the core's message
        self.method = method
        info = rows[method]
        self._device = info.device
        self._device_arg = device
        self._native = bool(info.kernel_stack) and (
            method != "fft" or self.precision in _FFT_STACK_PRECISIONS)
        self._core = None
        self._plans = None
        if self._native:
            e = np.ascontiguousarray(k64[:, ::-1, ::-1]) if self.convolve else k64
            self._core = _api.make_core_plan(method, e, ph, pw, self.precision,
                                             options=self.options)
        else:
            self._per_kernel()

    def _auto(self, rows, on_device, k64, ph, pw) -> str:
        ok = {n for n, m in rows.items() if m.available and self.precision in m.precisions}
        native = [n for n in ("fft", "naive_shmem") if n in ok]
        if on_device and native and self.precision in _FFT_STACK_PRECISIONS:
            finite = bool(np.isfinite(k64).all())
            order = _autotune.rank(self.precision, self.kernel_shape, (ph, pw), native,
                                   finite_kernel=finite, fixed=False)[0]
            if not order and not finite and "naive_shmem" in native:
                return "naive_shmem"  # spectra would spread a NaN over every output
            return order[0] if order else native[0]
        if not on_device and "direct" in ok:
            return "direct"
        kh, kw = self.kernel_shape
        return _api.choose_method(self.precision, on_device,
                                  float(ph - kh + 1) * (pw - kw + 1) * kh * kw, k64[0], (ph, pw))

    @property
    def native(self) -> bool:
        """Whether the method takes every kernel in one plan and the stack in one call."""
        return self._native

    def _per_kernel(self):
        if self._plans is None:
            self._plans = [_api.Plan(k, self.image_shape, mode=self.mode, boundary=self.boundary,
                                     fillvalue=self.fillvalue, method=self.method,
                                     precision=self.precision, convolve=self.convolve,
                                     device=self._device_arg, options=self.options)
                           for k in self._kernels]
        return self._plans

    def __repr__(self):
        return (f"tensorconv.PerImagePlan(method={self.method!r}, precision={self.precision!r}, "
                f"kernels={self.kernel_count}x{self.kernel_shape}, image={self.image_shape}, "
                f"mode={self.mode!r}, boundary={self.boundary!r}, native={self._native})")

    def check_images(self, b, images):
        kind = b.dtype_kind(images)
        if kind not in "biuf":
            raise TypeError(f"images have dtype {b.dtype_str(images)}; per-image kernels take "
                            "real numeric arrays")
        if images.ndim not in (3, 4):
            raise ValueError("per-image kernels take a (K, H, W) stack (image i with kernel i) "
                             "or an (N, K, H, W) stack (channel c with kernel c), got "
                             f"ndim={images.ndim}")
        if 0 in tuple(images.shape):
            raise ValueError(f"the image stack is empty (shape {tuple(images.shape)})")
        if int(images.shape[-3]) != self.kernel_count:
            axis = "images" if images.ndim == 3 else "channels"
            raise ValueError(f"{self.kernel_count} per-image kernels need {self.kernel_count} "
                             f"{axis} along axis {images.ndim - 3}, got {images.shape[-3]} "
                             f"(images of shape {tuple(images.shape)})")
        if tuple(images.shape[-2:]) != self.image_shape:
            raise ValueError(f"plan was made for images of shape {self.image_shape}, the "
                             f"stack's images have shape {tuple(images.shape[-2:])}")

    def __call__(self, images):
        """Image i of a (K, H, W) stack with kernel i, or image (n, c) of an (N, K, H, W) stack
        with kernel c; the result has the stack's leading shape and the plan's out_shape."""
        b = backend_of(images)
        images = b.asarray(images)
        self.check_images(b, images)
        if b.on_device and self._device == "cpu":
            raise ValueError(f"method {self.method!r} runs on the CPU and these images are on a "
                             "CUDA device; pass NumPy arrays or choose a CUDA method")
        lead = tuple(images.shape[:-2])
        if self._native and (b.on_device or self._device == "cpu"):
            return self._run_native(b, images, lead)
        return self._run_per_kernel(b, images, lead)

    def _run_native(self, b, images, lead):
        x = b.pad(b.to_storage(images, self.storage), self.pads, self.boundary, self.fillvalue)
        x = b.to_storage(x, self.storage).reshape((-1,) + self._padded)  # contiguous stack
        out = b.empty((x.shape[0],) + self.out_shape, self.storage, like=x)
        self._core.run_batch(b.pointer(x), x.shape[0], b.batch_stride(x), x.shape[1],
                             x.shape[2], b.row_stride(x), b.pointer(out), b.batch_stride(out),
                             out.shape[1], out.shape[2], b.row_stride(out), self.storage,
                             b.on_device, b.stream(x))
        return out.reshape(lead + self.out_shape)

    def _run_per_kernel(self, b, images, lead):
        K = self.kernel_count
        x = images.reshape((-1, K) + self.image_shape)
        out = b.empty((x.shape[0], K) + self.out_shape, self.storage, like=x)
        for c, p in enumerate(self._per_kernel()):
            out[:, c] = p(x[:, c])
        return out.reshape(lead + self.out_shape)


def run(in1, in2, mode, boundary, fillvalue, method, precision, convolve, dtype, options):
    """correlate2d / convolve2d with batch=True and a 3-D in2 (the module's rule)."""
    b1, b2 = backend_of(in1), backend_of(in2)
    in1, in2 = b1.asarray(in1), b2.asarray(in2)
    _check_kernels(in2, b2)
    _api._check_mode(mode)
    if b1.dtype_kind(in1) not in "biuf":
        raise TypeError(f"in1 has dtype {b1.dtype_str(in1)}; per-image kernels take real "
                        "numeric arrays")
    if in1.ndim not in (3, 4):
        raise ValueError(f"with a stack of {in2.shape[0]} kernels, in1 must be a (K, H, W) or "
                         f"(N, K, H, W) stack with K = {in2.shape[0]}, got shape "
                         f"{tuple(in1.shape)}")
    if 0 in tuple(in1.shape):
        raise ValueError(f"in1 is empty (shape {tuple(in1.shape)})")
    if mode == "valid" and any(a < k for a, k in zip(in1.shape[-2:], in2.shape[-2:])):
        raise ValueError("For 'valid' mode with per-image kernels the images must be at least as "
                         f"large as the kernels in every dimension (got images "
                         f"{tuple(in1.shape[-2:])} and kernels {tuple(in2.shape[-2:])})")
    rt = _api.result_dtype(b1.dtype_str(in1), b2.dtype_str(in2))
    out_dtype = np.dtype(dtype) if dtype is not None else (rt if rt.kind in "biu" else None)
    if precision is None:
        precision = _api.default_precision(b1.dtype_str(in1), b2.dtype_str(in2))
    device = "cuda" if b1.on_device else None
    p = PerImagePlan(in2, in1.shape[-2:], mode=mode, boundary=boundary, fillvalue=fillvalue,
                     method=method, precision=precision, convolve=convolve, device=device,
                     options=options)
    out = p(in1)
    return b1.cast(out, out_dtype) if out_dtype is not None else out
