"""tensorconv.filters.gaussian: scipy.ndimage.gaussian_filter on 2-D images: on CUDA arrays one
launch of the fused separable filter with the boundary modes built in (`separable_boundary`,
csrc/cuda/methods/filters/separable_boundary.cu), or any correlate2d method of the registry.

The kernel is scipy's: per axis the sampled Gaussian (or its order-th derivative) on
-radius..radius, radius = int(truncate * sigma + 0.5) unless given, normalized to sum 1 before
differentiation; the 2-D correlation kernel is the outer product of the two axes' reversed 1-D
kernels. Boundaries are scipy.ndimage's modes.

`separable_boundary` (method 'auto' on a CUDA array in fp64, and in fp32 up to 23 taps per
axis): the modes are index maps in the kernel; one read and one write of the image, nothing
padded, the weights in the launch's parameters; a repeated call with the same arguments is one
launch (its set-up is cached per arguments).

Registry methods: padding on the array's own device, but the image is not padded as a whole
(that would be one more pass over it): the interior (all pixels at least one radius from the
edge) is one valid correlation of the image itself, written straight into the output, and the
four border strips are small padded correlations of their own, whose inputs one gather (take)
fills, back to back in one buffer, on the array's device. (Host images on a GPU method are padded
whole and staged once.)

Caching. Set-ups (the fused filter's weights; a registry method's core plans, gather indices
and cval terms) live in the one plan cache (tensorconv._plan_cache): per device pools under its
byte budget, CUDA set-ups checked out for the length of a call (two threads get two), the
out-of-memory retry. Keys: a repeated call with hashable arguments is keyed by the arguments
themselves (they determine the kernel), so a hit skips the kernel's construction and the
checks; other calls by the kernel's content (the 1-D weights' bytes). Both keys carry the
data's CUDA device id and stream (None for host data).
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _core, _plan_cache
from .._api import _STORAGE, choose_method, make_core_plan
from .._api import _data_device
from .._arrays import backend_of
from ._common import (SplitRun, can_split, check_cval, check_image, check_mode, check_positive,
                      check_precision, check_radius, image_precision, per_axis, to_device)

# The fused GPU filter (not a registry method: it filters with boundary modes, not 'valid').
FUSED = "separable_boundary"
# 'auto' in fp32 takes the fused filter up to this many taps per axis (radius 11) and the
# `separable` plan (interior + strips) above: on the H100 at 4096² the fused filter is faster to
# radius 11 (its fixed-tap kernels: 0.064-0.098 ms against the plan's 0.136-0.155) and was slower
# from 15 with the generic kernel (0.193 vs 0.184; radius 23: 0.321 vs 0.227), and its fp32 sums,
# tap by tap, drift with the taps (MAPE 7.4e-6 % at radius 23 against the plan's 2.2e-6 %: its
# column pass runs on fp64 MMAs from 25 taps). fp64, and modes that differ per axis (which only
# the fused filter takes), stay fused.
_FUSED_FP32_MAX_TAPS = 23
# ... and the `separable` plan up to this many taps, where its fused pass sums the column pass on
# fp64 MMAs (csrc/cuda/methods/separable/plan.cu: 25..64 taps); beyond, the cost model's choice stands
# (the `separable` plan's two-pass form on the H100, whose fp32 passes sum their taps in blocks
# of 16: sigma 20, 161 taps, MAPE 4.5e-6 %; 1.3e-5 % as one running sum).
_SEPARABLE_DMMA_MAX_TAPS = 64
# _common.MODES' names -> the kernel's mode numbers (csrc/cuda/methods/filters/separable_boundary.hpp).
_KMODE = {"symm": 0, "fill": 1, "edge": 2, "reflect": 3, "wrap": 4}

def gaussian_kernel1d(sigma: float, order: int, radius: int) -> np.ndarray:
    """The 1-D Gaussian of scipy.ndimage (order-th derivative for order > 0) at x = -radius ..
    radius, float64: phi = exp(-x^2 / (2 sigma^2)) / sum, times the polynomial q_order(x) of
    d^n phi / dx^n = q_n(x) phi (q_0 = 1, q_{n+1} = q_n' - x q_n / sigma^2)."""
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    s2 = sigma * sigma
    phi = np.exp(-0.5 / s2 * x * x)
    phi /= phi.sum()
    if order == 0:
        return phi
    q = np.zeros(order + 1)
    q[0] = 1.0
    for _ in range(order):
        nq = np.zeros_like(q)
        nq[:-1] = q[1:] * np.arange(1, order + 1)  # q'
        nq[1:] -= q[:-1] / s2                       # - x q / sigma^2
        q = nq
    return (x[:, None] ** np.arange(order + 1)).dot(q) * phi


def _check_order(value, name="order") -> int:
    o = check_radius(value, name)
    return o


_KERNELS: dict = {}


def _kernel(sigma, order, truncate, radius):
    """The two axes' correlation weights, cached per (validated) arguments: the front end's
    host time matters when the filter itself takes ~0.1 ms."""
    try:
        key = tuple((type(a), a) for a in (sigma, order, truncate, radius))
        hit = _KERNELS.get(key)
    except TypeError:  # unhashable (lists, arrays): compute
        key, hit = None, None
    if hit is not None:
        return hit
    w = _make_kernel(sigma, order, truncate, radius)
    if key is not None:
        if len(_KERNELS) > 256:
            _KERNELS.clear()
        _KERNELS[key] = w
    return w


def _make_kernel(sigma, order, truncate, radius):
    sig = per_axis(sigma, "sigma", check_positive)
    orders = per_axis(order, "order", _check_order)
    if radius is None:
        t = float(truncate) if np.ndim(truncate) == 0 else None
        if t is None or not np.isfinite(t) or t < 0:
            raise ValueError(f"truncate must be a finite number >= 0, got {truncate!r}")
        rad = tuple(int(t * s + 0.5) for s in sig)
    else:
        rad = per_axis(radius, "radius", check_radius)
    w = [gaussian_kernel1d(s, o, r)[::-1] for s, o, r in zip(sig, orders, rad)]
    return w[0], w[1]


def _numpy_separable(xp_pad, w0, w1, storage: str, out_shape):
    """Two 1-D passes in NumPy (accumulating in float32 for the float32/float16 storage, float64
    otherwise): the CPU's O(r) path, faster than the O(r^2) `direct` for large kernels."""
    acc = np.float64 if storage == "float64" else np.float32
    h, w = out_shape
    x = xp_pad.astype(acc, copy=False)
    tmp = np.zeros((x.shape[0], w), acc)
    for v, c in enumerate(w1.astype(acc)):
        tmp += c * x[:, v:v + w]
    out = np.zeros((h, w), acc)
    for u, c in enumerate(w0.astype(acc)):
        out += c * tmp[u:u + h]
    return out.astype(_NP[storage], copy=False)


_NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
# NumPy passes from 41x41 taps on: below, `direct`'s AVX kernels win (2-core VM, 1024^2 fp32:
# 9x9 11.7 vs 30.4 ms, 17x17 25.8 vs 38.3, 33x33 78.4 vs 62.9 ms).
_CPU_SEPARABLE_AREA = 41 * 41


class _Runner:
    """One cached filtering set-up: method, core plans (interior + strips, or one padded)."""

    def __init__(self, w0, w1, shape, boundary, cval, method, precision, on_device, split):
        self.w0, self.w1 = w0, w1
        self.K = np.outer(w0, w1)
        self.shape = shape
        self.boundary, self.cval = boundary, cval
        self.precision = precision
        self.storage = _STORAGE[precision]
        h, w = shape
        kh, kw = self.K.shape
        self.rh, self.rw = kh // 2, kw // 2
        self.method = method
        self.numpy_passes = method == "numpy_separable"
        self.split = split
        self._idx = {}
        # where its core plans live (the plan cache's pool and checkout follow it)
        self._device = "cuda" if _method_device(method) == "cuda" else "cpu"
        if self.numpy_passes:
            return
        if split:
            self.split_run = SplitRun(
                lambda ih, iw: make_core_plan(method, self.K, ih, iw, precision), shape,
                self.rh, self.rw, boundary, 0.0)  # zeros: cval enters through _add_cval
        else:
            self.full = make_core_plan(method, self.K, h + 2 * self.rh, w + 2 * self.rw,
                                       precision)

    def _plans(self):
        if self.numpy_passes:
            return []
        if not self.split:
            return [self.full]
        return [self.split_run.main] + [st[-1] for st in self.split_run.strips]

    @property
    def workspace_bytes(self) -> int:
        """The bytes it holds: its core plans' workspaces, the kernel, the strips' gather
        indices (on the device they serve) and the cval terms."""
        n = self.K.nbytes + sum(int(p.workspace_bytes) for p in self._plans())
        if self.split:
            n += self.split_run._flat.nbytes * (1 + len(self.split_run._dev))
        n += sum(self._cval_nbytes(k) for k in self._idx)
        return n

    def _cval_nbytes(self, key) -> int:
        _, _, _, i0, i1, j0, j1 = key
        return (i1 - i0) * (j1 - j0) * np.dtype(self.storage).itemsize

    def _cval_term(self, i0, i1, j0, j1) -> np.ndarray:
        """What mode='constant' adds to the zero-padded correlation over [i0, i1) x [j0, j1).

        scipy filters axis 0, then pads that result with cval again for axis 1, so with
        cval != 0 and a first-axis kernel that does not sum to 1 (order > 0) the result is not
        the 2-D correlation of the cval-padded image. By linearity it is the zero-padded one plus
        cval (s0(i) in1(j) + out1(j)): s0 = weight of w0 outside the image rows, in1 / out1 =
        weight of w1 inside / outside the columns. Nonzero only within a radius of the edge."""
        h, w = self.shape

        def inside(wts, n, r, idx):
            cs = np.concatenate(([0.0], np.cumsum(wts)))
            lo = np.clip(r - idx, 0, len(wts))
            hi = np.clip(n + r - idx, 0, len(wts))
            return cs[hi] - cs[lo]

        ii, jj = np.arange(i0, i1), np.arange(j0, j1)
        s0 = self.w0.sum() - inside(self.w0, h, self.rh, ii)
        in1 = inside(self.w1, w, self.rw, jj)
        out1 = self.w1.sum() - in1
        return self.cval * (s0[:, None] * in1[None, :] + out1[None, :])

    def _add_cval(self, b, out, i0, i1, j0, j1):
        if self.boundary != "fill" or self.cval == 0.0:
            return
        key = ("cval", b.name, str(getattr(out, "device", "")), i0, i1, j0, j1)
        t = self._idx.get(key)
        if t is None:
            t = to_device(b, out, self._cval_term(i0, i1, j0, j1).astype(_NP[self.storage]))
            self._idx[key] = t
        out[i0:i1, j0:j1] += t

    def __call__(self, b, image):
        x = b.to_storage(image, self.storage)
        h, w = self.shape
        pads = ((self.rh, self.rh), (self.rw, self.rw))
        if self.numpy_passes:
            out = _numpy_separable(b.pad(x, pads, self.boundary, 0.0), self.w0, self.w1,
                                   self.storage, self.shape)
            self._add_cval(b, out, 0, h, 0, w)
            return out
        out = b.empty((h, w), self.storage, like=x)
        stream = b.stream(x)
        if not self.split:
            xp = b.pad(x, pads, self.boundary, 0.0)
            if b.row_stride(xp) != xp.shape[1]:
                xp = b.to_storage(xp, self.storage)
            self.full.run(b.pointer(xp), xp.shape[0], xp.shape[1], b.row_stride(xp),
                          b.pointer(out), h, w, w, self.storage, b.on_device, stream)
            self._add_cval(b, out, 0, h, 0, w)
            return out
        return self.split_run(b, x, out, self.storage,
                              lambda i0, i1, j0, j1: self._add_cval(b, out, i0, i1, j0, j1))


def _check_modes(mode):
    """scipy's mode: one name, or one per axis (rows, columns) -> (boundary0, boundary1)."""
    if isinstance(mode, str):
        b = check_mode(mode)
        return b, b
    try:
        vals = list(mode)
    except TypeError:
        check_mode(mode)  # raises, naming the valid modes
        raise
    if len(vals) != 2:
        raise ValueError(f"mode must be a name or one name per axis (2), got {len(vals)}")
    return check_mode(vals[0]), check_mode(vals[1])


class _Fused:
    """One `separable_boundary` set-up: the weights (w0 | w1, float64 on the host: the launch
    carries them in its parameters), kernel lengths, modes."""

    def __init__(self, w0, w1, shape, modes, cval, storage):
        self.shape, self.storage, self.cval = shape, storage, cval
        self.k0, self.k1 = len(w0), len(w1)
        self.m0, self.m1 = _KMODE[modes[0]], _KMODE[modes[1]]
        self.wts = np.ascontiguousarray(np.concatenate([w0, w1]), dtype=np.float64)
        self.wptr = self.wts.ctypes.data

    def __call__(self, b, image):
        x = b.to_storage(image, self.storage)  # no copy when already contiguous in that dtype
        h, w = self.shape
        out = b.empty(self.shape, self.storage, like=x)
        _core.separable_boundary(b.pointer(x), h, w, b.row_stride(x), b.pointer(out), w,
                                 self.storage, self.wptr, self.k0, self.k1, self.m0, self.m1,
                                 self.cval, b.stream(x))
        return out


def _fused_or_none(w0, w1, shape, modes, cval, method, precision, on_device):
    """The fused runner where it applies ('auto' or 'separable_boundary' on a CUDA array, fp32 or
    fp64, a kernel that fits shared memory); None for the other paths. An explicit
    'separable_boundary' that cannot run raises, naming why."""
    if method not in ("auto", FUSED):
        return None
    why = None
    if not on_device:
        why = "it filters CUDA arrays (CuPy, PyTorch); this image is on the host"
    elif precision not in _fused_precisions():
        why = f"it runs {' and '.join(_fused_precisions())}, not {precision}"
    elif not _core.separable_boundary_supported(shape[0], shape[1], len(w0), len(w1),
                                                 _STORAGE[precision]):
        why = (f"a {len(w0)} x {len(w1)} kernel does not fit its shared memory (or no CUDA build); "
               "method 'auto' takes the `separable` plan")
    if why is None and method == "auto" and precision == "fp32" and \
            max(len(w0), len(w1)) > _FUSED_FP32_MAX_TAPS and modes[0] == modes[1]:
        return None  # the strips + `separable` plan: faster and more accurate there (above)
    if why is None:
        return _Fused(w0, w1, shape, modes, cval, _STORAGE[precision])
    if method == FUSED:
        raise ValueError(f"method {FUSED!r} cannot run here: {why}")
    return None


def _method_device(method):
    m = {r.name: r for r in _methods()}.get(method)
    return m.device if m is not None else "cpu"


def _runner(w0, w1, shape, boundary, cval, method, precision, on_device):
    """A new set-up of a registry method (or the NumPy passes) for these weights and image."""
    kh, kw = len(w0), len(w1)
    rows = {m.name: m for m in _methods()}
    if method == "auto":
        macs = float(shape[0]) * shape[1] * (kh + kw)  # the separable passes' work
        method = choose_method(precision, on_device, macs, np.outer(w0, w1))
        if method == "direct" and kh * kw >= _CPU_SEPARABLE_AREA:
            method = "numpy_separable"
        if precision == "fp32" and rows.get(method) is not None and \
                rows[method].device == "cuda" and max(kh, kw) <= _SEPARABLE_DMMA_MAX_TAPS:
            # The kernel is rank 1 by construction: on a GPU the `separable` plan, whatever the
            # cost model ranks first (it picks cuFFT from 27 taps, whose fp32 MAPE on USC-SIPI,
            # ~1.1e-5 %, misses the goal's 1e-5 %; the plan: <= 3.1e-6 % emulated, r = 12..23,
            # benchmarks/harness/gaussian_fp32_emulate.py).
            method = "separable"
    elif not isinstance(method, str):
        raise TypeError(f"method must be a string, got {type(method).__name__}")
    if method != "numpy_separable":
        m = rows.get(method)
        if m is not None and m.entry != "correlate2d":
            raise ValueError(f"method {method!r} is not a correlate2d method; valid methods: "
                             "auto, " + ", ".join(n for n, r_ in rows.items()
                                                  if r_.entry == "correlate2d"))
        if m is not None and on_device and m.device == "cpu":
            raise ValueError(f"method {method!r} runs on the CPU and this image is on a CUDA "
                             "device; pass a NumPy array or choose a CUDA method")
    # Interior + strips on the array's own device (GPU methods for device arrays, CPU methods
    # for host arrays); host arrays on a GPU method are padded whole and staged once.
    cpu_method = method != "numpy_separable" and rows.get(method) is not None and \
        rows[method].device == "cpu"
    split = (on_device or cpu_method) and can_split(shape, kh // 2, kw // 2)
    return _Runner(w0, w1, shape, boundary, cval, method, precision, on_device, split)


def _methods():
    from ..methods import methods
    return methods()


@functools.lru_cache(maxsize=1)
def _fused_precisions() -> tuple:
    """The precisions of the fused filter's registry row (entry filters.gaussian)."""
    return next(m.precisions for m in _methods() if m.name == FUSED)


def gaussian(image, sigma, *, order=0, mode="reflect", cval=0.0, truncate=4.0, radius=None,
             method="auto", precision=None):
    """Gaussian filter of a 2-D image, as ``scipy.ndimage.gaussian_filter``.

    The same result as ``scipy.ndimage.gaussian_filter(image, sigma, order, mode=mode,
    cval=cval, truncate=truncate, radius=radius)`` for 2-D images, on the CPU or the GPU.

    Parameters
    ----------
    image : array_like
        2-D NumPy, CuPy or PyTorch (CUDA) array; the result is the same kind of array on the
        same device.
    sigma : float or pair of float
        Standard deviation, a scalar or one value per axis (rows, columns); finite and > 0.
    order : int or pair of int, optional
        Derivative order per axis (0: smoothing), integers >= 0.
    mode : str or pair of str, optional
        'reflect' (d c b a | a b c d), 'constant' (`cval`), 'nearest', 'mirror' (d c b | a b c
        d) or 'wrap' (and scipy's synonyms 'grid-mirror', 'grid-constant', 'grid-wrap'), or one
        per axis (a pair: the fused GPU path only).
    cval : float, optional
        The value outside the image for 'constant'.
    truncate : float, optional
        Radius in units of sigma (default 4.0), unless `radius` is given.
    radius : int or pair of int, optional
        Kernel radius per axis, integers >= 0.
    method : str, optional
        'auto' (CUDA arrays: 'separable_boundary', the one-launch fused separable filter with
        the boundary modes built in, for fp64 and for fp32 up to 23 taps per axis; in fp32 the
        ``separable`` plan up to 64 taps, the cost model's choice beyond; host arrays: the
        separable passes on the GPU for large images, on the CPU two NumPy 1-D passes from
        41 x 41 taps, ``direct`` below), 'separable_boundary', or any correlate2d method of
        `tensorconv.methods` (e.g. 'separable', 'naive_shmem', 'fir_dki'), which then runs the
        2-D kernel on the interior and padded border strips.
    precision : str, optional
        None (from the image dtype: float32 -> fp32, float16 -> fp16fp32, others -> fp64) or one
        of `tensorconv.PRECISIONS`.

    Returns
    -------
    array
        The filtered image in the precision's storage dtype (integer images come back as
        float64, where scipy would truncate to the input's integer type).

    Raises
    ------
    ValueError
        A non-2-D image; a sigma that is not finite and > 0; a negative or non-integer order or
        radius; an unknown mode, method or precision; per-axis modes off the fused GPU path.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.ndimage
    >>> from tensorconv import filters
    >>> img = np.random.default_rng(0).random((64, 64))
    >>> out = filters.gaussian(img, 2.0, mode="reflect")
    >>> np.allclose(out, scipy.ndimage.gaussian_filter(img, 2.0, mode="reflect"))
    True
    >>> dy = filters.gaussian(img, (1.5, 1.5), order=(1, 0), mode="nearest")
    >>> np.allclose(dy, scipy.ndimage.gaussian_filter(img, 1.5, order=(1, 0), mode="nearest"))
    True
    """
    b = backend_of(image)
    image = b.asarray(image)
    check_image(image, b)
    where = (_data_device(b, image), b.stream(image)) if b.on_device else (None, None)
    args = (sigma, order, mode, cval, truncate, radius, method, precision)
    # Repeated calls with the same (hashable) arguments: straight to the cached set-up.
    try:
        key = (where[0], where[1], "gaussian", b.name, b.dtype_str(image), tuple(image.shape),
               method, precision, type(sigma), sigma, type(order), order, mode, type(cval), cval,
               type(truncate), truncate, type(radius), radius)
        hash(key)
    except TypeError:  # unhashable arguments (lists, arrays)
        key = None
    p = _plan_cache.acquire(key)
    if p is None:
        ckey, build = _prepare(b, image, *args)
        if key is None:  # keyed by the kernel's content
            key = where + ckey
            p = _plan_cache.acquire(key)
    else:
        def build():  # (the out-of-memory retry: the same set-up, built again)
            return _prepare(b, image, *args)[1]()
    return _plan_cache.run(key, build, lambda r: r(b, image), not b.on_device, plan=p)


def _prepare(b, image, sigma, order, mode, cval, truncate, radius, method, precision):
    """The checked arguments' content key (less device and stream) and the set-up's builder."""
    modes = _check_modes(mode)
    cv = check_cval(cval)
    w0, w1 = _kernel(sigma, order, truncate, radius)
    precision = check_precision(precision) or image_precision(b.dtype_str(image))
    shape = tuple(int(s) for s in image.shape)
    ckey = ("gaussian", w0.tobytes(), w1.tobytes(), b.name, b.dtype_str(image), shape, modes,
            repr(cv), method, precision)

    def build():
        fused = _fused_or_none(w0, w1, shape, modes, cv, method, precision, b.on_device)
        if fused is not None:
            return fused
        if modes[0] != modes[1]:
            raise ValueError(f"per-axis modes {mode!r} need the fused GPU path (method 'auto' "
                             f"or {FUSED!r} on a CUDA array, fp32/fp64); pass one mode")
        return _runner(w0, w1, shape, modes[0], cv, method, precision, b.on_device)

    return ckey, build


def method_of(image, sigma, *, order=0, mode="reflect", cval=0.0, truncate=4.0, radius=None,
              method="auto", precision=None) -> str:
    """The method gaussian(image, sigma, ...) runs with these arguments (its set-up is built,
    not cached): 'separable_boundary', 'numpy_separable' or a registry method's name."""
    b = backend_of(image)
    image = b.asarray(image)
    check_image(image, b)
    r = _prepare(b, image, sigma, order, mode, cval, truncate, radius, method, precision)[1]()
    return FUSED if isinstance(r, _Fused) else r.method
