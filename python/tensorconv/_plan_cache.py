"""The one bounded cache of Plans behind correlate2d / convolve2d (design.md: keyed by kernel
content, shapes, mode, boundary, method, precision, device, plan options).

A call with a kernel, image shape and options seen recently reuses the prepared Plan (the kernel
rounded and copied, an FFT plan's kernel spectrum) instead of building it again, which is most of
the cost of a small call. The key holds the kernel's bytes, not its identity, so a kernel array
changed in place between calls gets a new plan. Only CPU plans are kept: GPU plans hold device
buffers, which a cache would keep allocated between calls, so they are built per call as before
(tensorconv.plan reuses one explicitly). Thread safe: lookups and inserts take a lock; the plans
themselves keep no per-call state on the CPU, so threads may run one plan at the same time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

MAX_PLANS = 32
MAX_BYTES = 256 << 20  # sum of the cached plans' workspace_bytes
MAX_PLAN_BYTES = 64 << 20  # a plan holding more is not cached
MAX_KERNEL_BYTES = 256 << 10  # larger kernels are not cached (the key would hold them)

_lock = threading.Lock()
_plans: OrderedDict = OrderedDict()  # key -> (plan, bytes)
_stats = {"hits": 0, "misses": 0, "bytes": 0}


def key(kernel, image_shape, mode, boundary, fillvalue, method, precision, convolve, device,
        options=()):
    """The cache key of a call, or None when the call is not cached (a device kernel, or one too
    large to keep a copy of). `kernel` is a NumPy array; `options` sorted (name, value) pairs."""
    if kernel.nbytes > MAX_KERNEL_BYTES:
        return None
    return (kernel.tobytes(), kernel.dtype.str, kernel.shape, tuple(image_shape), mode, boundary,
            fillvalue, method, precision, bool(convolve), device, tuple(options))


def get(k):
    if k is None:
        return None
    with _lock:
        entry = _plans.get(k)
        if entry is None:
            _stats["misses"] += 1
            return None
        _plans.move_to_end(k)
        _stats["hits"] += 1
        return entry[0]


def put(k, plan) -> None:
    if k is None or plan._device != "cpu":
        return
    nbytes = int(plan.workspace_bytes)
    if nbytes > MAX_PLAN_BYTES:
        return
    with _lock:
        old = _plans.pop(k, None)
        if old is not None:
            _stats["bytes"] -= old[1]
        _plans[k] = (plan, nbytes)
        _stats["bytes"] += nbytes
        while len(_plans) > MAX_PLANS or _stats["bytes"] > MAX_BYTES:
            _, (_, b) = _plans.popitem(last=False)
            _stats["bytes"] -= b


def clear() -> None:
    """Forget every cached plan (tensorconv.clear_plan_cache)."""
    with _lock:
        _plans.clear()
        _stats.update(hits=0, misses=0, bytes=0)


def info() -> dict:
    """Entries, bounds, hits and misses since the last clear (tensorconv.plan_cache_info)."""
    with _lock:
        return {"plans": len(_plans), "max_plans": MAX_PLANS, "bytes": _stats["bytes"],
                "max_bytes": MAX_BYTES, "hits": _stats["hits"], "misses": _stats["misses"]}
