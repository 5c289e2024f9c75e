"""correlate2d / convolve2d / plan: validation, scipy's mode and boundary rules, precision
resolution and dispatch. Every method computes only the *valid* correlation; 'same' and 'full'
and the three boundaries are padding plus one valid call (im2tensor paper, section 2.1.1)."""

from __future__ import annotations

import functools
import math
import operator
import os
from typing import NamedTuple

import numpy as np

from . import _autotune, _bounds, _core, _cpu_cost, _fft_guard, _plan_cache
from ._arrays import _NP_DTYPES, NumpyBackend, backend_of, pad_sources
from ._factors import rank_factors
from .methods import PRECISIONS
from .methods import _rows as _methods
from .methods import takes_complex

# The dtypes the core's precisions' data crosses in (csrc/core/types.cpp).
_STORAGE = {p.name: p.storage for p in _core.precisions()}
_COMPLEX_STORAGE = {p.name: p.complex_storage for p in _core.precisions() if p.complex_storage}
_MODES = ("full", "valid", "same")
_BOUNDARIES = {"fill": "fill", "pad": "fill", "wrap": "wrap", "circular": "wrap",
               "symm": "symm", "symmetric": "symm"}
# 'auto' sends host arrays to the GPU only above this many multiply-adds (staging costs ~ms).
_AUTO_GPU_MIN_MACS = 5e7


@functools.lru_cache(maxsize=1)
def _factor_methods() -> frozenset:
    return frozenset(m.name for m in _methods() if m.takes_factors)


def check_options(options) -> dict:
    """Plan options as a plain dict {name: None | bool | int | str}: NumPy scalars become Python
    ones; names, methods and values are checked by the core (tensorconv.plan_options())."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict of plan options, got {type(options).__name__}; "
                        "see tensorconv.plan_options()")
    out = {}
    for name, v in options.items():
        if not isinstance(name, str):
            raise TypeError(f"plan option names are strings, got {name!r}")
        if isinstance(v, np.bool_):
            v = bool(v)
        elif isinstance(v, np.integer):
            v = int(v)
        elif isinstance(v, np.str_):
            v = str(v)
        if v is not None and not isinstance(v, (bool, int, str)):
            raise TypeError(f"plan option {name!r} must be None, a bool, an int or a str, got "
                            f"{type(v).__name__}")
        out[name] = v
    return out


def make_core_plan(method: str, kernel: np.ndarray, ih: int, iw: int, precision: str, *,
                   options: dict | None = None, **kw):
    """_core.make_plan with what the method's row asks for: the kernel's rank factors (LAPACK's
    SVD, _factors.py) for rows with takes_factors, and the plan options."""
    factors = (rank_factors(kernel, precision) if method in _factor_methods() else None)
    return _core.make_plan(method, kernel, ih, iw, precision, options=options or None,
                           factors=factors, **kw)


@functools.lru_cache(maxsize=256)
def default_precision(*dtype_strs: str) -> str:
    """The precision tensorconv computes in, by default, for inputs of these dtypes.

    NumPy's promotion of the input dtypes decides: float64 -> 'fp64', float32 -> 'fp32',
    float16 -> 'fp16fp32', complex64 -> 'fp32' (complex arithmetic on float32 parts),
    complex128 -> 'fp64'; integers, bool and anything wider than float64 -> 'fp64'.

    Parameters
    ----------
    *dtype_strs : str
        The dtype names of the inputs, e.g. ``"float32"``, ``"int16"``.

    Returns
    -------
    str
        One of `PRECISIONS`.

    Raises
    ------
    TypeError
        A string that is not a NumPy dtype name.

    Examples
    --------
    >>> import tensorconv as tc
    >>> tc.default_precision("float32", "float32")
    'fp32'
    >>> tc.default_precision("float16", "float32")
    'fp32'
    >>> tc.default_precision("uint8", "int8")
    'fp64'
    """
    dt = np.result_type(*[np.dtype(d) if d != "bfloat16" else np.float32 for d in dtype_strs])
    if dt == np.float16:
        return "fp16fp32"
    if dt in (np.float32, np.complex64):
        return "fp32"
    return "fp64"


# Precisions that take complex data: complex inputs are decomposed into real correlations of
# the parts in the same precision (see Plan), so only precisions whose real arithmetic keeps a
# complex result meaningful to its dtype (complex64 / complex128) qualify.
COMPLEX_PRECISIONS = tuple(_COMPLEX_STORAGE)


@functools.lru_cache(maxsize=256)
def result_dtype(*dtype_strs: str) -> np.dtype:
    """The dtype scipy.signal.correlate2d/convolve2d return for inputs of these dtypes: NumPy's
    promotion of the two (int8 with uint8 -> int16, anything with complex64 -> complex...)."""
    return np.result_type(*[np.dtype(d) if d != "bfloat16" else np.float32 for d in dtype_strs])


def _check_array(x, backend, name: str, ndims=(2,), allow_empty=False):
    kind = backend.dtype_kind(x)
    if kind not in "biufc":
        raise TypeError(f"{name} has dtype {backend.dtype_str(x)}; expected a numeric array "
                        "(bool, integer, floating or complex)")
    if x.ndim not in ndims:
        want = {(2,): "a 2-D array", (3,): "a 3-D array (a (B, H, W) stack)",
                (2, 3): "a 2-D array (one image) or a 3-D array (a (B, H, W) stack)"}[ndims]
        hint = (" (pass batch=True for a (B, H, W) stack of images)"
                if x.ndim == 3 and 3 not in ndims and name == "in1" else "")
        raise ValueError(f"{name} must be {want}, got ndim={x.ndim}{hint}")
    if 0 in tuple(x.shape) and not allow_empty:
        what = " (a stack of no images)" if x.ndim == 3 and x.shape[0] == 0 else ""
        raise ValueError(f"{name} is empty{what} (shape {tuple(x.shape)})")


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


def _check_fillvalue(fillvalue) -> complex | float:
    """scipy's rules: a scalar or a one-element array (any shape); empty or multi-element
    arrays and values that cannot become a number raise ValueError with scipy's messages.
    Returns a float, or a complex when the imaginary part is non-zero (valid only with complex
    data: checked where the data's type is known)."""
    if isinstance(fillvalue, (str, bytes)):
        raise ValueError(f"fillvalue must be a number, got the string {fillvalue!r}")
    try:
        arr = np.asarray(fillvalue)
    except (TypeError, ValueError) as e:
        raise ValueError(f"fillvalue must be a number: {e}") from None
    if arr.size == 0:
        raise ValueError("`fillvalue` cannot be an empty array.")
    if arr.size != 1:
        raise ValueError("`fillvalue` must be scalar or an array with one element.")
    if arr.dtype.kind not in "biufcO":
        raise ValueError(f"fillvalue must be a number, got dtype {arr.dtype}")
    v = arr.reshape(()).item()
    try:
        c = complex(v)
    except OverflowError:
        raise ValueError(f"fillvalue {v!r} is too large to convert to a floating-point "
                         "number") from None
    except (TypeError, ValueError):
        raise ValueError(f"fillvalue must be a number, got {type(v).__name__}") from None
    return c if c.imag != 0 else c.real


def _fill_needs_scipys_check(rt: np.dtype, fillvalue) -> bool:
    """Whether scipy might refuse this fill value for output type `rt`: integer outputs (a
    value out of the type's range, a complex or float32-array fill), real outputs with a
    complex-typed fill. bool and float16 are tensorconv's own (scipy takes neither)."""
    if rt.kind == "b" or rt == np.float16:
        return False
    if isinstance(fillvalue, np.ndarray):  # scipy casts arrays safely only
        return True
    if rt.kind in "iu":
        return not (type(fillvalue) is int and fillvalue == 0)
    if rt.kind == "f":
        return isinstance(fillvalue, complex) or np.asarray(fillvalue).dtype.kind == "c"
    return False


def _scipys_fill_check(rt: np.dtype, boundary, fillvalue) -> None:
    """scipy converts the fill value to the output type directly and raises ValueError where
    that conversion fails (NumPy's rules: a Python int out of range, a Python float too large
    for an integer type, a complex fill with real data, an array needing an unsafe cast), even
    where it then would not use it. The same call on one zero pixel gives scipy's verdict."""
    try:  # scipy's own function, even where scipy.signal's names point elsewhere (tests)
        from scipy.signal import _signaltools as ss
    except ImportError:  # pragma: no cover - a scipy without that module
        import scipy.signal as ss

    z = np.zeros((1, 1), rt)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ss.correlate2d(z, z, "full", boundary, fillvalue)
        except ValueError as e:
            raise ValueError(f"{e} (scipy.signal refuses fillvalue {fillvalue!r} for "
                             f"{rt} data)") from None


def _fill_for(fillvalue, complex_data: bool):
    if isinstance(fillvalue, complex) and not complex_data:
        raise ValueError("could not cast `fillvalue` directly to the output type (it was first "
                         f"converted to complex): fillvalue {fillvalue!r} needs complex data")
    return fillvalue


def _gpu_preference(precision: str, kernel: np.ndarray | None, image_shape=None,
                    features=None) -> list:
    """GPU methods by the measured cost model (_autotune: tuned on this device, else the shipped
    H100 defaults), fastest first; deterministic ones within the precision's accuracy bound."""
    return _gpu_ranking(precision, kernel, image_shape, features=features)[0]


def _kernel_features(kernel: np.ndarray, precision: str) -> tuple:
    """What the GPU ranking reads of a kernel's values (besides its shape): rank 1, finite."""
    return (kernel.size > 1 and _autotune.is_rank1(kernel, precision),
            bool(np.isfinite(kernel).all()))


def _gpu_ranking(precision: str, kernel: np.ndarray | None, image_shape, candidates=None,
                 features=None):
    if kernel is None:
        return [], {}, {}, "no kernel given"
    if candidates is None:
        candidates = [m.name for m in _methods() if m.device == "cuda" and m.available
                      and precision in m.precisions and m.entry == "correlate2d"]
    if image_shape is None:
        image_shape = (4096 + kernel.shape[0] - 1, 4096 + kernel.shape[1] - 1)
    rank1, finite = features if features is not None else _kernel_features(kernel, precision)
    return _autotune.rank(precision, kernel.shape, image_shape, candidates, rank1=rank1,
                          finite_kernel=finite)


# The CPU methods 'auto' chooses between by predicted time (_cpu_cost: calibrated per machine).
# Spectral methods spread NaN/inf over their whole transform, so 'auto' picks one (fft_cpu on
# the CPU, cuFFT's fft on the GPU) only for finite kernels, and a plan that picked one checks
# each padded image once and runs the method named here, which keeps NaN/inf local as scipy
# does, on an image that holds them (Plan._real). cuFFT's fft keeps them local itself on real
# data (its staging zeroes them and a device pass recomputes their windows: csrc/cuda/methods/fft/fft.cu,
# no host test, no sync); only its complex (C2C) plan still needs the fallback.
_FINITE_FALLBACK = {"fft_cpu": "direct", "fft": "naive_shmem"}
_REAL_LOCAL = frozenset({"fft"})  # spectral methods whose real plans keep NaN/inf local


def _cpu_preference(precision: str, kernel: np.ndarray | None, image_shape) -> list:
    if kernel is None or image_shape is None:
        return []
    if not np.isfinite(kernel).all():
        return ["direct"]
    t = _cpu_costs(precision, image_shape, kernel)
    return sorted(t, key=t.get)


def _cpu_costs(precision: str, image_shape, kernel: np.ndarray) -> dict:
    """Predicted seconds of each CPU method as 'auto' compares them: fft_cpu's with its accuracy
    check and the margin it must win by (_fft_guard.predicted_cost)."""
    t = _cpu_cost.predict(precision, image_shape, kernel.shape)
    t["fft_cpu"] = _fft_guard.predicted_cost(t["fft_cpu"], kernel)
    return t


def choose_method(precision: str, on_device: bool, macs: float = 0.0,
                  kernel: np.ndarray | None = None, image_shape=None, features=None) -> str:
    """The 'auto' rule. Device arrays stay on their device; host arrays go to the GPU when the
    work (`macs` multiply-adds) pays for the copies. On the GPU the measured cost model decides
    (_autotune), given the host float64 `kernel` (`features`: its _kernel_features, where the
    caller has them) and the (padded) `image_shape`; on the CPU the cost model of this machine;
    otherwise registry order."""
    rows = [m for m in _methods() if m.available and precision in m.precisions
            and m.entry == "correlate2d"]
    gpu = [m.name for m in rows if m.device == "cuda"]
    cpu = [m.name for m in rows if m.device == "cpu"]
    if gpu:  # the ranking needs an SVD of the kernel: skip it where no GPU method can run
        ranked = _gpu_preference(precision, kernel, image_shape, features)
        gpu = ranked + [n for n in gpu if n not in ranked and n not in _bounds.NONDETERMINISTIC
                        and _bounds.mape_bound(n, precision) <= _bounds.MAPE_PCT[precision]]
        gpu = gpu or [m.name for m in rows if m.device == "cuda"]
    if cpu and not on_device:
        cpu = [n for n in _cpu_preference(precision, kernel, image_shape) if n in cpu] + cpu
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


_PINNED_CAP_SET = False


def _set_pinned_cap_once() -> None:
    """TENSORCONV_PINNED_MB (read at the first host call on a CUDA plan): the most pinned memory,
    in MB, the core's pool holds with results (default 2048; 0: results are never pinned)."""
    global _PINNED_CAP_SET
    _PINNED_CAP_SET = True
    v = os.environ.get("TENSORCONV_PINNED_MB", "").strip()
    if not v:
        return
    try:
        mb = int(v)
    except ValueError:
        raise ValueError(f"TENSORCONV_PINNED_MB must be a whole number of MB, got {v!r}") from None
    _core.set_pinned_cap(max(mb, 0) << 20)


def _host_result(shape, storage: str) -> np.ndarray:
    """The NumPy result of a host call on a CUDA plan: pinned memory from the core's pool when
    it has some (the card copies into it directly; the memory goes back to the pool, not the
    system, when the array goes), else np.empty (unpacked from pinned staging)."""
    if not _PINNED_CAP_SET:
        _set_pinned_cap_once()
    dt = np.dtype(_NP_DTYPES[storage])
    n = math.prod(shape) * dt.itemsize
    buf = _core.host_result(n)
    if buf is None:
        return np.empty(shape, dt)
    return buf[:n].view(dt).reshape(shape)


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


_DEVICES = (None, *_core.DEVICES)


def _image_shape(image_shape) -> tuple:
    try:
        dims = tuple(image_shape)
    except TypeError:
        raise TypeError(f"image_shape must be a pair of integers, got {image_shape!r}") from None
    if len(dims) != 2:
        raise ValueError(f"image_shape must be a pair of integers, got {image_shape!r}")
    try:
        ih, iw = (operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"image_shape must be a pair of integers, got {image_shape!r} "
                        "(a float is not truncated)") from None
    if ih < 1 or iw < 1:
        raise ValueError(f"image_shape must be positive, got {(ih, iw)}")
    return ih, iw


class Plan:
    """A reusable correlation (or convolution) of images of one shape with one kernel.

    Made by `plan` (the same arguments); holds the method's prepared kernel state (transposed or
    padded kernel, spectrum, rank factors, tile configuration) and its workspace. Call it with
    an (H, W) image or a (B, H, W) stack.

    Parameters
    ----------
    kernel : array_like
        The 2-D kernel (NumPy, CuPy or PyTorch CUDA).
    image_shape : tuple of int
        (H, W) of the images the plan will take.
    mode, boundary, fillvalue, method, precision, convolve, device, options
        As for `plan`.

    Attributes
    ----------
    method : str
        The registry method that runs (``'auto'`` resolved).
    precision : str
        The precision it computes in.
    image_shape, kernel_shape, out_shape : tuple of int
        The image, kernel and output shapes of one image.
    mode, boundary, fillvalue, convolve, options
        The arguments the plan was made with (boundary in its canonical name).
    storage : str
        The dtype data are stored in for the method (e.g. ``'float32'``).

    See Also
    --------
    plan : make one.

    Notes
    -----
    Complex data (fp32 or fp64) are decomposed into real correlations of the parts by the same
    method: with the effective kernel E = conj(K) (correlation) or flip(K) (convolution) and
    image a + ib, out = (a*Er - b*Ei) + i(a*Ei + b*Er): four real products (two for a real
    kernel or image), never Gauss's three-product form, whose (a+b)*(Er+Ei) term cancels and
    loses accuracy. Methods whose registry row says ``complex_native`` (``fft``, ``fft_cpu``)
    take the interleaved complex image themselves, in one plan made at the first complex call.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> p = tc.plan(np.ones((3, 3)), (6, 6), mode="same", method="direct")
    >>> p
    tensorconv.Plan(method='direct', precision='fp64', kernel=(3, 3), image=(6, 6), mode='same', boundary='fill')
    >>> p.out_shape
    (6, 6)
    """

    def __init__(self, kernel, image_shape, *, mode="full", boundary="fill", fillvalue=0,
                 method="auto", precision=None, convolve=False, device=None, options=None):
        self.options = check_options(options)
        if self.options and method == "auto":
            raise ValueError("plan options choose code paths inside one method; name the method "
                             "(options " + ", ".join(self.options) + " were given with "
                             "method='auto')")
        kb = backend_of(kernel)
        kernel = kb.asarray(kernel)
        _check_array(kernel, kb, "kernel")
        self.mode = _check_mode(mode)
        self.boundary = _check_boundary(boundary)
        self.fillvalue = _check_fillvalue(fillvalue)
        self.convolve = bool(convolve)
        if device not in _DEVICES:
            raise ValueError(f"unknown device {device!r}; valid devices: None (where the data "
                             "is), 'cpu', 'cuda'")
        self.image_shape = _image_shape(image_shape)
        ih, iw = self.image_shape
        kh, kw = int(kernel.shape[0]), int(kernel.shape[1])
        if self.mode == "valid" and (kh > ih or kw > iw):
            raise ValueError(f"for 'valid' mode the image {self.image_shape} must be at least as "
                             f"large as the kernel {(kh, kw)} in every dimension")
        self.precision = _check_precision(
            precision if precision is not None else default_precision(kb.dtype_str(kernel)))
        self.complex_kernel = kb.dtype_kind(kernel) == "c"
        if self.complex_kernel:
            _check_complex_method(method)  # a named method first: the error names those that can
            self._check_complex_precision("kernel")
        self.storage = _STORAGE[self.precision]
        self.pads = _pads(self.mode, kh, kw, self.convolve)
        ph = ih + self.pads[0][0] + self.pads[0][1]
        pw = iw + self.pads[1][0] + self.pads[1][1]
        if not isinstance(method, str):
            raise TypeError(f"method must be a string, got {type(method).__name__}")
        if self.complex_kernel:
            kc = kb.to_host_complex128(kernel)
            kc = kc[::-1, ::-1] if self.convolve else np.conj(kc)
            k64, ki64 = np.ascontiguousarray(kc.real), np.ascontiguousarray(kc.imag)
        else:
            k64 = kb.to_host_float64(kernel)
            k64, ki64 = (np.ascontiguousarray(k64[::-1, ::-1]) if self.convolve else k64), None
        auto = method == "auto"
        self._choice = None  # 'auto': what choose_method took besides the kernel's values
        if auto:
            on_device = kb.on_device if device is None else device == "cuda"
            # the ranking reads the kernel's values (rank, finiteness): a complex kernel's
            # imaginary part must not hide NaN/inf from it
            kdec = k64 if ki64 is None else np.where(np.isfinite(ki64), k64, np.nan)
            # on a device the choice reads the kernel only through _kernel_features
            self._choice = (on_device, float(ph - kh + 1) * (pw - kw + 1) * kh * kw, (ph, pw),
                            _kernel_features(kdec, self.precision) if on_device else None)
            method = choose_method(self.precision, self._choice[0], self._choice[1], kdec,
                                   self._choice[2], self._choice[3])
        self.method = method
        info = {m.name: m for m in _methods()}.get(method)
        self._device = info.device if info else None
        self._native = bool(info and info.complex_native)
        opts = self.options
        self._plan = make_core_plan(method, k64, ph, pw, self.precision, options=opts)
        # 'auto' chose a spectral method: images with NaN/inf run one that keeps them local
        # (complex data on fft: made at the first such call, _fallback_real)
        self._fallback_ok = auto and method in _FINITE_FALLBACK
        self._finite_fallback = (
            make_core_plan(_FINITE_FALLBACK[method], k64, ph, pw, self.precision)
            if self._fallback_ok and method not in _REAL_LOCAL else None)
        # 'auto' chose fft_cpu: the accuracy rule's per-call part (_fft_guard)
        self._guard = (_fft_guard.FftGuard(k64, ki64, ph, pw, self.precision)
                       if auto and method == "fft_cpu" else None)
        self._k64, self._ki64, self._padded = k64, ki64, (ph, pw)
        self._plan_c = None  # the method's own complex plan, made at the first complex call
        self._sources = None  # host padding as source indices (CUDA plans, made at first use)
        self._plan_fi = None  # the finite fallback's plan of the kernel's imaginary part
        self._plan_fr = None  # fft's fallback for complex data with NaN/inf (_fallback_real)
        # the imaginary part's plan (for methods without a complex plan); none where it is zero
        self._plan_i = (make_core_plan(method, ki64, ph, pw, self.precision, options=opts)
                        if ki64 is not None and ki64.any() and not self._native else None)
        self.kernel_shape = (kh, kw)
        self.out_shape = tuple(self._plan.out_shape)

    def _rekernel(self, kernel) -> bool:
        """Re-prepares this plan for another real kernel of its shape (the plan cache's miss on
        a seen shape): the method remakes its kernel state on the device at the next call, with
        nothing allocated. False, the plan unchanged, where the plan holds more than its one
        core plan, the method cannot, or (method 'auto') the new kernel would choose another
        method."""
        if self._device != "cuda" or self.complex_kernel or any(
                p is not None for p in (self._plan_i, self._plan_c, self._finite_fallback,
                                        self._plan_fi, self._plan_fr, self._guard)):
            return False
        kb = backend_of(kernel)
        kernel = kb.asarray(kernel)
        if tuple(kernel.shape) != self.kernel_shape or kb.dtype_kind(kernel) == "c":
            return False
        k64 = kb.to_host_float64(kernel)
        k64 = np.ascontiguousarray(k64[::-1, ::-1]) if self.convolve else k64
        if self._choice is not None:
            on_device, work, shape, features = self._choice
            if features is not None:  # the same features: the same choice, without ranking
                if _kernel_features(k64, self.precision) != features:
                    return False
            elif choose_method(self.precision, on_device, work, k64, shape) != self.method:
                return False
        if not self._plan.replace_kernel(k64):
            return False
        self._k64 = k64
        return True

    def _check_complex_precision(self, what: str):
        if self.precision not in COMPLEX_PRECISIONS:
            raise ValueError(f"complex {what} needs precision fp32 or fp64 (complex64 / "
                             f"complex128 arithmetic); {self.precision!r} is unsupported with "
                             "complex data")

    @property
    def workspace_bytes(self) -> int:
        """Extra memory the method holds or needs beyond input and output, in bytes.

        Returns
        -------
        int
            Bytes (device memory for CUDA methods, host memory for CPU methods).

        Examples
        --------
        >>> import numpy as np
        >>> import tensorconv as tc
        >>> p = tc.plan(np.ones((3, 3)), (64, 64), mode="valid", method="direct")
        >>> isinstance(p.workspace_bytes, int)
        True
        """
        extra = sum(p.workspace_bytes for p in (self._plan_i, self._plan_c) if p is not None)
        return int(self._plan.workspace_bytes) + int(extra)

    def __repr__(self):
        opts = f", options={self.options!r}" if self.options else ""
        return (f"tensorconv.Plan(method={self.method!r}, precision={self.precision!r}, "
                f"kernel={self.kernel_shape}, image={self.image_shape}, mode={self.mode!r}, "
                f"boundary={self.boundary!r}{opts})")

    def _real(self, b, plan, image, fill, storage=None):
        """One valid correlation of an image, or of every image of a (B, H, W) stack (any dtype;
        complex with `storage` complex) with one core plan."""
        storage = storage or self.storage
        if self._device == "cuda" and storage in ("float16", "float32", "float64"):
            if not b.on_device:
                return self._host_staged(b, plan, b.to_storage(image, storage), fill, storage)
            if any(self.pads[0] + self.pads[1]):
                return self._device_gathered(b, plan, b.to_storage(image, storage), fill,
                                             storage)
        x = b.pad(b.to_storage(image, storage), self.pads, self.boundary, fill)
        if b.row_stride(x) != x.shape[-1]:
            x = b.to_storage(x, storage)
        out = b.empty(tuple(x.shape[:-2]) + self.out_shape, storage, like=x)
        if plan is self._plan and self._guard is not None:
            return self._guarded(b, x, out, storage)
        getattr(plan, "run_batch" if x.ndim == 3 else "run")(*self._run_args(b, x, out, storage))
        return out

    @staticmethod
    def _run_args(b, x, out, storage):
        if x.ndim == 3:  # one C++ call: the kernel state is shared, the method batches
            return (b.pointer(x), x.shape[0], b.batch_stride(x), x.shape[1], x.shape[2],
                    b.row_stride(x), b.pointer(out), b.batch_stride(out), out.shape[1],
                    out.shape[2], b.row_stride(out), storage, b.on_device, b.stream(x))
        return (b.pointer(x), x.shape[0], x.shape[1], b.row_stride(x), b.pointer(out),
                out.shape[0], out.shape[1], b.row_stride(out), storage, b.on_device,
                b.stream(x))

    def _guarded(self, b, x, out, storage):
        """'auto' chose fft_cpu (host arrays): an image holding NaN/inf (a transform spreads
        them), or integers only with an integer kernel (the direct sum is exact), runs direct;
        otherwise the transform, and direct again for each image whose outputs the transform
        may round beyond the accuracy rule's bound (_fft_guard)."""
        direct = self._finite_fallback
        run = "run_batch" if x.ndim == 3 else "run"
        if not b.all_finite(x) or self._guard.runs_direct_first((x,)):
            getattr(direct, run)(*self._run_args(b, x, out, storage))
            return out
        getattr(self._plan, run)(*self._run_args(b, x, out, storage))
        for i in self._guard.unsafe(x, out):
            xi, oi = (x[i], out[i]) if x.ndim == 3 else (x, out)
            direct.run(*self._run_args(b, xi, oi, storage))
        return out

    def _host_staged(self, b, plan, x, fill, storage):
        """A host image or stack on a CUDA plan: padded as C++ stages it to the device through
        pinned buffers, chunks overlapped with compute (no padded copy on the host)."""
        if plan is self._plan and self._finite_fallback is not None and not (
                b.all_finite(x) and np.isfinite(fill)):
            plan = self._finite_fallback
        out = _host_result(tuple(x.shape[:-2]) + self.out_shape, storage)
        self._gather(b, plan, x, out, fill, storage)
        return out

    def _device_gathered(self, b, plan, x, fill, storage):
        """A device image or stack padded by one gather kernel into groups of padded images
        (<= 16 MB, or one image), each run as a stack: no padded copy of the whole stack."""
        out = b.empty(tuple(x.shape[:-2]) + self.out_shape, storage, like=x)
        self._gather(b, plan, x, out, fill, storage)
        # 'auto' chose a spectral method: an image holding NaN/inf runs again on a method that
        # keeps them local (the test follows the launch: the device's work is queued first)
        if plan is self._plan and self._finite_fallback is not None and not (
                np.isfinite(fill) and b.all_finite(x)):
            self._gather(b, self._finite_fallback, x, out, fill, storage)
        return out

    def _gather(self, b, plan, x, out, fill, storage):
        if self._sources is None:
            (t, bo), (l, r) = self.pads
            self._sources = (pad_sources(self.image_shape[0], t, bo, self.boundary),
                             pad_sources(self.image_shape[1], l, r, self.boundary))
        batch = x.shape[0] if x.ndim == 3 else 1
        plan.run_gather(b.pointer(x), batch, b.batch_stride(x) if x.ndim == 3 else 0,
                        x.shape[-2], x.shape[-1], b.row_stride(x), *self._sources,
                        self.pads[0][0], self.pads[1][0], float(fill), b.pointer(out),
                        b.batch_stride(out) if out.ndim == 3 else 0, self.out_shape[0],
                        self.out_shape[1], b.row_stride(out), storage, b.stream(x),
                        b.on_device)

    def _fallback_real(self):
        if self._finite_fallback is not None:
            return self._finite_fallback
        if self._plan_fr is None:  # fft: its real plans need none (kept apart from _real's test)
            self._plan_fr = make_core_plan(_FINITE_FALLBACK[self.method], self._k64,
                                           *self._padded, self.precision)
        return self._plan_fr

    def _fallback_imag(self):
        if self._plan_fi is None and self._ki64 is not None and self._ki64.any():
            self._plan_fi = make_core_plan(_FINITE_FALLBACK[self.method], self._ki64,
                                            *self._padded, self.precision)
        return self._plan_fi

    def _complex_native(self, b, image, fill):
        if self._plan_c is None:
            self._plan_c = make_core_plan(self.method, self._k64, *self._padded, self.precision,
                                          kernel_imag=self._ki64, complex_data=True,
                                          options=self.options)
        return self._real(b, self._plan_c, image, complex(fill),
                          _COMPLEX_STORAGE[self.precision])

    def _complex_native_guarded(self, b, image, fill):
        """fft_cpu's complex transforms under the accuracy rule (_fft_guard): the result, or
        None where the parts must run direct instead (integers only with an integer kernel, or
        outputs the transform may round beyond the bound)."""
        storage = _COMPLEX_STORAGE[self.precision]
        x = b.pad(b.to_storage(image, storage), self.pads, self.boundary, complex(fill))
        if self._guard.runs_direct_first((x.real, x.imag)):
            return None
        out = self._complex_native(b, image, fill)
        return None if self._guard.unsafe(x, out, magnitude=np.abs(x)) else out

    def __call__(self, image):
        """Correlate (or convolve) one image, or every image of a stack, with the plan's kernel.

        Parameters
        ----------
        image : array_like
            An (H, W) image or a (B, H, W) stack (B >= 1) of the plan's image shape: NumPy, CuPy or
            PyTorch (CUDA). Its dtype is cast to the precision's storage.

        Returns
        -------
        array
            The same array type on the same device: shape `out_shape`, or ``(B, *out_shape)`` for a
            stack; dtype the precision's storage (complex for complex data).

        Raises
        ------
        ValueError
            An image of another shape, or complex data with a precision that refuses them.
        TypeError
            A non-numeric image.

        Examples
        --------
        >>> import numpy as np
        >>> import tensorconv as tc
        >>> p = tc.plan(np.ones((2, 2)), (3, 3), mode="valid", method="direct")
        >>> p(np.arange(9.0).reshape(3, 3))
        array([[ 8., 12.],
               [20., 24.]])
        >>> p(np.ones((4, 3, 3))).shape          # a stack of four images
        (4, 2, 2)
        """
        b = backend_of(image)
        image = b.asarray(image)
        _check_array(image, b, "image", (2, 3))
        if tuple(image.shape[-2:]) != self.image_shape:
            what = "image" if image.ndim == 2 else "stack's images"
            raise ValueError(f"plan was made for images of shape {self.image_shape}, the "
                             f"{what} have shape {tuple(image.shape[-2:])}")
        if b.on_device and self._device == "cpu":
            raise ValueError(f"method {self.method!r} runs on the CPU and this image is on a CUDA "
                             "device; pass a NumPy array or choose a CUDA method")
        complex_image = b.dtype_kind(image) == "c"
        fill = _fill_for(self.fillvalue, complex_image or self.complex_kernel)
        if not (complex_image or self.complex_kernel):
            return self._real(b, self._plan, image, fill)
        self._check_complex_precision("image" if complex_image else "kernel")
        _check_complex_method(self.method)
        pr, pi = self._plan, self._plan_i
        if self._native:
            if not self._fallback_ok:
                return self._complex_native(b, image, fill)
            if _finite_data(b, image, complex_image, fill):
                out = (self._complex_native(b, image, fill) if self._guard is None
                       else self._complex_native_guarded(b, image, fill))
                if out is not None:
                    return out
            # 'auto' picked a spectral method and the complex data holds NaN/inf: the parts run
            # on the fallback method's plans, which keep them local
            pr, pi = self._fallback_real(), self._fallback_imag()
        fr, fi = complex(fill).real, complex(fill).imag
        if complex_image:
            a, bi = b.parts(image)
        elif fi:  # a real image padded with a complex fill: its imaginary part is the padding
            a, bi = image, b.zeros_like(image)
        else:
            a, bi = image, None
        # each part in storage once (a strided view of the complex array is copied here, not
        # once per real correlation it enters)
        a = b.to_storage(a, self.storage)
        bi = b.to_storage(bi, self.storage) if bi is not None else None
        re = self._real(b, pr, a, fr)
        im = self._real(b, pr, bi, fi) if bi is not None else None
        if pi is not None:  # (a + ib)(Er + iEi) = (a Er - b Ei) + i(a Ei + b Er)
            ai = self._real(b, pi, a, fr)
            if im is None:
                im = ai
            else:
                im += ai  # in place: the results are this call's own arrays
            if bi is not None:
                re -= self._real(b, pi, bi, fi)
        if im is None:
            im = b.zeros_like(re)
        return b.make_complex(re, im)


def _check_complex_method(method: str) -> None:
    """ValueError naming the methods that take complex data, for one that cannot."""
    rows = {m.name: m for m in _methods()}
    if method in rows and not takes_complex(rows[method]):
        can = [m.name for m in rows.values() if takes_complex(m)]
        raise ValueError(f"method {method!r} cannot take complex data (it has no fp32/fp64); "
                         "methods that can: " + ", ".join(can))


def _finite_data(b, image, complex_image: bool, fill) -> bool:
    parts = b.parts(image) if complex_image else (image,)
    return all(b.all_finite(x) for x in parts) and bool(np.isfinite(complex(fill)))


def plan(kernel, image_shape, *, mode="full", boundary="fill", fillvalue=0, method="auto",
         precision=None, convolve=False, device=None, options=None) -> Plan:
    """Prepare a reusable correlation (or convolution) of `kernel` over images of one shape.

    The plan takes one (H, W) image or a (B, H, W) stack of them (one call, the kernel state
    prepared once). On a GPU, make the plan once and call it: building it (workspaces, rank
    factors, the kernel's spectrum) costs far more than a call.

    Parameters
    ----------
    kernel : array_like
        The 2-D kernel: NumPy, CuPy or PyTorch (CUDA). A 3-D (K, kh, kw) kernel is a stack of
        per-image kernels: the plan (a ``PerImagePlan``) takes (K, H, W) stacks, image i with
        kernel i, or (N, K, H, W) stacks, channel c with kernel c.
    image_shape : tuple of int
        (H, W) of the images the plan will take.
    mode : {'full', 'valid', 'same'}, optional
        As in `correlate2d`.
    boundary : {'fill', 'wrap', 'symm'}, optional
        As in `correlate2d`.
    fillvalue : scalar, optional
        As in `correlate2d`.
    method : str, optional
        'auto' or a registry method name (`methods`).
    precision : str, optional
        One of `PRECISIONS`; default from the kernel's dtype.
    convolve : bool, optional
        True: a convolution (the kernel flipped), as `convolve2d`.
    device : {None, 'cpu', 'cuda'}, optional
        Where ``method='auto'`` should run for host kernels (None: where the data are).
    options : dict, optional
        Typed plan options choosing among the named method's code paths, e.g.
        ``{"separable.fused": False}`` (the two-pass form) or ``{"im2tensor.db": 16}``; every
        default is the measured choice. `plan_options` lists them. Not with ``method='auto'``.

    Returns
    -------
    Plan
        Call it with an image or a stack.

    Raises
    ------
    ValueError
        An unknown mode, boundary, method, precision or device; a method unavailable here (the
        message says why); in 'valid' mode a kernel larger than the image; an unknown option,
        one of another method, a bad value, or options with ``method='auto'``.
    TypeError
        A non-numeric kernel, or an `image_shape` that is not a pair of integers.
    MemoryError
        The method's workspace does not fit on the device.

    See Also
    --------
    correlate2d : one call, with the plan cache for NumPy data.
    plan_options : the options and their valid values.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> kernel = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> p = tc.plan(kernel, (4, 4), mode="valid", method="direct", precision="fp64")
    >>> p.method, p.out_shape
    ('direct', (3, 3))
    >>> image = np.arange(16.0).reshape(4, 4)
    >>> p(image)
    array([[ 5.,  7.,  9.],
           [13., 15., 17.],
           [21., 23., 25.]])
    """
    if np.ndim(kernel) == 3:
        from ._perimage import PerImagePlan

        return PerImagePlan(kernel, image_shape, mode=mode, boundary=boundary,
                            fillvalue=fillvalue, method=method, precision=precision,
                            convolve=convolve, device=device, options=options)
    return Plan(kernel, image_shape, mode=mode, boundary=boundary, fillvalue=fillvalue,
                method=method, precision=precision, convolve=convolve, device=device,
                options=options)


class PlanOption(NamedTuple):
    """One plan option: a typed switch among a method's code paths, or a tile override.

    Attributes
    ----------
    name : str
        ``"family.option"``, e.g. ``"separable.fused"``.
    methods : tuple of str
        The methods it applies to.
    values : str
        The valid values.
    default : str
        The default (None: the method's own, measured, choice).
    doc : str
        What it chooses.

    Examples
    --------
    >>> import tensorconv as tc
    >>> o = next(o for o in tc.plan_options() if o.name == "separable.fused")
    >>> o.methods
    ('separable',)
    """
    name: str  # "family.option", e.g. "separable.fused"
    methods: tuple  # the methods it applies to
    values: str  # the valid values
    default: str  # the default (None: the method's own choice)
    doc: str


def plan_options() -> list:
    """Every plan option `plan` accepts in ``options={...}``.

    The table comes from the C++ core, which also validates the options a plan is given.

    Returns
    -------
    list of PlanOption
        Name, methods, valid values, default and what each option chooses.

    Examples
    --------
    >>> import tensorconv as tc
    >>> names = [o.name for o in tc.plan_options()]
    >>> "separable.fused" in names and "fft.layout" in names
    True
    """
    return [PlanOption(o.name, tuple(x.strip() for x in o.methods.split(",")), o.values,
                       o.default, o.doc) for o in _core.plan_options()]


_NUMPY = NumpyBackend()
_FAST_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
_FAST_FILLS = (int, float)


def _data_device(b, x):
    """The CUDA device id of a device array (None for host arrays)."""
    if not b.on_device:
        return None
    d = x.device
    return int(d.id) if b.name == "cupy" else int(d.index)


def _host_kernel(b, k):
    """The kernel's content on the host, for the key: the array itself (NumPy), else one copy
    from the device (it waits for the caller's stream: _plan_cache's docstring); None where it
    is too large to key or cannot be copied (a dtype NumPy lacks)."""
    if not b.on_device:
        return k
    n = k.numel() * k.element_size() if b.name == "torch" else k.nbytes
    if n > _plan_cache.MAX_KERNEL_BYTES:
        return None
    try:
        return b.to_host(k)
    except (TypeError, RuntimeError):
        return None


_FAST_NAMES = frozenset(("float16", "float32", "float64"))


def _fast_key(in1, in2, mode, boundary, fillvalue, method, precision, convolve, dtype, options):
    """The plan-cache key of the commonest calls, else None: two 2-D float arrays of one dtype
    (float16/32/64; NumPy, or a CUDA image of CuPy / PyTorch with a kernel on the host or of the
    same library), the image at least the kernel's size, a string method and precision (or
    None), a number (int or float) as fill value, no dtype or options. Such a call, once cached,
    skips the general checks and conversions (which cost most of a small call's time): its plan
    was made from the same shapes, dtypes and arguments (checked then). The key holds the
    kernel's content, as the general one does. Returns (key, backend, host kernel, fill)."""
    if (dtype is not None or options or fillvalue.__class__ not in _FAST_FILLS
            or method.__class__ is not str or not (precision is None
                                                   or precision.__class__ is str)):
        return None
    t1, t2 = type(in1), type(in2)
    if t1 is np.ndarray:
        if t2 is not np.ndarray:
            return None
        b, dev, stream = _NUMPY, None, None
        dt = in1.dtype
        if (dt is not in2.dtype and dt != in2.dtype) or dt not in _FAST_DTYPES:
            return None
        name = dt.char
    else:
        mod = t1.__module__
        if not (mod.startswith("cupy") or mod.startswith("torch")) or (
                t2 is not t1 and t2 is not np.ndarray):
            return None
        b = backend_of(in1)
        if not b.on_device:
            return None
        name = b.dtype_str(in1)
        if name not in _FAST_NAMES or name != (b.dtype_str(in2) if t2 is t1
                                               else _NUMPY.dtype_str(in2)):
            return None
        dev, stream = _data_device(b, in1), b.stream(in1)
    if in1.ndim != 2 or in2.ndim != 2:
        return None
    (ih, iw), (kh, kw) = in1.shape, in2.shape
    if kh > ih or kw > iw or kh == 0 or kw == 0:
        return None
    k = in2 if t2 is np.ndarray else _host_kernel(b, in2)
    if k is None:
        return None
    c = _plan_cache.content(k)
    if c is None:
        return None
    try:
        fill = float(fillvalue)
    except OverflowError:  # an int too large: the general path's error
        return None
    return ((dev, stream, "fast", c, name, tuple(in2.shape), tuple(in1.shape), mode, boundary,
             repr(fill), method, precision, bool(convolve)), b, k, fill)


def _run(in1, in2, mode, boundary, fillvalue, method, precision, convolve: bool, dtype,
         options=None, batch=False):
    fast = None if batch is not False else _fast_key(in1, in2, mode, boundary, fillvalue,
                                                     method, precision, convolve, dtype, options)
    fk = None
    if fast is not None:
        fk, b, kh_, fill_ = fast
        p = _plan_cache.acquire(fk)
        if p is None:  # a GPU plan of this very call for another kernel, re-prepared for this one
            p = _plan_cache.adopt(fk, lambda q: isinstance(q, Plan) and q._rekernel(kh_))
        if p is not None:  # made from these very shapes, dtypes and arguments (checked then)
            return _plan_cache.run(
                fk, lambda: Plan(kh_, in1.shape, mode=mode, boundary=boundary, fillvalue=fill_,
                                 method=method, precision=precision, convolve=convolve,
                                 device="cuda" if b.on_device else None),
                lambda q: q._real(b, q._plan, in1, fill_), not b.on_device, plan=p)
        in2 = kh_  # (a device kernel's host copy: the plan is made from it, no second copy)
    b1, b2 = backend_of(in1), backend_of(in2)
    in1, in2 = b1.asarray(in1), b2.asarray(in2)
    if not isinstance(batch, (bool, np.bool_)):
        raise TypeError(f"batch must be True or False, got {batch!r}")
    if batch and np.ndim(in2) == 3:  # a stack of per-image kernels (_perimage.py's rule)
        from . import _perimage

        return _perimage.run(in1, in2, mode, boundary, fillvalue, method, precision, convolve,
                             dtype, options)
    b1, b2 = backend_of(in1), backend_of(in2)
    in1, in2 = b1.asarray(in1), b2.asarray(in2)
    _check_array(in1, b1, "in1", (3,) if batch else (2,),
                 allow_empty=not (batch and in1.ndim == 3 and in1.shape[0] == 0))
    _check_array(in2, b2, "in2", allow_empty=True)
    _check_mode(mode)
    rt = result_dtype(b1.dtype_str(in1), b2.dtype_str(in2))
    # integer and bool inputs come back in scipy's dtype; float and complex ones in the
    # precision's storage (scipy's dtype too unless a precision was asked for)
    out_dtype = np.dtype(dtype) if dtype is not None else (rt if rt.kind in "biu" else None)
    if out_dtype is not None and out_dtype.kind in "iu" and _integer_sums_inexact(
            in1, in2, b1, b2, rt):
        if b1.on_device or b2.on_device:
            raise ValueError("integer inputs this large have sums beyond 2**53, which fp64 does "
                             "not hold exactly, so scipy's wrapped integer result cannot be "
                             "reproduced on the device; pass dtype=np.float64 (or float inputs)")
        import scipy.signal as ss  # scipy's own integer arithmetic, exact and wrapped

        f = ss.convolve2d if convolve else ss.correlate2d
        if batch:
            return np.stack([f(x, in2, mode, boundary, fillvalue) for x in in1]).astype(
                out_dtype, copy=False)
        return f(in1, in2, mode, boundary, fillvalue).astype(out_dtype, copy=False)
    if "c" in (b1.dtype_kind(in1), b2.dtype_kind(in2)) and isinstance(method, str):
        _check_complex_method(method)
    if precision is None:
        precision = default_precision(b1.dtype_str(in1), b2.dtype_str(in2))
    if _check_boundary(boundary) != "fill":
        fillvalue = 0  # scipy neither reads nor checks it with 'wrap' or 'symm'
    fill = _check_fillvalue(fillvalue)
    if dtype is None and _fill_needs_scipys_check(rt, fillvalue):
        _scipys_fill_check(rt, boundary, fillvalue)
    if out_dtype is not None and out_dtype.kind in "biu" and not isinstance(fill, complex):
        fill = np.asarray(fill).astype(out_dtype).item()  # scipy casts it to the output type
    swapped = False
    if mode == "valid":
        s1, s2 = tuple(in1.shape[-2:]), tuple(in2.shape)
        ok1 = all(a >= b for a, b in zip(s1, s2))
        ok2 = all(a <= b for a, b in zip(s1, s2))
        if batch and not ok1:  # scipy would swap: a stack of kernels is not what was asked
            raise ValueError("For 'valid' mode with batch=True the images must be at least as "
                             f"large as the kernel in every dimension (got images {s1} and "
                             f"kernel {s2})")
        if not (ok1 or ok2):
            raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                             f"every dimension (got {s1} and {s2})")
        if not ok1:  # scipy swaps the inputs and flips the result
            in1, in2, b1, b2, swapped = in2, in1, b2, b1, True
    if 0 in tuple(in1.shape) or 0 in tuple(in2.shape):
        return _empty_result(in1, in2, b1, b2, mode, _check_boundary(boundary), fill,
                             precision, convolve, out_dtype)
    device = "cuda" if b1.on_device else None
    options = check_options(options)
    key = fk
    if key is None and isinstance(method, str):
        k_host = _host_kernel(b2, in2)
        if k_host is not None:
            dev = _data_device(b1, in1)
            key = _plan_cache.key(k_host, in1.shape[-2:], mode, _check_boundary(boundary), fill,
                                  method, precision, convolve, dev,
                                  tuple(sorted(options.items())),
                                  b1.stream(in1) if b1.on_device else None)
            in2 = k_host if b2.on_device else in2
        p = _plan_cache.acquire(key)
    else:
        p = None  # (a fast key missed above)

    def build():
        return Plan(in2, in1.shape[-2:], mode=mode, boundary=boundary, fillvalue=fill,
                    method=method, precision=precision, convolve=convolve, device=device,
                    options=options)

    if p is None and key is not None and fk is None:  # (a fast key's miss tried this above)
        # a miss: a cached CUDA plan of this call for another kernel may be re-prepared
        p = _plan_cache.adopt(key, lambda q: isinstance(q, Plan) and q._rekernel(in2))

    out = _plan_cache.run(key, build, lambda q: q(in1), not b1.on_device, plan=p)
    # scipy flips a swapped correlation; convolution commutes, so it needs no flip
    out = b1.flip(out) if swapped and not convolve else out
    return b1.cast(out, out_dtype) if out_dtype is not None else out


def _empty_result(in1, in2, b1, b2, mode, boundary, fill, precision, convolve, out_dtype):
    """scipy.signal's result where an input has no elements (every case that returns rather
    than crashes in scipy 1.17): the output shape scipy gives (full: s1 + s2 - 1, same: s1,
    valid: s1 - s2 + 1 with the inputs swapped as scipy swaps them), every output the sum of
    its window, which holds no image pixel: fill * sum of the taps with boundary 'fill', 0
    with an empty kernel. scipy divides by zero (SIGFPE) on an empty image with 'wrap' or
    'symm' and a non-empty output; that raises ValueError here."""
    complex_data = "c" in (b1.dtype_kind(in1), b2.dtype_kind(in2)) or isinstance(fill, complex)
    if complex_data and precision not in COMPLEX_PRECISIONS:
        raise ValueError(f"complex data needs precision fp32 or fp64 (complex64 / complex128 "
                         f"arithmetic); {precision!r} is unsupported with complex data")
    lead = tuple(in1.shape[:-2])  # a stack's images
    (h1, w1), (h2, w2) = in1.shape[-2:], in2.shape
    if mode == "full":
        shape = (h1 + h2 - 1, w1 + w2 - 1)
    elif mode == "same":
        shape = (h1, w1)
    else:
        shape = (h1 - h2 + 1, w1 - w2 + 1)
    if min(shape) < 0:
        raise ValueError(f"negative dimensions are not allowed: mode {mode!r} on inputs of "
                         f"shapes {tuple(in1.shape[-2:])} and {tuple(in2.shape)} gives "
                         f"{shape} (as scipy.signal)")
    # (in1 is the image: scipy's swap in 'valid' mode has been made; there every window
    # lies inside the image, so the outputs, if any, sum no taps or no pixels: 0)
    value = 0.0
    image_empty = h1 == 0 or w1 == 0
    # (scipy's loop over the kernel's rows reads the image modulo its extent: no rows, no fault)
    if min(shape) > 0 and image_empty and mode != "valid" and boundary != "fill" and h2 > 0:
        raise ValueError(f"boundary {boundary!r} needs image pixels to extend, and this "
                         f"image has none (shape {tuple(in1.shape[-2:])}); scipy.signal "
                         "fails with a division by zero here")
    if min(shape) > 0 and image_empty and math.prod(in2.shape) > 0 and mode != "valid":
        # the image has no pixels: every window is padding
        k = b2.to_host_complex128(in2)
        value = complex(fill) * complex(k.sum() if convolve else np.conj(k).sum())
    storage = _COMPLEX_STORAGE[precision] if complex_data else _STORAGE[precision]
    like = in1 if b1.on_device else (in2 if b2.on_device else None)
    b = b1 if b1.on_device or not b2.on_device else b2
    out = b.empty(lead + shape, storage, like=like)
    if math.prod(out.shape):
        out[...] = value if complex_data else complex(value).real
    return b.cast(out, out_dtype) if out_dtype is not None else out


def calibrate_cpu(save: bool = True) -> dict:
    """Measure this machine's costs of the CPU methods for ``method='auto'``.

    Takes about a second per precision. With `save`, the constants are kept in the user's cache
    directory (``cpu_cost/``, one file per CPU model, core count and SIMD path), where later
    processes read them; cached 'auto' plans are dropped, since they were chosen with the old
    constants.

    Parameters
    ----------
    save : bool, optional
        Keep the constants for later processes (default True).

    Returns
    -------
    dict
        The constants per precision: seconds per output, per multiply-add, per FFT unit, and
        fixed.

    Examples
    --------
    >>> import tensorconv as tc
    >>> constants = tc.calibrate_cpu(save=False)    # doctest: +SKIP
    >>> sorted(constants)                           # doctest: +SKIP
    ['fp32', 'fp64']
    """
    constants = _cpu_cost.calibrate(save=save)
    _plan_cache.clear()  # cached 'auto' plans were chosen with the old constants
    return constants


def clear_plan_cache(device=None) -> None:
    """Forget the plans `correlate2d` and `convolve2d` keep for repeated calls.

    Also those of `tensorconv.filters`, `tensorconv.astropy` and `tensorconv.dask`, freeing their
    memory: all of them, or one pool's. Hit and miss counts restart.

    Parameters
    ----------
    device : None, "cpu" or int, optional
        ``None`` clears every pool; ``"cpu"`` the host plans; an int that CUDA device's plans.

    Returns
    -------
    None

    Examples
    --------
    >>> import tensorconv as tc
    >>> tc.clear_plan_cache()
    >>> tc.plan_cache_info()["plans"]
    0
    """
    _plan_cache.clear(device)


def plan_cache_info() -> dict:
    """The plan cache's state.

    Repeated `correlate2d` / `convolve2d` calls reuse their plan from a bounded cache with one
    pool per device (``"cpu"`` and each CUDA device id), keyed on the kernel's content (its bytes,
    or a digest of them), dtype and shape, the image shape, mode, boundary, fill value, method,
    precision, options, device and (for device data) the CUDA stream. A miss on a GPU whose pool
    holds an idle plan of the same call but another kernel re-prepares that plan for the new
    kernel where its method can (``fft``: the spectrum is remade on the device at the call)
    instead of building one.

    Returns
    -------
    dict
        Totals ``plans``, ``bytes``, ``hits`` and ``misses``; the CPU pool's bounds
        ``max_plans`` and ``max_bytes``; and under ``devices`` each pool with its ``plans``,
        ``bytes``, ``max_bytes``, ``max_plans``, ``hits``, ``misses``, ``evictions`` and
        ``rekernels`` (misses served by re-preparing a plan for a new kernel).

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> tc.clear_plan_cache()
    >>> x, k = np.ones((32, 32)), np.ones((3, 3))
    >>> _ = tc.correlate2d(x, k, "valid", method="direct")
    >>> _ = tc.correlate2d(x, k, "valid", method="direct")
    >>> info = tc.plan_cache_info()
    >>> info["plans"], info["hits"] >= 1
    (1, True)
    """
    return _plan_cache.info()


def set_plan_cache_limit(max_bytes=None, device=None) -> None:
    """Set the most memory the cached plans may hold, per device.

    Idle plans beyond the new budget are freed at once.

    Parameters
    ----------
    max_bytes : int or None, optional
        The budget in bytes; 0 keeps nothing. ``None`` restores the default: 256 MiB on the CPU,
        min(1 GiB, 10 % of the device's memory) per GPU. The environment variable
        ``TENSORCONV_PLAN_CACHE_MB``, read at import, sets every pool's default instead.
    device : None, "cpu" or int, optional
        The pool: every pool (``None``), the host plans (``"cpu"``) or a CUDA device id.

    Returns
    -------
    None

    Examples
    --------
    >>> import tensorconv as tc
    >>> tc.set_plan_cache_limit(64 << 20, device="cpu")
    >>> tc.plan_cache_info()["devices"]["cpu"]["max_bytes"] == 64 << 20
    True
    >>> tc.set_plan_cache_limit()  # the defaults again
    """
    _plan_cache.set_limit(max_bytes, device)


def _integer_sums_inexact(in1, in2, b1, b2, rt) -> bool:
    """Whether some sum of products of these integer inputs may reach 2**53 (fp64 then rounds)."""
    if 0 in tuple(in1.shape) or 0 in tuple(in2.shape):
        return False  # no sums (or sums of the fill value: the empty-input rule)
    area1 = in1.shape[-2] * in1.shape[-1]  # one image of a stack
    if rt.itemsize <= 2:  # |x| < 2**16: products < 2**32, sums of < 2**21 terms stay exact
        return min(area1, in2.shape[0] * in2.shape[1]) >= 1 << 21
    m1 = float(abs(b1.to_host_float64(in1)).max())
    m2 = float(abs(b2.to_host_float64(in2)).max())
    terms = min(area1, in2.shape[0] * in2.shape[1])
    return m1 * m2 * terms >= 2.0**53


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, *, method="auto",
                precision=None, dtype=None, options=None, batch=False):
    """Cross-correlate two 2-D arrays, as ``scipy.signal.correlate2d``, by any registry method.

    Parameters
    ----------
    in1 : array_like
        The image: a 2-D NumPy, CuPy or PyTorch (CUDA) array; with ``batch=True`` a (B, H, W)
        stack. Real, complex, integer or bool.
    in2 : array_like
        The kernel, a 2-D array (NumPy or the image's device array type).
    mode : {'full', 'valid', 'same'}, optional
        Output size, as in scipy: the full correlation, only outputs whose window lies inside
        the image (scipy's swap rule: in 'valid' mode the larger input is the image), or the
        size of `in1`, centred as scipy centres it.
    boundary : {'fill', 'wrap', 'symm'}, optional
        How the image is extended: `fillvalue`, periodically, or mirrored with the edge pixel
        repeated. scipy's synonyms 'pad', 'circular' and 'symmetric' are accepted.
    fillvalue : scalar, optional
        The value outside the image for ``boundary='fill'`` (a scalar or one-element array,
        complex allowed).
    method : str, optional
        'auto' (the default: chosen by a measured cost model, see `explain`) or the name of any
        registry method with entry ``correlate2d`` (`methods` lists them).
    precision : str, optional
        One of `PRECISIONS`; default from the input dtypes (`default_precision`). Never lowered
        unless asked.
    dtype : dtype, optional
        The output dtype; default scipy's (integers, bool) or the precision's storage (floats).
    options : dict, optional
        Plan options of the named method (`plan_options`); not with ``method='auto'``.
    batch : bool, optional
        True: `in1` is a (B, H, W) stack (B >= 1) and every image is processed with the one
        kernel in one call; the result is (B, ...). Default: scipy's 2-D behaviour. With a 3-D
        `in2` (K, kh, kw), per-image kernels: `in1` is (K, H, W) (image i with kernel i) or
        (N, K, H, W) (every image of channel c with kernel c); another count along the kernel
        axis is a ValueError. `methods_table` says which methods take the stack natively.

    Returns
    -------
    array
        The correlation, the same array type as `in1` on the same device; shape and dtype as
        scipy gives them (see Notes).

    Raises
    ------
    ValueError
        An unknown mode, boundary, method or precision; a method that is unavailable here (the
        message says why) or cannot take the data (complex data on a method without fp32/fp64,
        half or tf32 precisions with complex data); in 'valid' mode, inputs neither of which
        is at least as large as the other; bad plan options; a bad fill value.
    TypeError
        A non-numeric input (strings, objects) or a `batch` that is not a bool.
    MemoryError
        The method's workspace or the output does not fit on the device.

    See Also
    --------
    convolve2d, plan, explain

    Notes
    -----
    Integer and bool inputs give scipy's dtype (NumPy's promotion of the two: exact fp64 sums,
    wrapped as scipy's integer arithmetic wraps them; where sums may pass 2**53, scipy itself
    computes them). Float and complex inputs give the precision's storage dtype (float16,
    float32, float64; complex64 for fp32, complex128 for fp64); `dtype` asks for another, e.g.
    ``dtype=np.float64`` for exact wide integer results.

    Complex data run on every method with fp32/fp64 as four real correlations of the parts (two
    when the kernel or the image is real); ``fft`` and ``fft_cpu`` take them natively.

    Empty inputs (a dimension of 0) give scipy.signal's result: its shape (full: s1 + s2 - 1,
    same: s1, valid: s1 - s2 + 1 after scipy's swap), its dtype and its values (each output sums
    a window without image pixels: fill times the sum of the taps with boundary='fill' in 'full'
    mode, else 0); a negative dimension raises ValueError, as in scipy. Differences: an empty
    image extended by boundary 'wrap' or 'symm' with a kernel that has rows, into a non-empty
    output, raises ValueError (scipy 1.17 dies of a division by zero, SIGFPE); bool inputs are
    accepted (scipy raises ValueError for them); with batch=True a stack of no images raises
    ValueError, a stack of empty images gives each image's result.

    ``method='auto'`` on the CPU takes ``fft_cpu`` only where it is predicted twice as fast as
    ``direct`` and, per call, where its rounding stays within sqrt(eps) of every output's own
    scale (the sum of ``|x| |k|`` over the window) and the data are not all integers; elsewhere
    ``direct``, so the result keeps scipy's accuracy whatever the machine's calibration.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.signal
    >>> import tensorconv as tc
    >>> image = np.arange(16.0).reshape(4, 4)
    >>> kernel = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> tc.correlate2d(image, kernel, "valid", method="direct")
    array([[ 34.,  44.,  54.],
           [ 74.,  84.,  94.],
           [114., 124., 134.]])
    >>> out = tc.correlate2d(image, kernel, mode="same", boundary="symm")
    >>> np.allclose(out, scipy.signal.correlate2d(image, kernel, "same", "symm"))
    True
    >>> tc.correlate2d(image.astype(np.float32), kernel, "full", precision="fp32").dtype
    dtype('float32')
    >>> tc.correlate2d(np.ones((3, 4, 4)), kernel, "valid", batch=True).shape
    (3, 3, 3)
    """
    return _run(in1, in2, mode, boundary, fillvalue, method, precision, False, dtype,
                options, batch)


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, *, method="auto",
               precision=None, dtype=None, options=None, batch=False):
    """Convolve two 2-D arrays, as ``scipy.signal.convolve2d``, by any registry method.

    Parameters
    ----------
    in1 : array_like
        The image: a 2-D NumPy, CuPy or PyTorch (CUDA) array; with ``batch=True`` a (B, H, W)
        stack. Real, complex, integer or bool.
    in2 : array_like
        The kernel (flipped, as convolution flips it), a 2-D array (NumPy or the image's device array type).
    mode : {'full', 'valid', 'same'}, optional
        Output size, as in scipy: the full correlation, only outputs whose window lies inside
        the image (scipy's swap rule: in 'valid' mode the larger input is the image), or the
        size of `in1`, centred as scipy centres it.
    boundary : {'fill', 'wrap', 'symm'}, optional
        How the image is extended: `fillvalue`, periodically, or mirrored with the edge pixel
        repeated. scipy's synonyms 'pad', 'circular' and 'symmetric' are accepted.
    fillvalue : scalar, optional
        The value outside the image for ``boundary='fill'`` (a scalar or one-element array,
        complex allowed).
    method : str, optional
        'auto' (the default: chosen by a measured cost model, see `explain`) or the name of any
        registry method with entry ``correlate2d`` (`methods` lists them).
    precision : str, optional
        One of `PRECISIONS`; default from the input dtypes (`default_precision`). Never lowered
        unless asked.
    dtype : dtype, optional
        The output dtype; default scipy's (integers, bool) or the precision's storage (floats).
    options : dict, optional
        Plan options of the named method (`plan_options`); not with ``method='auto'``.
    batch : bool, optional
        True: `in1` is a (B, H, W) stack (B >= 1) and every image is processed with the one
        kernel in one call; the result is (B, ...). Default: scipy's 2-D behaviour. With a 3-D
        `in2` (K, kh, kw), per-image kernels: `in1` is (K, H, W) (image i with kernel i) or
        (N, K, H, W) (every image of channel c with kernel c); another count along the kernel
        axis is a ValueError. `methods_table` says which methods take the stack natively.

    Returns
    -------
    array
        The convolution, the same array type as `in1` on the same device; shape and dtype as
        scipy gives them (see Notes).

    Raises
    ------
    ValueError
        An unknown mode, boundary, method or precision; a method that is unavailable here (the
        message says why) or cannot take the data (complex data on a method without fp32/fp64,
        half or tf32 precisions with complex data); in 'valid' mode, inputs neither of which
        is at least as large as the other; bad plan options; a bad fill value.
    TypeError
        A non-numeric input (strings, objects) or a `batch` that is not a bool.
    MemoryError
        The method's workspace or the output does not fit on the device.

    See Also
    --------
    correlate2d, plan

    Notes
    -----
    Integer and bool inputs give scipy's dtype (NumPy's promotion of the two: exact fp64 sums,
    wrapped as scipy's integer arithmetic wraps them; where sums may pass 2**53, scipy itself
    computes them). Float and complex inputs give the precision's storage dtype (float16,
    float32, float64; complex64 for fp32, complex128 for fp64); `dtype` asks for another, e.g.
    ``dtype=np.float64`` for exact wide integer results.

    Complex data run on every method with fp32/fp64 as four real correlations of the parts (two
    when the kernel or the image is real); ``fft`` and ``fft_cpu`` take them natively.

    Empty inputs (a dimension of 0) give scipy.signal's result: its shape (full: s1 + s2 - 1,
    same: s1, valid: s1 - s2 + 1 after scipy's swap), its dtype and its values (each output sums
    a window without image pixels: fill times the sum of the taps with boundary='fill' in 'full'
    mode, else 0); a negative dimension raises ValueError, as in scipy. Differences: an empty
    image extended by boundary 'wrap' or 'symm' with a kernel that has rows, into a non-empty
    output, raises ValueError (scipy 1.17 dies of a division by zero, SIGFPE); bool inputs are
    accepted (scipy raises ValueError for them); with batch=True a stack of no images raises
    ValueError, a stack of empty images gives each image's result.

    ``method='auto'`` on the CPU takes ``fft_cpu`` only where it is predicted twice as fast as
    ``direct`` and, per call, where its rounding stays within sqrt(eps) of every output's own
    scale (the sum of ``|x| |k|`` over the window) and the data are not all integers; elsewhere
    ``direct``, so the result keeps scipy's accuracy whatever the machine's calibration.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.signal
    >>> import tensorconv as tc
    >>> image = np.arange(16.0).reshape(4, 4)
    >>> kernel = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> tc.convolve2d(image, kernel, "valid", method="direct")
    array([[ 16.,  26.,  36.],
           [ 56.,  66.,  76.],
           [ 96., 106., 116.]])
    >>> out = tc.convolve2d(image, kernel)        # mode='full', boundary='fill'
    >>> np.allclose(out, scipy.signal.convolve2d(image, kernel))
    True
    >>> tc.convolve2d(np.ones((3, 3), np.int16), np.ones((2, 2), np.int16), "valid")
    array([[4, 4],
           [4, 4]], dtype=int16)
    """
    return _run(in1, in2, mode, boundary, fillvalue, method, precision, True, dtype,
                options, batch)


class Explanation(NamedTuple):
    """What ``method='auto'`` picks for one problem, and why (``str()`` reads as a paragraph).

    Attributes
    ----------
    method : str
        The method auto picks.
    device : str
        Where it runs: ``'cpu'`` or ``'cuda'``.
    reason : str
        Why, in words (which cost model decided).
    predicted_ms : dict
        Method name -> predicted time in ms, from the cost model that decided.
    excluded : dict
        Method name -> why auto may not pick it here (non-deterministic, over the precision's
        accuracy bound, spectral with a non-finite kernel).

    Examples
    --------
    >>> import tensorconv as tc
    >>> e = tc.explain((256, 256), (3, 3), "fp64", "cpu")
    >>> e.device
    'cpu'
    >>> str(e).startswith("auto picks")
    True
    """
    method: str
    device: str  # where it runs: "cpu" or "cuda"
    reason: str
    predicted_ms: dict  # method -> predicted time, from the cost model that decided
    excluded: dict  # method -> why auto may not pick it here

    def __str__(self):
        lines = [f"auto picks {self.method!r} ({self.device}): {self.reason}"]
        if self.predicted_ms:
            lines.append("predicted: " + ", ".join(f"{m} {t:.4g} ms" for m, t in sorted(
                self.predicted_ms.items(), key=lambda kv: kv[1])))
        lines += [f"not {m}: {why}" for m, why in self.excluded.items()]
        return "\n".join(lines)


def explain(image_shape, kernel_shape, precision: str = "fp32", device=None, *,
            mode: str = "full") -> Explanation:
    """What ``method='auto'`` would pick for a problem, and why.

    Parameters
    ----------
    image_shape : tuple of int
        (H, W) of the image.
    kernel_shape : tuple of int or array_like
        (kh, kw) of a general (full-rank, finite) kernel, or the kernel itself: its rank
        (separable kernels) and finiteness count.
    precision : str, optional
        One of `PRECISIONS` (default 'fp32').
    device : {None, 'cpu', 'cuda'}, optional
        Where the data are: 'cuda' for device arrays, None or 'cpu' for NumPy arrays (which go
        to a GPU only when the work pays for the copies).
    mode : {'full', 'valid', 'same'}, optional
        The mode of the call (it sets the padded size).

    Returns
    -------
    Explanation
        The method, its device, the reason, the predicted times and the excluded methods.

    Raises
    ------
    ValueError
        An unknown precision, mode or device, or in 'valid' mode a kernel larger than the image.

    Examples
    --------
    >>> import numpy as np
    >>> import tensorconv as tc
    >>> e = tc.explain((512, 512), (5, 5), "fp64", "cpu")
    >>> e.method in ("direct", "fft_cpu"), e.device
    (True, 'cpu')
    >>> sorted(e.predicted_ms)
    ['direct', 'fft_cpu']
    >>> bad = np.ones((5, 5)); bad[2, 2] = np.nan
    >>> tc.explain((512, 512), bad, "fp64", "cpu").method     # keeps the NaN local
    'direct'
    """
    if device not in _DEVICES:
        raise ValueError(f"unknown device {device!r}; valid devices: None, 'cpu', 'cuda'")
    _check_precision(precision)
    _check_mode(mode)
    ih, iw = _image_shape(image_shape)
    if np.ndim(kernel_shape) == 2:
        kernel = np.asarray(kernel_shape, dtype=np.float64)
    else:
        kh, kw = _image_shape(kernel_shape)
        kernel = np.random.default_rng(0).random((kh, kw))  # a general (full-rank) kernel
    kh, kw = kernel.shape
    pads = _pads(mode, kh, kw, False)
    ph, pw = ih + sum(pads[0]), iw + sum(pads[1])
    if kh > ph or kw > pw:
        raise ValueError(f"kernel {kernel.shape} is larger than the image {(ih, iw)} in 'valid' mode")
    macs = float(ph - kh + 1) * (pw - kw + 1) * kh * kw
    on_device = device == "cuda"
    method = choose_method(precision, on_device, macs, kernel, (ph, pw))
    info = {m.name: m for m in _methods()}[method]
    if info.device == "cuda":
        order, times, excluded, where = _gpu_ranking(precision, kernel, (ph, pw))
        if method in times:
            why = f"fastest predicted of the methods auto may pick ({where})"
        else:
            why = f"first available CUDA method in registry order ({where})"
        if not on_device:
            why += f"; NumPy data go to the GPU above {_AUTO_GPU_MIN_MACS:.0e} multiply-adds " \
                   f"(this problem: {macs:.3g})"
        return Explanation(method, "cuda", why, times, excluded)
    t = _cpu_costs(precision, (ph, pw), kernel) if np.isfinite(kernel).all() else {}
    why = ("fastest predicted CPU method (this machine's calibrated cost model, "
           "tensorconv.calibrate_cpu(); fft_cpu's time with its accuracy check, times "
           f"{_fft_guard.MIN_GAIN:g}, the margin it must win by)" if t
           else "the only CPU method that keeps NaN/inf local")
    if method == "fft_cpu":
        why += ("; per call, images whose outputs the transform would round beyond "
                "sqrt(eps) of their own scale, or integer images with an integer kernel, "
                "run direct (tensorconv._fft_guard)")
    if not on_device and any(m.device == "cuda" and m.available for m in _methods()):
        why += f"; NumPy data stay on the CPU below {_AUTO_GPU_MIN_MACS:.0e} multiply-adds " \
               f"(this problem: {macs:.3g})"
    return Explanation(method, "cpu", why, {m: s * 1e3 for m, s in t.items()}, {})
