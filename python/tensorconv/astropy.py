"""tensorconv.astropy: drop-in ``astropy.convolution.convolve`` and ``convolve_fft`` for 2-D
images, by any correlate2d method of the registry, on NumPy arrays (CPU) and CuPy / PyTorch CUDA
arrays (GPU).

Same signature, rules and results as astropy 8 (boundaries None / 'fill' / 'wrap' / 'extend',
nan_treatment 'interpolate' / 'fill', mask, preserve_nan, kernel normalisation and its errors,
even kernels -> KernelSizeError in convolve, Kernel2D objects, integer and masked input), with
two keyword-only additions: ``method`` (any correlate2d method; 'auto' as elsewhere) and
``precision`` ('fp64' or 'fp32'; default from the data: float32 -> fp32, else fp64).

How NaN interpolation is done (each output is sum_valid(w x) / sum_valid(w)): one correlation
of the padded image with its invalid pixels set to 0 gives the numerator; the weight sum is not
a second sweep but the kernel sum minus the weights of the invalid pixels under each window, a
sparse scatter of kh*kw adds per invalid pixel (csrc/cpu/nan_interp.*, csrc/cuda/methods/nan_interp/nan_interp.cu).
Where that difference would cancel (valid weight below a quarter of sum|w|: beside NaN blocks
larger than the kernel, image corners with a NaN fill) both sums are recomputed over the window
in astropy's order, so those outputs equal astropy's float64 result exactly, including its
no-valid-weight rule.

Memory beyond input and output: the padded copy of the image (CPU: reused between calls); on a
GPU also a uint8 mask and an int64 index slot per padded pixel and a float (fp32 data) or double
weight sum per output.

What goes to astropy itself (the call still works, at astropy's speed): input that is not a
2-D array (1-D, 3-D, NDData, an astropy Kernel as the *array*), a kernel with NaN/inf in
``convolve``, and convolve_fft's implementation options when not at their defaults (crop=False,
return_fft, psf_pad, fft_pad, dealias, fftn/ifftn, complex_dtype). Differences (by design):
complex data raises TypeError (astropy drops the imaginary part of convolve's input with a
ComplexWarning and returns the real part of convolve_fft's complex result); an unknown boundary
raises ValueError in convolve_fft too (astropy silently wraps); float32 data is computed in fp32
(max relative error 1e-5; pass precision='fp64' for astropy's float64 arithmetic) and
convolve_fft returns float32 for it (astropy: float64).
"""

from __future__ import annotations

import math
import warnings
import numpy as np
from astropy.convolution import convolve as _ap_convolve
from astropy.convolution import convolve_fft as _ap_convolve_fft
from astropy.convolution.core import MAX_NORMALIZATION, Kernel
from astropy.convolution.utils import KernelSizeError
from astropy.utils.exceptions import AstropyUserWarning

from . import _core, _plan_cache
from ._api import Plan, _data_device
from ._arrays import backend_of

__all__ = ["convolve", "convolve_fft", "KernelSizeError"]

BOUNDARY_OPTIONS = (None, "fill", "wrap", "extend")
# np.pad / backend pad names of astropy's boundaries
_PAD = {"fill": "fill", "wrap": "wrap", "extend": "edge"}
# below this valid weight (times sum|w|) the scattered weight sum is recomputed over the window
_TAU = 0.25
_FFT_ZERO_WT = 10 * np.finfo(np.float64).eps
_STORAGE = {"fp32": "float32", "fp64": "float64"}


# ---- array operations on NumPy / CuPy / PyTorch ---------------------------------------------

class _Ops:
    """The few element-wise operations the front end needs, for one backend."""

    def __init__(self, b):
        self.b = b
        self.torch = b.name == "torch"
        self.xp = None if self.torch else b.xp

    def isnan(self, x):
        return self.b.torch.isnan(x) if self.torch else self.xp.isnan(x)

    def invalid_fft(self, x):  # convolve_fft: NaN and inf
        if self.torch:
            return ~self.b.torch.isfinite(x)
        return ~self.xp.isfinite(x)

    def flatnonzero(self, m):
        if self.torch:
            return self.b.torch.nonzero(m.reshape(-1)).reshape(-1)
        return self.xp.flatnonzero(m)

    def zeros(self, shape, dtype: str, like):
        if self.torch:
            t = self.b.torch
            return t.zeros(shape, dtype=getattr(t, dtype), device=like.device)
        return self.xp.zeros(shape, dtype=dtype)

    def sum64(self, x) -> float:
        if self.torch:
            return float(x.sum(dtype=self.b.torch.float64))
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: NaN is the answer
            return float(x.sum(dtype=np.float64))

    def any(self, m) -> bool:
        return bool(m.any())

    def fill_where(self, x, m, value: float):
        """x[m] = value in place, without the host sync of boolean indexing on a device."""
        if self.torch:
            x.masked_fill_(m, value)
        else:
            self.xp.copyto(x, value, where=m)

    def empty(self, shape, dtype: str, like):
        if self.torch:
            t = self.b.torch
            return t.empty(shape, dtype=getattr(t, dtype), device=like.device)
        return self.xp.empty(shape, dtype=dtype)

    def copy(self, x):
        return x.clone() if self.torch else x.copy()

    def as_uint8(self, m):
        return m.to(self.b.torch.uint8) if self.torch else m.view(np.uint8)

    def astype(self, x, dtype: str):
        if self.torch:
            return x.to(getattr(self.b.torch, dtype))
        return x.astype(dtype, copy=False)

    def dtype_name(self, x) -> str:
        return self.b.dtype_str(x)

    def from_host(self, a, like):
        if self.torch:
            return self.b.torch.as_tensor(a, device=like.device)
        return self.xp.asarray(a)

    def pad(self, x, pads, boundary, fill, entry=None):
        """x padded (a new array we own). On the CPU into a buffer kept with the plan (taken
        out of the cache while in use, so concurrent calls never share one): a fresh 2048^2
        float64 array costs as much in page faults as the copy itself."""
        if self.b.on_device or entry is None:
            return self.b.pad(x, pads, boundary, fill)
        (t, bt), (l, r) = pads
        H, W = x.shape
        if boundary == "wrap" and (t > H or bt > H or l > W or r > W):
            return self.b.pad(x, pads, boundary, fill)
        shape = (H + t + bt, W + l + r)
        out = entry.extra.pop(("pad", x.dtype.str), None)
        if out is None or out.shape != shape:
            out = np.empty(shape, x.dtype)
        out[t:t + H, l:l + W] = x
        if boundary == "fill":
            out[:t] = fill
            out[t + H:] = fill
            out[t:t + H, :l] = fill
            out[t:t + H, l + W:] = fill
        elif boundary == "edge":
            out[:t, l:l + W] = x[0]
            out[t + H:, l:l + W] = x[-1]
            out[:, :l] = out[:, l:l + 1]
            out[:, l + W:] = out[:, l + W - 1:l + W]
        else:  # wrap
            out[:t, l:l + W] = x[H - t:]
            out[t + H:, l:l + W] = x[:bt]
            out[:, :l] = out[:, W:W + l]
            out[:, l + W:] = out[:, l:l + r]
        return out

    def release(self, entry, P):
        """Give a padded buffer back to the plan's cache (CPU)."""
        if not self.b.on_device and entry is not None:
            entry.extra[("pad", P.dtype.str)] = P


# ---- plans -----------------------------------------------------------------------------------

class _Entry:
    """A cached set-up (in tensorconv._plan_cache): the 'valid' Plan over the padded image and
    what calls keep with it (a CPU pad buffer per dtype; the kernel on the data's device). The
    cache reads the plan's attributes (_device: pool and checkout; workspace_bytes) through it."""

    __slots__ = ("plan", "extra", "_device")

    def __init__(self, plan):
        self.plan, self.extra, self._device = plan, {}, plan._device

    def __getattr__(self, name):
        return getattr(self.plan, name)

    @property
    def workspace_bytes(self) -> int:
        return int(self.plan.workspace_bytes) + sum(
            int(getattr(v, "nbytes", 0) or 0) for v in list(self.extra.values()))


def _plan_key(kf: np.ndarray, padded_shape, method, precision, b, like):
    """The plan cache's key of a set-up: the kernel's content, the padded shape, method and
    precision, the data's CUDA device and stream (None, None on the host); None: not cached."""
    c = _plan_cache.content(kf)
    if c is None:
        return None
    dev, stream = (_data_device(b, like), b.stream(like)) if b.on_device else (None, None)
    return (dev, stream, "astropy", c, kf.dtype.str, kf.shape, tuple(padded_shape), method,
            precision)


def _run_plan(key, kf, padded_shape, method, precision, b, body, pre):
    """body(entry) with the cached set-up of `key` (or a new one), through the plan cache: a
    CUDA one checked out for the call, the out-of-memory retry. `pre`: a CPU entry acquired
    already (its pad buffer staged the image), or None."""
    def build():
        return _Entry(Plan(kf, padded_shape, mode="valid", method=method, precision=precision,
                           device="cuda" if b.on_device else None))

    if b.on_device:
        return _plan_cache.run(key, build, body, False)
    return _plan_cache.run(key, build, body, True, plan=pre)


def _kernel_on(entry, ops, kf, like):
    """The correlation weights (float64) on the data's device, for nan_interp."""
    if not ops.b.on_device:
        return kf
    dev = str(getattr(like, "device", ""))
    k = entry.extra.get((ops.b.name, dev))
    if k is None:
        k = ops.from_host(kf, like)
        entry.extra[(ops.b.name, dev)] = k
    return k


# ---- argument handling -----------------------------------------------------------------------

def _is_nddata(x) -> bool:
    try:
        from astropy.nddata import NDData
    except ImportError:  # pragma: no cover
        return False
    return isinstance(x, NDData)


def _backend_array(array):
    """(backend, array, unit, masked-array mask or None); None where astropy should take it."""
    unit = getattr(array, "unit", None)
    if unit is not None and hasattr(array, "value"):
        array = array.value
    mmask = None
    if isinstance(array, np.ma.MaskedArray):
        mmask = np.ma.getmaskarray(array) if np.ma.is_masked(array) else None
        array = array.data
    b, array = _as_backend(array)
    return b, array, unit, mmask


def _as_backend(x):
    """(backend, array): device arrays as they are, anything else as a NumPy array (astropy's
    TypeError for what cannot become one)."""
    b = backend_of(x)
    if not b.on_device and not isinstance(x, np.ndarray):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as e:
            raise TypeError("input should be a Numpy array or something convertible into a "
                            "float array", e) from None
    return b, b.asarray(x)


def _check_data(b, array, name="array"):
    kind = b.dtype_kind(array)
    if kind == "c":
        raise TypeError(f"{name} is complex ({b.dtype_str(array)}); tensorconv.astropy takes real "
                        "data (astropy would drop the imaginary part): convolve the real and "
                        "imaginary parts separately")
    if kind not in "biuf":
        raise TypeError("input should be a Numpy array or something convertible into a float "
                        f"array (got dtype {b.dtype_str(array)})")


def _host_kernel(kernel, name="kernel") -> np.ndarray:
    """The kernel as a host float64 array (Kernel objects by their .array)."""
    if np.ma.is_masked(kernel):
        raise ValueError("The kernel is a masked array with masked values. Use "
                         "kernel.filled(fill_value) to fill masked values before passing to "
                         "convolve.")
    if isinstance(kernel, Kernel):
        kernel = kernel.array
    if hasattr(kernel, "unit") and hasattr(kernel, "value"):
        kernel = kernel.value
    if isinstance(kernel, np.ma.MaskedArray):
        kernel = kernel.data
    kb, kernel = _as_backend(kernel)
    _check_data(kb, kernel, name)
    return np.array(kb.to_host_float64(kernel), dtype=np.float64, copy=True)


def _precision(precision, dtype_str: str) -> str:
    if precision is None:
        return "fp32" if dtype_str in ("float32", "float16") else "fp64"
    if precision not in _STORAGE:
        raise ValueError(f"unknown precision {precision!r}; tensorconv.astropy computes in "
                         "'fp64' or 'fp32'")
    return precision


def _check_mask(b, mask, shape):
    mb = backend_of(mask)
    if mb.on_device != b.on_device:
        raise ValueError("mask must be on the same device as array (a NumPy mask for a NumPy "
                         "array, a CUDA array for a CUDA array)")
    if not mb.on_device and not isinstance(mask, np.ndarray):
        mask = np.asarray(mask)
    mask = mb.asarray(mask)
    if tuple(mask.shape) != tuple(shape):
        raise ValueError(f"mask must have the array's shape {tuple(shape)}, got "
                         f"{tuple(mask.shape)}")
    return mask != 0


def _check_method(method):
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    return method


def _pads(kh, kw):
    """astropy centres a kernel at index (k-1)//2 before ... k//2 after (odd: k//2 each side)."""
    return ((kh - 1) // 2, kh // 2), ((kw - 1) // 2, kw // 2)


def _prepare(b, ops, array, mmask, mask, storage):
    """The data in the storage dtype, masked pixels set to NaN; `own` says whether it is a copy
    this call may write into."""
    x = b.to_storage(array, storage)
    own = x is not array and (not ops.torch or x.data_ptr() != array.data_ptr())
    m = None
    if mmask is not None:
        m = ops.from_host(mmask, x) if b.on_device else mmask
    if mask is not None:
        mm = _check_mask(b, mask, x.shape)
        m = mm if m is None else (m | mm)
    if m is not None:
        if not own:
            x, own = ops.copy(x), True
        ops.fill_where(x, m, float("nan"))
    return x, own


def _out_dtype(ops, array, fft: bool, precision: str) -> str:
    name = ops.dtype_name(array)
    if name in ("float16", "float32", "float64") and not fft:
        return name
    if fft and precision == "fp32":
        return "float32"
    return "float64"


def _mark(ops, P, nonfinite: bool):
    """Invalid pixels of the padded image P (our own array): set to 0 in place; returns the
    uint8 mask, their flat indices and (on a device) the device-side count. CPU: NumPy, indices
    ascending; GPU: one kernel, no host sync."""
    b = ops.b
    if not b.on_device:
        invalid = ~np.isfinite(P) if nonfinite else np.isnan(P)
        idx = np.flatnonzero(invalid)
        P.reshape(-1)[idx] = 0.0
        return invalid.view(np.uint8), idx, None
    invalid = ops.empty(tuple(P.shape), "uint8", P)
    idx = ops.empty((P.shape[0] * P.shape[1],), "int64", P)
    count = ops.zeros((2,), "int64", P)  # [invalid pixels, NaN results (nan_interp)]
    _core.nan_mark(b.pointer(P), P.shape[0], P.shape[1], b.row_stride(P), ops.dtype_name(P),
                   b.pointer(invalid), b.pointer(idx), b.pointer(count), nonfinite, b.stream(P))
    return invalid, idx, count


def _finish_interp(ops, entry, kf, P, marked, top, mode, scale, wnorm=1.0, floor=0.0,
                   floor_value=0.0):
    """top (the plan's numerator over P) -> the interpolated result, in place; and the number
    of NaN results (CPU) or the device array whose element 1 holds it (GPU)."""
    b = ops.b
    invalid, idx, count = marked
    kh, kw = kf.shape
    ksum_seq, abs_ksum = _interp_sums(kf)
    s_f32 = b.on_device and ops.dtype_name(top) == "float32"  # fp32 data: float weight sums
    s = (ops.zeros(tuple(top.shape), "float32" if s_f32 else "float64", top)
         if b.on_device else None)
    kd = _kernel_on(entry, ops, kf, top)
    dev = count is not None
    nans = _core.nan_interp(
        b.pointer(P), P.shape[0], P.shape[1], b.row_stride(P), b.pointer(invalid),
        b.pointer(idx), -1 if dev else int(idx.shape[0]), b.pointer(kd), kh, kw,
        b.pointer(s) if dev else 0, b.pointer(top), top.shape[0], top.shape[1],
        b.row_stride(top), ops.dtype_name(top), ksum_seq, abs_ksum, float(scale), _TAU, mode,
        float(wnorm), float(floor), float(floor_value), b.on_device, b.stream(top),
        b.pointer(count) if dev else 0, s_f32, b.pointer(count) + 8 if dev else 0)
    # the number of NaN results: counted on the CPU; on a GPU in count[1] (read on demand)
    return top, (nans if count is None else count)


def _interp_sums(kf):
    """astropy's sum of the weights in its loop order (row-major, sequential) and sum|w|."""
    flat = kf.ravel()
    seq = float(np.cumsum(flat)[-1]) if flat.size else 0.0
    return seq, float(np.abs(flat).sum())


# ---- convolve --------------------------------------------------------------------------------

def convolve(array, kernel, boundary="fill", fill_value=0.0, nan_treatment="interpolate",
             normalize_kernel=True, mask=None, preserve_nan=False, normalization_zero_tol=1e-8,
             *, method="auto", precision=None):
    """``astropy.convolution.convolve`` for 2-D arrays, by any correlate2d method.

    The same arguments, defaults, rules and results as astropy's; NumPy arrays in and out, CuPy
    and PyTorch CUDA arrays stay on their device. Input astropy handles that this function does
    not (not a 2-D array, a kernel with NaN/inf) goes to astropy itself.

    Parameters
    ----------
    array : array_like
        2-D image (NumPy, masked array, list, ``Quantity``, CuPy, PyTorch CUDA).
    kernel : array_like or astropy.convolution.Kernel2D
        Odd-sized 2-D kernel.
    boundary : {'fill', None, 'wrap', 'extend'}, optional
        astropy's boundary rules.
    fill_value : float, optional
        The value outside the image for 'fill'.
    nan_treatment : {'interpolate', 'fill'}, optional
        Interpolate NaNs from their neighbours' weights, or replace them by `fill_value`.
    normalize_kernel : bool, optional
        Divide the kernel by its sum.
    mask : array_like, optional
        Pixels to treat as NaN.
    preserve_nan : bool, optional
        Put NaN back where the input had NaN.
    normalization_zero_tol : float, optional
        The tolerance for a kernel summing to zero.
    method : str, optional
        Keyword only: 'auto' or any correlate2d method of `tensorconv.methods`.
    precision : {None, 'fp64', 'fp32'}, optional
        Keyword only: default 'fp32' for float32 data, else 'fp64'.

    Returns
    -------
    array
        The convolved image (float64, or float32 in fp32), same array type as `array`.

    Raises
    ------
    ValueError
        astropy's errors: an invalid boundary or nan_treatment, a masked kernel, a kernel that
        cannot be normalised, mismatched mask shape.
    KernelSizeError
        A kernel with an even side.
    TypeError
        Complex data (astropy drops the imaginary part with a warning instead).

    Examples
    --------
    >>> import numpy as np
    >>> import astropy.convolution as ac
    >>> from tensorconv.astropy import convolve
    >>> img = np.random.default_rng(0).random((32, 32))
    >>> img[10, 10] = np.nan
    >>> kernel = ac.Gaussian2DKernel(1.5)
    >>> out = convolve(img, kernel, boundary="extend")
    >>> np.allclose(out, ac.convolve(img, kernel, boundary="extend"))
    True
    >>> bool(np.isfinite(out).all())                 # the NaN was interpolated
    True
    """
    if boundary not in BOUNDARY_OPTIONS:
        raise ValueError(f"Invalid boundary option: must be one of {list(BOUNDARY_OPTIONS)}")
    if nan_treatment not in ("interpolate", "fill"):
        raise ValueError("nan_treatment must be one of 'interpolate','fill'")
    if np.ma.is_masked(kernel):
        raise ValueError("The kernel is a masked array with masked values. Use "
                         "kernel.filled(fill_value) to fill masked values before passing to "
                         "convolve.")
    if _is_nddata(array) or isinstance(array, Kernel):
        return _ap_convolve(array, kernel, boundary=boundary, fill_value=fill_value,
                            nan_treatment=nan_treatment, normalize_kernel=normalize_kernel,
                            mask=mask, preserve_nan=preserve_nan,
                            normalization_zero_tol=normalization_zero_tol)
    b, arr, unit, mmask = _backend_array(array)
    if arr.ndim != 2:
        if b.on_device:
            raise ValueError(f"array must be 2-D on a CUDA device, got ndim={arr.ndim} (astropy "
                             "takes 1-D and 3-D NumPy arrays)")
        return _ap_convolve(array, kernel, boundary=boundary, fill_value=fill_value,
                            nan_treatment=nan_treatment, normalize_kernel=normalize_kernel,
                            mask=mask, preserve_nan=preserve_nan,
                            normalization_zero_tol=normalization_zero_tol)
    _check_data(b, arr)
    k = _host_kernel(kernel)
    if k.ndim != 2:
        raise ValueError("array and kernel have differing number of dimensions.")
    if k.shape[0] % 2 == 0 or k.shape[1] % 2 == 0:
        raise KernelSizeError("Kernel size must be odd in all axes.")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError("cannot convolve empty array")
    if not np.isfinite(k).all():
        if b.on_device:
            raise ValueError("kernel holds NaN or inf: astropy's result is NaN wherever it "
                             "reaches; not supported on the device")
        return _ap_convolve(array, kernel, boundary=boundary, fill_value=fill_value,
                            nan_treatment=nan_treatment, normalize_kernel=normalize_kernel,
                            mask=mask, preserve_nan=preserve_nan,
                            normalization_zero_tol=normalization_zero_tol)
    method = _check_method(method)
    ops = _Ops(b)
    prec = _precision(precision, b.dtype_str(arr))
    storage = _STORAGE[prec]
    fill_value = float(fill_value)
    kh, kw = k.shape
    H, W = arr.shape
    if boundary is None and not (H > 2 * (kh // 2) and W > 2 * (kw // 2)):
        raise KernelSizeError("for boundary=None all kernel axes must be smaller than array's "
                              "- use boundary in ['fill', 'extend', 'wrap'] instead.")
    x, own = _prepare(b, ops, arr, mmask, mask, storage)
    initially_nan = None
    if preserve_nan or nan_treatment == "fill":
        initially_nan = ops.isnan(x)
        if nan_treatment == "fill":
            if not own:
                x, own = ops.copy(x), True
            ops.fill_where(x, initially_nan, fill_value)
    kernel_sum = float(k.sum())
    kf = np.ascontiguousarray(k[::-1, ::-1])  # astropy convolves: correlate with the flip
    pshape = (H, W) if boundary is None else (H + kh - 1, W + kw - 1)
    key = _plan_key(kf, pshape, method, prec, b, x)
    pre = None if b.on_device else _plan_cache.acquire(key)  # CPU: shared; its pad buffer
    if boundary is None:
        P = x
    else:
        P = ops.pad(x, _pads(kh, kw), _PAD[boundary], fill_value, pre)
        own = own or P is not x
    marked = None
    if nan_treatment == "interpolate":
        if not own:
            P, own = ops.copy(P), True
        marked = _mark(ops, P, False)
        if not b.on_device and marked[1].size == 0:
            # astropy interpolates only where isnan(sum) (NaN, or +inf with -inf): same result
            nan_interpolate = (boundary == "fill" and math.isnan(fill_value)) or \
                math.isnan(ops.sum64(x))
            marked = None
        elif b.on_device and not _normalizable(kernel_sum, normalization_zero_tol):
            # astropy raises only when there is NaN to interpolate: find out (one host sync)
            nan_interpolate = bool(ops.any(marked[0] != 0)) or (
                boundary == "fill" and math.isnan(fill_value))
            if not nan_interpolate:
                marked = None
        else:  # on a device: always (no host sync); without NaN the result is the same
            nan_interpolate = True
    else:
        nan_interpolate = False
    if normalize_kernel or nan_interpolate:
        _check_normalizable(kernel_sum, normalization_zero_tol, nan_interpolate)
    padded = P is not x

    def body(entry):
        top = entry.plan(P)
        nans = -1
        if marked is not None:
            res, nans = _finish_interp(ops, entry, kf, P, marked, top, 0,
                                       1.0 if normalize_kernel else kernel_sum)
        else:
            res = top
            if normalize_kernel:
                res /= kernel_sum
        if padded:
            ops.release(entry, P)
        return res, nans

    res, nans = _run_plan(key, kf, pshape, method, prec, b, body, pre)
    if boundary is None:  # astropy leaves the outputs whose window leaves the array at zero
        full = ops.zeros((H, W), storage, res)
        full[kh // 2:kh // 2 + res.shape[0], kw // 2:kw // 2 + res.shape[1]] = res
        res = full
    if nan_interpolate and not preserve_nan and _any_nan(ops, res, nans):
        warnings.warn("nan_treatment='interpolate', however, NaN values detected post "
                      "convolution. A contiguous region of NaN values, larger than the kernel "
                      "size, are present in the input array. Increase the kernel size to avoid "
                      "this.", AstropyUserWarning)
    return _finalize(ops, res, initially_nan if preserve_nan else None, arr, False, prec, unit)


def _finalize(ops, res, nan_mask, arr, fft: bool, prec: str, unit):
    """preserve_nan's NaNs back in, astropy's output dtype, the input's unit."""
    if nan_mask is not None:
        ops.fill_where(res, nan_mask, float("nan"))
    res = ops.astype(res, _out_dtype(ops, arr, fft, prec))
    return res << unit if unit is not None else res


def _any_nan(ops, res, nans) -> bool:
    """Whether the result holds NaN (astropy's warning): nan_interp's count where it ran."""
    if isinstance(nans, int):
        return nans > 0 if nans >= 0 else math.isnan(ops.sum64(res))
    return int(nans[1]) > 0  # the device count: one small read


def _normalizable(kernel_sum, tol) -> bool:
    return not (kernel_sum < 1.0 / MAX_NORMALIZATION or bool(np.isclose(kernel_sum, 0, atol=tol)))


def _check_normalizable(kernel_sum, tol, nan_interpolate):
    if not _normalizable(kernel_sum, tol):
        if nan_interpolate:
            raise ValueError("Setting nan_treatment='interpolate' requires the kernel to be "
                             "normalized, but the input kernel has a sum close to zero. For a "
                             "zero-sum kernel and data with NaNs, set nan_treatment='fill'.")
        raise ValueError("The kernel can't be normalized, because its sum is close to zero. "
                         f"The sum of the given kernel is < {1.0 / MAX_NORMALIZATION:.2f}. For "
                         "a zero-sum kernel, set normalize_kernel=False or pass a custom "
                         "normalization function to normalize_kernel.")


# ---- convolve_fft ----------------------------------------------------------------------------

def _delegate_fft(array, kernel, kw):
    return _ap_convolve_fft(array, kernel, **kw)


def convolve_fft(array, kernel, boundary="fill", fill_value=0.0, nan_treatment="interpolate",
                 normalize_kernel=True, normalization_zero_tol=1e-8, preserve_nan=False,
                 mask=None, crop=True, return_fft=False, fft_pad=None, psf_pad=None, min_wt=0.0,
                 allow_huge=False, fftn=np.fft.fftn, ifftn=np.fft.ifftn, complex_dtype=complex,
                 dealias=False, *, method="auto", precision=None):
    """``astropy.convolution.convolve_fft`` for 2-D arrays, by any correlate2d method.

    The same result as astropy's (the circular FFT convolution of the padded image is a linear
    convolution with `fill_value` outside, or a periodic one with ``boundary='wrap'``), computed
    by any correlate2d method ('auto': the FFT methods for large kernels), with `convolve`'s
    exact NaN interpolation. Even kernels are centred as astropy centres them.

    Parameters
    ----------
    array, kernel, boundary, fill_value, nan_treatment, normalize_kernel
        As astropy's (boundary: 'fill', 'wrap', or None with astropy's warning).
    normalization_zero_tol, preserve_nan, mask, min_wt, allow_huge
        As astropy's.
    crop, return_fft, fft_pad, psf_pad, fftn, ifftn, complex_dtype, dealias
        astropy's implementation options; away from their defaults (``crop=False``,
        ``return_fft=True``, padding, custom transforms, ``dealias=True``) the call goes to
        astropy itself.
    method : str, optional
        Keyword only: 'auto' or any correlate2d method of `tensorconv.methods`.
    precision : {None, 'fp64', 'fp32'}, optional
        Keyword only: default 'fp32' for float32 data, else 'fp64'.

    Returns
    -------
    array
        The convolved image; float32 for float32 data (astropy gives float64).

    Raises
    ------
    ValueError
        astropy's errors, and an unknown boundary (astropy silently wraps).
    TypeError
        Complex data.

    Examples
    --------
    >>> import numpy as np
    >>> import astropy.convolution as ac
    >>> from tensorconv.astropy import convolve_fft
    >>> img = np.random.default_rng(1).random((40, 40))
    >>> kernel = ac.Gaussian2DKernel(2.0)
    >>> out = convolve_fft(img, kernel, boundary="wrap")
    >>> np.allclose(out, ac.convolve_fft(img, kernel, boundary="wrap"))
    True
    """
    kw_all = dict(boundary=boundary, fill_value=fill_value, nan_treatment=nan_treatment,
                  normalize_kernel=normalize_kernel,
                  normalization_zero_tol=normalization_zero_tol, preserve_nan=preserve_nan,
                  mask=mask, crop=crop, return_fft=return_fft, fft_pad=fft_pad,
                  psf_pad=psf_pad, min_wt=min_wt, allow_huge=allow_huge, fftn=fftn,
                  ifftn=ifftn, complex_dtype=complex_dtype, dealias=dealias)
    if np.ma.is_masked(kernel):
        raise ValueError("The kernel is a masked array with masked values. Use "
                         "kernel.filled(fill_value) to fill masked values before passing to "
                         "convolve.")
    if isinstance(kernel, Kernel) and isinstance(array, Kernel):
        raise TypeError("Can't convolve two kernels with convolve_fft.  Use convolve instead.")
    if nan_treatment not in ("interpolate", "fill"):
        raise ValueError("nan_treatment must be one of 'interpolate','fill'")
    options = (not crop or return_fft or fft_pad is not None or psf_pad is not None or dealias
               or fftn is not np.fft.fftn or ifftn is not np.fft.ifftn
               or complex_dtype is not complex)
    b = backend_of(array) if not (_is_nddata(array) or isinstance(array, Kernel)) else None
    if b is None or options:
        if b is not None and b.on_device:
            raise ValueError("convolve_fft's implementation options (crop, return_fft, fft_pad, "
                             "psf_pad, dealias, fftn, ifftn, complex_dtype) are astropy's own; "
                             "on a CUDA device leave them at their defaults")
        return _delegate_fft(array, kernel, kw_all)
    b, arr, unit, mmask = _backend_array(array)
    if arr.ndim != 2:
        if b.on_device:
            raise ValueError(f"array must be 2-D on a CUDA device, got ndim={arr.ndim}")
        return _delegate_fft(array, kernel, kw_all)
    _check_data(b, arr)
    k = _host_kernel(kernel)
    if k.ndim != 2:
        raise ValueError("Image and kernel must have same number of dimensions")
    if boundary not in BOUNDARY_OPTIONS:
        raise ValueError(f"Invalid boundary option: must be one of {list(BOUNDARY_OPTIONS)} "
                         "(astropy's convolve_fft would wrap)")
    H, W = arr.shape
    kh, kw = k.shape
    if H == 0 or W == 0:
        raise ValueError("cannot convolve empty array")
    if boundary == "wrap" and (kh > H or kw > W):
        if b.on_device:
            raise ValueError("boundary='wrap' with a kernel larger than the array is astropy's "
                             "own case; not supported on the device")
        return _delegate_fft(array, kernel, kw_all)
    method = _check_method(method)
    _check_huge(arr.shape, k.shape, boundary, allow_huge)
    ops = _Ops(b)
    prec = _precision(precision, b.dtype_str(arr))
    storage = _STORAGE[prec]
    fill_value = float(fill_value)
    k[~np.isfinite(k)] = 0.0
    ksum = float(k.sum())
    interpolate = nan_treatment == "interpolate"
    nan_fill = fill_value  # invalid pixels take the caller's value even with 'wrap'
    if normalize_kernel is True:
        if ksum < 1.0 / MAX_NORMALIZATION:
            raise ValueError("The kernel can't be normalized, because its sum is close to zero. "
                             f"The sum of the given kernel is < {1.0 / MAX_NORMALIZATION:.2f}. "
                             "For a zero-sum kernel, set normalize_kernel=False or pass a "
                             "custom normalization function to normalize_kernel.")
        wnorm, kernel_scale = ksum, 1.0
    elif normalize_kernel:
        ks = complex(normalize_kernel(k.astype(complex)))
        if ks.imag != 0:
            if b.on_device:
                raise ValueError("normalize_kernel returned a complex scale")
            return _delegate_fft(array, kernel, kw_all)
        wnorm = kernel_scale = ks.real
    else:
        if abs(ksum) < normalization_zero_tol:
            if interpolate:
                raise ValueError("Cannot interpolate NaNs with an unnormalizable kernel")
            wnorm = kernel_scale = 1.0
        else:
            wnorm = kernel_scale = ksum
    if boundary is None:
        warnings.warn("The convolve_fft version of boundary=None is equivalent to the convolve "
                      "boundary='fill'.  There is no FFT equivalent to convolve's "
                      "zero-if-kernel-leaves-boundary", AstropyUserWarning)
        boundary = "fill"
    elif boundary == "extend":
        raise NotImplementedError("The 'extend' option is not implemented for fft-based "
                                  "convolution")
    elif boundary == "wrap":
        fill_value = 0.0
    x, own = _prepare(b, ops, arr, mmask, mask, storage)
    invalid = ops.invalid_fft(x) if (preserve_nan or not interpolate) else None
    if not interpolate and invalid is not None:
        if not math.isfinite(nan_fill) and ops.any(invalid):
            raise ValueError("Encountered NaNs in convolve.  This is disallowed.")
        if not own:
            x, own = ops.copy(x), True
        ops.fill_where(x, invalid, nan_fill)
    finite_fill = math.isfinite(fill_value)
    # outside the image: fill_value, or invalid (NaN) where it is not finite (interpolate) /
    # zero (fill treatment), as astropy's padded arrays hold it
    pad_value = fill_value if finite_fill else (float("nan") if interpolate else 0.0)
    kf = np.ascontiguousarray(k[::-1, ::-1])
    pshape = (H + kh - 1, W + kw - 1)
    key = _plan_key(kf, pshape, method, prec, b, x)
    pre = None if b.on_device else _plan_cache.acquire(key)  # CPU: shared; its pad buffer
    P = ops.pad(x, _pads(kh, kw), _PAD[boundary], pad_value, pre)
    if P is x and not own:
        P = ops.copy(P)
    marked = _mark(ops, P, True) if interpolate else None

    def body(entry):
        if interpolate:
            top = entry.plan(P)
            floor, floor_value = ((float(min_wt), float("nan")) if min_wt > 0.0
                                  else (_FFT_ZERO_WT, 0.0))
            res = _finish_interp(ops, entry, kf, P, marked, top, 1, kernel_scale, wnorm, floor,
                                 floor_value)[0]
        else:
            res = entry.plan(P)
            factor = kernel_scale / wnorm
            if factor != 1.0:
                res *= factor
        if P is not x:
            ops.release(entry, P)
        return res

    res = _run_plan(key, kf, pshape, method, prec, b, body, pre)
    return _finalize(ops, res, invalid if preserve_nan else None, arr, True, prec, unit)


def _check_huge(shape, kshape, boundary, allow_huge):
    """astropy's 1 GB guard on the complex arrays it would allocate (same message)."""
    if allow_huge:
        return
    from astropy.utils.console import human_file_size

    item = np.dtype(complex).itemsize
    size = int(np.prod(shape, dtype=np.int64)) * item
    if size > 1e9:
        raise ValueError(f"Size Error: Arrays will be {human_file_size(size)}.  Use "
                         "allow_huge=True to override this exception.")
    if boundary in (None, "fill"):
        import scipy.fft

        new = [scipy.fft.next_fast_len(int(a + b)) for a, b in zip(shape, kshape)]
    else:
        new = [max(a, b) for a, b in zip(shape, kshape)]
    size = int(np.prod(new, dtype=np.int64)) * item
    if size > 1e9:
        raise ValueError(f"Size Error: Arrays will be {human_file_size(size)}.  Use "
                         "allow_huge=True to override this exception.")
