"""The one bounded cache of prepared plans behind correlate2d / convolve2d, tensorconv.filters,
tensorconv.astropy and tensorconv.dask's chunks, CPU and GPU alike.

A call with a kernel, image shape and options seen recently reuses the prepared Plan (the kernel
rounded and copied, an FFT plan's cuFFT plans, work areas and kernel spectrum, a GPU plan's
device buffers) instead of building it and freeing it again. On the GPU the freeing alone costs
a device-wide synchronisation (cudaFree), so an uncached one-shot call cost 5-40x its plan's call.

Key. The kernel's CONTENT, never its identity (a kernel changed in place gets a new plan):
kernels of at most SMALL_KERNEL_BYTES (64 KiB) by their bytes, larger ones (up to
MAX_KERNEL_BYTES) by a 128-bit BLAKE2b digest of them, with dtype and shape; then the image
shape, mode, boundary, fill value (by repr: NaN equals NaN), method, precision, convolution,
the plan options, the CUDA device id of the data (None for host data) and, for device data, the
caller's CUDA stream (below).

Device kernels (CuPy / PyTorch arrays on a GPU). Their content is copied to the host for the
key: one device-to-host copy of the kernel, which waits for the work queued before it on the
caller's stream (a 55x55 float32 kernel is 12 KB: the copy itself is a few microseconds; the
wait is whatever the stream still had queued). The alternatives: a device-side hash is a
reduction whose result must be read back, so it is the same synchronisation plus a launch; and
re-preparing the kernel state on the stream at every call (keyed by shape and dtype only, no
sync) would cost one kernel-state build per call (an FFT plan's kernel spectrum is a pad, a
forward transform and a scale of the whole padded size: 0.1-0.3 ms at 4096^2 on an H200, more
than the call it serves) and needs the methods to take the kernel from device memory, which
their C++ plans do not. Plan construction copies the kernel to the host anyway, so a miss pays
the copy once (the host copy builds the plan). What a hit costs: the kernel copy and sync, the
key (bytes of the copy), one dictionary lookup under a lock and the plan's call; no allocation,
no cuFFT planning, no cudaFree.

A new kernel on a seen shape (GPU). A miss whose pool holds an idle CUDA plan cached under the
same key but for the kernel's content takes that plan (the least recently used such) and has
its method re-prepare it for the new kernel (Plan._rekernel -> the core's replace_kernel): the
FFT methods remake their kernel spectrum or taps on the device at the call, on its stream, with
nothing allocated and no cuFFT planning, where a new plan would allocate its buffers and, once
the budget is full, free another plan's (cudaFree: a device-wide synchronisation). Methods that
cannot re-prepare (and 'auto' plans whose new kernel would choose another method) build a new
plan as before. So the same shape with many kernels holds one plan; two kernels alternating on
one shape re-prepare at each call (an FFT plan's spectrum: a pad, a transform and a scale).

Budget. Per device: the CPU pool holds at most MAX_PLANS plans and MAX_BYTES bytes (256 MiB);
each GPU's pool at most MAX_GPU_PLANS plans and, by default, min(1 GiB, 10 % of that device's
memory) bytes of plans (their workspace_bytes, their kernel copies, and an estimate of the
staging buffers a CUDA plan keeps once it has served host data). TENSORCONV_PLAN_CACHE_MB (read
at import) or tensorconv.set_plan_cache_limit(...) sets the byte budget (of every pool, or of
one device); a plan larger than its pool's budget is never kept. Least recently used plans go
first.

Threads. CPU plans keep no per-call state, so one cached CPU plan serves any number of threads
at once. A CUDA plan's work areas (an FFT plan's padded image and spectra, the staging slots)
are written by each call on the caller's stream, so a CUDA plan is checked out for the length of
a call and checked back in after it: two threads calling at once get two plans (the second
builds its own, and both are kept for later calls). The stream is part of the key, so a plan
that comes back is only reused on the stream its last call was queued on: that call's kernels
are ordered before the next one's without any host synchronisation.

Failures. A call that raises drops its plan (nothing half-built is ever cached); an
out-of-memory error inside a call empties every pool (and the array libraries' free blocks) and
retries once, then raises MemoryError naming the problem.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import OrderedDict

SMALL_KERNEL_BYTES = 64 << 10  # kernels up to this size are keyed by their bytes
MAX_KERNEL_BYTES = 16 << 20  # larger ones by a digest of them; beyond this, not cached
MAX_PLANS = 32  # CPU pool: plans
MAX_BYTES = 256 << 20  # CPU pool: bytes (workspace, key, kernel copies)
MAX_PLAN_BYTES = 64 << 20  # a CPU plan holding more is not cached
MAX_GPU_PLANS = 64  # each GPU's pool: plans
GPU_DEFAULT_MAX = 1 << 30  # each GPU's pool: min(this, GPU_DEFAULT_FRACTION of its memory)
GPU_DEFAULT_FRACTION = 0.10
PLAN_OVERHEAD = 4096  # bytes counted per plan besides its buffers (objects, handles)

_lock = threading.Lock()
_pools: dict = {}  # "cpu" or CUDA device id -> _Pool
_where: dict = {}  # key -> pool name, for the keys held now
_limits: dict = {}  # pool name -> byte budget set by set_limit; "*": every pool
_device_total: dict = {}  # CUDA device id -> its memory, bytes (None: unknown)


class _Pool:
    __slots__ = ("name", "entries", "bytes", "plans", "hits", "misses", "evictions", "rekernels")

    def __init__(self, name):
        self.name = name
        self.entries: OrderedDict = OrderedDict()  # key -> [shared, [(plan, nbytes), ...]]
        self.bytes = self.plans = self.hits = self.misses = self.evictions = self.rekernels = 0


def _env_limit():
    v = os.environ.get("TENSORCONV_PLAN_CACHE_MB", "").strip()
    if not v:
        return
    try:
        mb = float(v)
    except ValueError:
        raise ValueError(f"TENSORCONV_PLAN_CACHE_MB must be a number of MB, got {v!r}") from None
    _limits["*"] = max(int(mb * (1 << 20)), 0)


_env_limit()


def content(k):
    """The key's part for a host kernel (NumPy array): its bytes, a digest of them, or None
    (too large to hash for every call)."""
    n = k.nbytes
    if n <= SMALL_KERNEL_BYTES:
        return k.tobytes()
    if n > MAX_KERNEL_BYTES:
        return None
    if not k.flags.c_contiguous:
        k = k.copy()
    return ("blake2b", hashlib.blake2b(memoryview(k).cast("B"), digest_size=16).digest())


def key(kernel, image_shape, mode, boundary, fillvalue, method, precision, convolve, device,
        options=(), stream=0):
    """The cache key of a call, or None when the call is not cached (a kernel too large).
    `kernel` is a NumPy array (a device kernel's host copy); `device` the data's CUDA device id
    (None: host data); `options` sorted (name, value) pairs; `stream` the caller's CUDA stream
    (device data)."""
    c = content(kernel)
    if c is None:
        return None
    return (device, stream, c, kernel.dtype.str, kernel.shape, tuple(image_shape), mode,
            boundary, repr(fillvalue), method, precision, bool(convolve), tuple(options))


def _gpu_limit(dev) -> int:
    if dev not in _device_total:
        _device_total[dev] = _query_device_memory(dev)
    total = _device_total[dev]
    return GPU_DEFAULT_MAX if not total else min(GPU_DEFAULT_MAX,
                                                 int(total * GPU_DEFAULT_FRACTION))


def _query_device_memory(dev):
    """The device's memory in bytes, from whichever array library is loaded (None: unknown)."""
    try:
        cp = sys.modules.get("cupy")
        if cp is not None:
            with cp.cuda.Device(dev):
                return int(cp.cuda.runtime.memGetInfo()[1])
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.mem_get_info(dev)[1])
    except Exception:  # no device, or a library that cannot say: the fixed default
        return None
    return None


def limit(name) -> int:
    """The byte budget of pool `name` ("cpu" or a CUDA device id)."""
    if name in _limits:
        return _limits[name]
    if "*" in _limits:
        return _limits["*"]
    return MAX_BYTES if name == "cpu" else _gpu_limit(name)


def _max_plans(name) -> int:
    return MAX_PLANS if name == "cpu" else MAX_GPU_PLANS


def set_limit(max_bytes=None, device=None) -> None:
    """The byte budget of every pool (device=None) or of one ("cpu" or a CUDA device id);
    max_bytes=None restores the default. Idle plans beyond a lowered budget are freed now."""
    if max_bytes is not None:
        max_bytes = int(max_bytes)
        if max_bytes < 0:
            raise ValueError(f"the plan cache limit must be >= 0 bytes, got {max_bytes}")
    with _lock:
        if device is None:
            _limits.clear()
            if max_bytes is not None:
                _limits["*"] = max_bytes
        elif max_bytes is None:
            _limits.pop(device, None)
        else:
            _limits[device] = max_bytes
        dropped = [p for pool in _pools.values() for p in _evict(pool)]
    del dropped  # freed outside the lock


def current_device() -> int:
    """The current CUDA device of the loaded array library (host data on a CUDA plan)."""
    try:
        cp = sys.modules.get("cupy")
        if cp is not None:
            return int(cp.cuda.runtime.getDevice())
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            return int(torch.cuda.current_device())
    except Exception:
        pass
    return 0


def pool_of(k, plan) -> object:
    """Where a plan's memory lives: "cpu", or the CUDA device id."""
    if getattr(plan, "_device", "cpu") != "cuda":
        return "cpu"
    dev = k[0] if isinstance(k, tuple) and isinstance(k[0], int) else None
    return dev if dev is not None else current_device()


def _stager_bytes(plan) -> int:
    """The device buffers a CUDA plan keeps once it has staged host data (host_pipeline.cu:
    3 slots of an input and an output band of ~8 MB, or of whole images)."""
    try:
        ph, pw = plan._padded
        oh, ow = plan.out_shape
        kh = plan.kernel_shape[0]
        es = {"float16": 2, "float32": 4, "float64": 8}[plan.storage]
    except (AttributeError, KeyError, TypeError, ValueError):
        return 0
    halo = kh - 1
    band = max((8 << 20) // (pw * es) - halo, 4 * halo, 64)
    if oh < 3 * band:
        band = oh
    return 3 * ((band + halo) * pw + band * ow) * es


def plan_bytes(k, plan, host_data=False) -> int:
    """The bytes a cached plan holds: its workspace, its kernel copies (the method's and the
    key's), staging where it served host data, and a fixed overhead."""
    n = PLAN_OVERHEAD
    try:
        n += int(plan.workspace_bytes)
    except Exception:
        pass
    k64 = getattr(plan, "_k64", None)
    if k64 is not None:
        n += 2 * int(k64.nbytes)  # the host float64 copy, the method's copy
    if isinstance(k, tuple):
        n += sum(len(x) for x in k if isinstance(x, bytes))
    if host_data and getattr(plan, "_device", None) == "cuda":
        n += _stager_bytes(plan)
    return n


def _evict(pool):
    """Least recently used idle plans out until the pool is within its budget (lock held);
    returns them, to be freed outside the lock."""
    out = []
    cap, nmax = limit(pool.name), _max_plans(pool.name)
    while pool.entries and (pool.bytes > cap or pool.plans > nmax):
        k, entry = next(iter(pool.entries.items()))
        plans = entry[1]
        if plans:
            p, b = plans.pop(0)
            pool.bytes -= b
            pool.plans -= 1
            pool.evictions += 1
            out.append(p)
        if not plans:
            del pool.entries[k]
            _where.pop(k, None)
    return out


def _pool(name):
    p = _pools.get(name)
    if p is None:
        p = _pools[name] = _Pool(name)
    return p


def acquire(k):
    """A cached plan for key `k`, or None (a miss; k None is neither). A shared (CPU) plan stays
    cached for other threads; a CUDA plan is checked out until release()."""
    if k is None:
        return None
    with _lock:
        name = _where.get(k)
        if name is None:
            # the miss is counted on the pool the data's device names (None: the CPU's, as host
            # data's plan may yet go either way)
            d = k[0] if isinstance(k, tuple) and isinstance(k[0], int) else "cpu"
            _pool(d).misses += 1
            return None
        pool = _pools[name]
        entry = pool.entries[k]
        plans = entry[1]
        if not plans:  # every plan of this key is in use by other threads
            pool.misses += 1
            return None
        pool.entries.move_to_end(k)
        pool.hits += 1
        if entry[0]:
            return plans[-1][0]
        p, b = plans.pop()
        pool.bytes -= b
        pool.plans -= 1
        return p


def release(k, plan, host_data=False, nbytes=None, shared=None) -> None:
    """Keep `plan` for key `k` (after a call that returned): a new shared plan is inserted, a
    checked-out one goes back. Plans above their pool's budget are not kept."""
    if k is None:
        return
    if shared is None:
        shared = getattr(plan, "_device", "cpu") != "cuda"
    name = pool_of(k, plan)
    nb = plan_bytes(k, plan, host_data) if nbytes is None else int(nbytes)
    if nb > limit(name) or (name == "cpu" and nb > MAX_PLAN_BYTES):
        return
    with _lock:
        pool = _pool(name)
        other = _where.get(k)
        if other is not None and other != name:  # (cannot happen with device ids in keys)
            return
        entry = pool.entries.get(k)
        if entry is None:
            entry = pool.entries[k] = [shared, []]
            _where[k] = name
        elif shared and entry[1]:
            pool.entries.move_to_end(k)
            return  # another thread's plan is cached already (or this very one)
        entry[1].append((plan, nb))
        pool.entries.move_to_end(k)
        pool.bytes += nb
        pool.plans += 1
        dropped = _evict(pool)
    del dropped


def is_oom(e: BaseException) -> bool:
    """An out-of-memory error of the core (MemoryError), CuPy (OutOfMemoryError, a MemoryError)
    or PyTorch (torch.cuda.OutOfMemoryError, a RuntimeError), or cuFFT's allocation failure."""
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":
        return True
    s = str(e)
    return isinstance(e, RuntimeError) and ("out of memory" in s or "CUFFT_ALLOC_FAILED" in s)


def _free_library_blocks() -> None:
    """The array libraries' cached free device blocks back to the driver (after an OOM)."""
    try:
        cp = sys.modules.get("cupy")
        if cp is not None:
            cp.get_default_memory_pool().free_all_blocks()
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass


def _shared(p) -> bool:
    return getattr(p, "_device", "cpu") != "cuda"


_UNSET = object()


def run(k, build, call, host_data=False, shared=None, plan=_UNSET):
    """call(plan) with the cached plan of key `k` (or a new one from build()), kept after a call
    that returns and dropped after one that raises. An out-of-memory error empties the cache and
    retries once; a second one raises MemoryError. `shared`: whether threads may run the plan at
    once (default: CPU plans may, CUDA plans may not); `plan`: what the caller's acquire(k)
    returned (a plan, or None for a miss), where it looked already."""
    p = acquire(k) if plan is _UNSET else plan
    hit = p is not None
    try:
        if p is None:
            p = build()
        out = call(p)
    except Exception as e:
        if not is_oom(e):
            _drop(k, p, shared)
            raise
        first = e
    else:
        sh = _shared(p) if shared is None else shared
        if not (hit and sh):  # a shared hit stays cached as it is
            release(k, p, host_data, shared=sh)
        return out
    held = total_bytes()
    _drop(k, p, shared)
    p = None
    clear(stats=False)
    _free_library_blocks()
    try:
        p = build()
        out = call(p)
    except Exception as e:
        if not is_oom(e):
            raise
        raise MemoryError(
            "out of memory in a tensorconv call, twice: the second attempt came after the plan "
            f"cache (which held {held} bytes of plans) was emptied; the problem does not fit "
            f"the free memory (first: {first}; then: {e})") from e
    release(k, p, host_data, shared=shared)
    return out


def _drop(k, p, shared=None) -> None:
    """A plan whose call raised: a shared one is forgotten (a checked-out one already is)."""
    if p is None or k is None or not (_shared(p) if shared is None else shared):
        return
    with _lock:
        name = _where.get(k)
        pool = _pools.get(name) if name is not None else None
        entry = pool.entries.get(k) if pool is not None else None
        if entry is None:
            return
        for i, (q, b) in enumerate(entry[1]):
            if q is p:
                del entry[1][i]
                pool.bytes -= b
                pool.plans -= 1
                break
        if not entry[1]:
            del pool.entries[k]
            _where.pop(k, None)


def _shape_key(k):
    """Key `k` without the kernel's content (the keys of key() and _api's fast keys), or None."""
    if not isinstance(k, tuple) or len(k) < 4:
        return None
    i = 3 if k[2] == "fast" else 2
    return k[:i] + k[i + 1:]


def adopt(k, rekernel):
    """A miss on key `k`: the least recently used idle CUDA plan cached under a key that differs
    from `k` in the kernel's content alone, re-prepared for `k`'s kernel by rekernel(plan)
    (True: done) and checked out for `k` (release() then keeps it under `k`); None where there
    is none or rekernel declines (the plan then stays cached as it was)."""
    sk = _shape_key(k)
    if sk is None:
        return None
    with _lock:
        found = None
        for name, pool in _pools.items():
            if name == "cpu":
                continue
            for old, entry in pool.entries.items():  # least recently used first
                if not entry[0] and entry[1] and _shape_key(old) == sk:
                    found = (pool, old, entry)
                    break
            if found is not None:
                break
        if found is None:
            return None
        pool, old, entry = found
        p, nb = entry[1].pop()
        pool.bytes -= nb
        pool.plans -= 1
        if not entry[1]:
            del pool.entries[old]
            _where.pop(old, None)
    try:
        done = rekernel(p)
    except Exception:  # its kernel state is unknown: dropped (the caller builds a new plan)
        return None
    if not done:
        release(old, p, nbytes=nb, shared=False)
        return None
    with _lock:
        pool.rekernels += 1
    return p


def total_bytes() -> int:
    with _lock:
        return sum(p.bytes for p in _pools.values())


def clear(device=None, stats=True) -> None:
    """Forget every cached plan (tensorconv.clear_plan_cache), or one device's ("cpu" or a
    CUDA device id); `stats`: also the hit and miss counts."""
    with _lock:
        names = list(_pools) if device is None else [device]
        dropped = []
        for n in names:
            pool = _pools.get(n)
            if pool is None:
                continue
            for k, entry in pool.entries.items():
                dropped.extend(p for p, _ in entry[1])
                _where.pop(k, None)
            pool.entries.clear()
            pool.bytes = pool.plans = 0
            if stats:
                pool.hits = pool.misses = pool.evictions = pool.rekernels = 0
    del dropped


def info() -> dict:
    """Entries, bounds, hits and misses since the last clear (tensorconv.plan_cache_info):
    totals, the CPU pool's bounds, and per device ("cpu", CUDA ids) plans, bytes, max_bytes,
    hits, misses, evictions, rekernels."""
    with _lock:
        devices = {}
        for name, p in _pools.items():
            devices[name] = {"plans": p.plans, "bytes": p.bytes, "max_bytes": limit(name),
                             "max_plans": _max_plans(name), "hits": p.hits, "misses": p.misses,
                             "evictions": p.evictions, "rekernels": p.rekernels}
        return {"plans": sum(p.plans for p in _pools.values()), "max_plans": MAX_PLANS,
                "bytes": sum(p.bytes for p in _pools.values()), "max_bytes": limit("cpu"),
                "hits": sum(p.hits for p in _pools.values()),
                "misses": sum(p.misses for p in _pools.values()), "devices": devices}
