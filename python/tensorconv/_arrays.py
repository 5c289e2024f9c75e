"""Array backends: NumPy on the host; CuPy and PyTorch CUDA tensors on the device.

The C++ core takes raw pointers to row-major arrays with unit column stride. A backend knows how
to make such an array in a given storage dtype, how to pad it (gather with index vectors, so the
three boundaries behave the same on every backend), how to allocate the output, and which stream
the caller is on. Arrays are kept alive by the Python objects that own them.
"""

from __future__ import annotations

import os
import threading

import numpy as np

_NP_DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64,
              "complex64": np.complex64, "complex128": np.complex128}
_DTYPE_STR: dict = {}  # dtype -> str(dtype) (NumpyBackend.dtype_str)


# Host casts of at least this many bytes (read + written) run on several threads: NumPy's cast
# loops release the GIL, and one thread converts float32 to float16 at a few GB/s, so a 16 GiB
# image took ~13 s on one thread before an fp16 / fp16fp32 call (docs/design/dask.md).
_PARALLEL_CAST_BYTES = 1 << 26
_CAST_POOL = None
_CAST_POOL_LOCK = threading.Lock()


def _cast_pool():
    global _CAST_POOL
    with _CAST_POOL_LOCK:
        if _CAST_POOL is None:
            from concurrent.futures import ThreadPoolExecutor

            _CAST_POOL = ThreadPoolExecutor(min(16, os.cpu_count() or 1),
                                            thread_name_prefix="tensorconv-cast")
        return _CAST_POOL


def _forget_cast_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there (work sent to the
    inherited pool would wait forever), so the next large cast makes a new one."""
    global _CAST_POOL, _CAST_POOL_LOCK
    _CAST_POOL, _CAST_POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_cast_pool)


def host_cast(x: np.ndarray, dtype) -> np.ndarray:
    """np.ascontiguousarray(x, dtype), in row blocks on a thread pool when it is large."""
    dt = np.dtype(dtype)
    if x.dtype == dt and x.flags.c_contiguous:
        return x
    threads = min(16, os.cpu_count() or 1)
    axis = next((i for i, n in enumerate(x.shape) if n >= 2 * threads), None)
    if (threads < 2 or axis is None or x.dtype.kind not in "biuf"
            or x.size * (x.itemsize + dt.itemsize) < _PARALLEL_CAST_BYTES):
        return np.ascontiguousarray(x, dtype=dt)
    out = np.empty(x.shape, dt)
    ends = np.linspace(0, x.shape[axis], 2 * threads + 1).astype(np.int64)
    lead = (slice(None),) * axis

    def cast(i):
        sl = lead + (slice(int(ends[i]), int(ends[i + 1])),)
        np.copyto(out[sl], x[sl], casting="unsafe")

    list(_cast_pool().map(cast, range(2 * threads)))
    return out


def boundary_indices(n: int, before: int, after: int, boundary: str) -> np.ndarray:
    """Source index of every padded position for 'wrap' or 'symm' (np.pad's semantics, which
    are scipy.signal's for any pad width), and for 'edge' / 'reflect' (np.pad's modes of those
    names: scipy.ndimage's 'nearest' / 'mirror', used by tensorconv.filters)."""
    mode = {"wrap": "wrap", "symm": "symmetric", "edge": "edge", "reflect": "reflect"}[boundary]
    return np.pad(np.arange(n), (before, after), mode=mode)


def pad_sources(n: int, before: int, after: int, boundary: str) -> np.ndarray:
    """Source index of every padded position, -1 where 'fill' puts the fill value (CUDA plans
    pad host images this way while staging them)."""
    if boundary == "fill":
        idx = np.arange(-before, n + after, dtype=np.int64)
        idx[(idx < 0) | (idx >= n)] = -1
        return idx
    return boundary_indices(n, before, after, boundary).astype(np.int64)


class NumpyBackend:
    """Host arrays. CupyBackend reuses every array operation through `xp`."""

    name = "numpy"
    on_device = False
    xp = np

    def asarray(self, x):
        return np.asarray(x)

    @staticmethod
    def dtype_kind(x) -> str:
        return x.dtype.kind

    @staticmethod
    def dtype_str(x) -> str:
        # str(dtype) costs ~5 us (numpy builds the name each time), a few times per call:
        # a quarter of a small call's Python time; the few dtypes seen are remembered
        dt = x.dtype
        s = _DTYPE_STR.get(dt)
        if s is None:
            s = str(dt)
            if len(_DTYPE_STR) < 64:
                _DTYPE_STR[dt] = s
        return s

    def to_storage(self, x, dtype: str):
        if self.xp is np:
            return host_cast(np.asarray(x), _NP_DTYPES[dtype])
        return self.xp.ascontiguousarray(x, dtype=_NP_DTYPES[dtype])

    @staticmethod
    def to_host_float64(x) -> np.ndarray:
        return np.ascontiguousarray(x, dtype=np.float64)

    def to_host_complex128(self, x) -> np.ndarray:
        return np.ascontiguousarray(self.to_host(x), dtype=np.complex128)

    @staticmethod
    def to_host(x) -> np.ndarray:
        return np.asarray(x)

    def parts(self, x):
        """Real and imaginary parts of a complex array (views; to_storage copies them)."""
        return self.xp.real(x), self.xp.imag(x)

    def zeros_like(self, x):
        return self.xp.zeros_like(x)

    def all_finite(self, x) -> bool:
        """One pass: a sum is finite unless an addend is NaN/inf (or the sum overflows, which
        the exact test then settles). Half storage sums in float32, where it cannot overflow."""
        xp = self.xp
        with np.errstate(over="ignore", invalid="ignore"):
            s = xp.sum(x, dtype=xp.float64 if x.dtype == xp.float64 else xp.float32)
        return bool(xp.isfinite(s)) or bool(xp.isfinite(x).all())

    def make_complex(self, re, im):
        out = self.xp.empty(re.shape, dtype=np.result_type(re.dtype, np.complex64))
        out.real = re
        out.imag = im
        return out

    def cast(self, x, dtype: np.dtype):
        """x (floating or complex, exact integers where the inputs were integers) in `dtype`, as
        scipy's integer arithmetic would give it: rounded to the nearest integer, then wrapped
        modulo 2**bits through int64 (exact while |values| < 2**53); bool is x != 0."""
        xp = self.xp
        if x.dtype == dtype:
            return x
        if dtype.kind == "b":
            return x != 0
        if dtype.kind in "iu":
            return xp.rint(x).astype(np.int64).astype(dtype)
        return x.astype(dtype)

    def pad(self, x, pads, boundary: str, fillvalue: float):
        xp = self.xp
        (t, b), (l, r) = pads
        if t == b == l == r == 0:
            return x
        h, w = x.shape[-2:]  # the last two axes: a (B, H, W) stack pads each image
        if boundary == "fill":
            out = xp.full((*x.shape[:-2], h + t + b, w + l + r), fillvalue, dtype=x.dtype)
            out[..., t : t + h, l : l + w] = x
            return out
        ri = xp.asarray(boundary_indices(h, t, b, boundary))
        ci = xp.asarray(boundary_indices(w, l, r, boundary))
        return xp.ascontiguousarray(x[..., ri[:, None], ci[None, :]])

    def empty(self, shape, dtype: str, like=None):
        return self.xp.empty(shape, dtype=_NP_DTYPES[dtype])

    @staticmethod
    def pointer(x) -> int:
        return x.ctypes.data

    @staticmethod
    def row_stride(x) -> int:
        return x.strides[-2] // x.itemsize

    @staticmethod
    def batch_stride(x) -> int:
        """Elements between the images of a (B, H, W) stack."""
        return x.strides[0] // x.itemsize

    def stream(self, x) -> int:
        return 0

    def flip(self, x):
        return self.xp.ascontiguousarray(x[::-1, ::-1])


class CupyBackend(NumpyBackend):
    name = "cupy"
    on_device = True

    def __init__(self, cp):
        self.xp = cp

    def asarray(self, x):
        return x

    def to_host_float64(self, x) -> np.ndarray:
        return np.ascontiguousarray(self.xp.asnumpy(x), dtype=np.float64)

    def to_host(self, x) -> np.ndarray:
        return self.xp.asnumpy(x)

    def empty(self, shape, dtype: str, like=None):
        with self.xp.cuda.Device(like.device if like is not None else None):
            return self.xp.empty(shape, dtype=_NP_DTYPES[dtype])

    @staticmethod
    def pointer(x) -> int:
        return int(x.data.ptr)

    def stream(self, x) -> int:
        return int(self.xp.cuda.get_current_stream().ptr)


class TorchBackend:
    name = "torch"
    on_device = True
    _KINDS = {"bool": "b", "uint8": "u", "int8": "i", "int16": "i", "int32": "i", "int64": "i",
              "uint16": "u", "uint32": "u", "uint64": "u", "float16": "f", "float32": "f",
              "float64": "f", "bfloat16": "f", "complex64": "c", "complex128": "c"}

    def __init__(self, torch):
        self.torch = torch
        self._dt = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64,
                    "complex64": torch.complex64, "complex128": torch.complex128}

    def asarray(self, x):
        return x

    def dtype_kind(self, x) -> str:
        return self._KINDS.get(self.dtype_str(x), "O")

    @staticmethod
    def dtype_str(x) -> str:
        return str(x.dtype).replace("torch.", "")

    def to_storage(self, x, dtype: str):
        return x.to(self._dt[dtype]).contiguous()

    def to_host_float64(self, x) -> np.ndarray:
        return np.ascontiguousarray(x.detach().to("cpu", self.torch.float64).numpy())

    def to_host(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()

    def to_host_complex128(self, x) -> np.ndarray:
        return np.ascontiguousarray(self.to_host(x), dtype=np.complex128)

    @staticmethod
    def parts(x):
        return x.real, x.imag

    def zeros_like(self, x):
        return self.torch.zeros_like(x)

    def all_finite(self, x) -> bool:
        torch = self.torch
        s = x.sum(dtype=torch.float64 if x.dtype == torch.float64 else torch.float32)
        return bool(torch.isfinite(s)) or bool(torch.isfinite(x).all())

    def make_complex(self, re, im):
        return self.torch.complex(re, im)

    def cast(self, x, dtype: np.dtype):
        torch = self.torch
        target = getattr(torch, dtype.name)
        if x.dtype == target:
            return x
        if dtype.kind == "b":
            return x != 0
        if dtype.kind in "iu":
            return torch.round(x).to(torch.int64).to(target)
        return x.to(target)

    def pad(self, x, pads, boundary: str, fillvalue: float):
        torch = self.torch
        (t, b), (l, r) = pads
        if t == b == l == r == 0:
            return x
        h, w = x.shape[-2:]  # the last two axes: a (B, H, W) stack pads each image
        if boundary == "fill":
            out = torch.full((*x.shape[:-2], h + t + b, w + l + r), fillvalue, dtype=x.dtype,
                             device=x.device)
            out[..., t : t + h, l : l + w] = x
            return out
        ri = torch.as_tensor(boundary_indices(h, t, b, boundary), device=x.device)
        ci = torch.as_tensor(boundary_indices(w, l, r, boundary), device=x.device)
        return x[..., ri[:, None], ci[None, :]].contiguous()

    def empty(self, shape, dtype: str, like=None):
        return self.torch.empty(shape, dtype=self._dt[dtype], device=like.device)

    @staticmethod
    def pointer(x) -> int:
        return int(x.data_ptr())

    @staticmethod
    def row_stride(x) -> int:
        return int(x.stride(-2))

    @staticmethod
    def batch_stride(x) -> int:
        return int(x.stride(0))

    def stream(self, x) -> int:
        return int(self.torch.cuda.current_stream(x.device).cuda_stream)

    def flip(self, x):
        return self.torch.flip(x, dims=(0, 1)).contiguous()


def backend_of(x):
    """NumPy for anything host-side; CuPy/PyTorch for their CUDA arrays. PyTorch CPU tensors and
    other array-likes go through NumPy (and come back as NumPy)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        import cupy

        return CupyBackend(cupy)
    if mod == "torch":
        import torch

        if isinstance(x, torch.Tensor) and x.is_cuda:
            return TorchBackend(torch)
    return NumpyBackend()
