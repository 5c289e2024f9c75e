"""One timer for every row: CUDA events on the device (through PyTorch, else CuPy) with a sleep
kernel queued first so the host's Python work stays out of the interval (timing 'kernel'; 'call'
queues no sleep, so the interval holds the Python dispatch too: the time a user sees per call),
wall clock on the host; warm-up calls, then the median of `runs`, fewer when one call is slow
(the row says how many)."""

from __future__ import annotations

import statistics
import time

import numpy as np

L2_BYTES = 50 << 20  # inputs that fit are rotated so a run does not find the last one's in L2
_NP = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


class Device:
    """The CUDA array library the bench times with: 'torch' or 'cupy' (None when neither can
    reach a device)."""

    def __init__(self):
        self.lib = None
        self.why = ""
        try:
            import torch

            if torch.cuda.is_available():
                self.lib, self.torch = "torch", torch
                return
            self.why = "torch sees no CUDA device"
        except ImportError:
            self.why = "torch is not installed"
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.lib, self.cupy = "cupy", cupy
        except Exception as e:  # not installed, or no device
            self.why += f"; cupy: {type(e).__name__}: {e}"

    def name(self) -> str:
        if self.lib == "torch":
            return self.torch.cuda.get_device_name()
        props = self.cupy.cuda.runtime.getDeviceProperties(0)
        return props["name"].decode() if isinstance(props["name"], bytes) else props["name"]

    def to_device(self, a: np.ndarray, storage: str):
        a = np.ascontiguousarray(a.astype(_NP[storage]))
        if self.lib == "torch":
            return self.torch.from_numpy(a).cuda()
        return self.cupy.asarray(a)

    def sync(self):
        if self.lib == "torch":
            self.torch.cuda.synchronize()
        else:
            self.cupy.cuda.runtime.deviceSynchronize()

    def memory(self) -> tuple:
        """(free bytes on the device, bytes the array library's pool holds)."""
        self.sync()
        if self.lib == "torch":
            return self.torch.cuda.mem_get_info()[0], self.torch.cuda.memory_reserved()
        return (self.cupy.cuda.runtime.memGetInfo()[0],
                self.cupy.get_default_memory_pool().total_bytes())

    def mape(self, out, ref) -> float | None:
        """MAPE in percent (im2tensor eq. 20) of a device output against a float64 device
        reference; None when the output is not finite."""
        if self.lib == "torch":
            t = self.torch
            if not isinstance(out, t.Tensor):  # a CuPy peer's output: shared, not copied
                out = t.as_tensor(out, device="cuda")
            p = out.to(t.float64)
            if not bool(t.isfinite(p).all()):
                return None
            rel = t.where(ref != 0, (p - ref).abs() / ref.abs().clamp_min(1e-300),
                          t.zeros_like(ref))
            return float(100.0 * rel.flatten().median())
        cp = self.cupy
        p = cp.asarray(out).astype(cp.float64)
        if not bool(cp.isfinite(p).all()):
            return None
        rel = cp.where(ref != 0, cp.abs(p - ref) / cp.maximum(cp.abs(ref), 1e-300), 0.0)
        return float(100.0 * cp.median(rel))

    def events_ms(self, fn, n_calls: int, sleep_cycles: int = 1_000_000) -> list:
        if self.lib == "torch":
            t = self.torch
            ev = [(t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True))
                  for _ in range(n_calls)]
            for i, (a, b) in enumerate(ev):
                if sleep_cycles:
                    t.cuda._sleep(sleep_cycles)  # the GPU waits here while Python enqueues fn
                a.record()
                fn(i)
                b.record()
            t.cuda.synchronize()
            return [a.elapsed_time(b) for a, b in ev]
        cp = self.cupy
        ev = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(n_calls)]
        for i, (a, b) in enumerate(ev):
            a.record()
            fn(i)
            b.record()
        cp.cuda.runtime.deviceSynchronize()
        return [cp.cuda.get_elapsed_time(a, b) for a, b in ev]


def plan_runs(first_s: float, runs: int, warm: int, row_cap_s: float) -> tuple:
    """(runs, warm-ups) that keep one row under row_cap_s given one call's time."""
    if first_s * (runs + warm) <= row_cap_s:
        return runs, warm
    return max(1, int(row_cap_s / max(first_s, 1e-9)) - 1), 0


def time_device(dev: Device, fn, runs=20, warm=3, row_cap_s=10.0, sleep=True) -> tuple:
    """(median ms, runs) of fn(i) on the device, CUDA events (sleep=False: no sleep kernel in
    front, timing 'call')."""
    dev.sync()
    t = time.perf_counter()
    fn(0)
    dev.sync()
    runs, warm = plan_runs(time.perf_counter() - t, runs, warm, row_cap_s)
    for i in range(warm):
        fn(i)
    return statistics.median(dev.events_ms(fn, runs, 1_000_000 if sleep else 0)), runs


def time_host(fn, runs=20, warm=3, row_cap_s=10.0, sync=None) -> tuple:
    """(median ms, runs) of fn(i), wall clock (sync() after each call, for device work)."""
    def once(i):
        t = time.perf_counter()
        fn(i)
        if sync:
            sync()
        return (time.perf_counter() - t) * 1e3

    first = once(0)
    runs, warm = plan_runs(first / 1e3, runs, warm, row_cap_s)
    for i in range(warm):
        once(i)
    return statistics.median([once(i) for i in range(runs)]) if runs > 1 else first, runs


def time_interleaved(fns, runs=20, warm=3, row_cap_s=10.0, seed=0) -> list:
    """[(median ms, runs)] of each fn(i), wall clock, timed in rounds: each round calls every fn
    still short of its count once, in a fresh random order (fixed seed). No implementation
    always follows the same one (a call after another's large working set finds the caches
    flushed), and load from other jobs that comes and goes reaches them all alike."""
    def once(fn, i):
        t = time.perf_counter()
        fn(i)
        return (time.perf_counter() - t) * 1e3

    first = [once(fn, 0) for fn in fns]
    plans = [plan_runs(f / 1e3, runs, warm, row_cap_s) for f in first]
    for i in range(max((w for _, w in plans), default=0)):
        for fn, (_, w) in zip(fns, plans):
            if i < w:
                once(fn, i)
    times = [[] for _ in fns]
    order = np.random.default_rng(seed)
    for i in range(max((r for r, _ in plans), default=0)):
        for j in order.permutation(len(fns)):
            if i < plans[j][0]:
                times[j].append(once(fns[j], i))
    return [(statistics.median(t) if r > 1 else f, r) for t, f, (r, _) in zip(times, first, plans)]


# ---- PyTorch timers of the filters / stacks presets ---------------------------------------
def event_median(fn, n_inputs=1, runs=20, warmup=3, sleep_cycles=400_000) -> float:
    """Median GPU time in ms of fn(i) (i cycles over n_inputs prepared inputs), CUDA events
    through PyTorch; a sleep kernel queued before each call keeps host overhead out as long as
    the host enqueues fn's work within the sleep (raise sleep_cycles for calls with much Python
    work; 0: no sleep, the call's Python inside the interval)."""
    import torch

    for i in range(warmup):
        fn(i % n_inputs)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        if sleep_cycles:
            torch.cuda._sleep(sleep_cycles)
        starts[i].record()
        fn(i % n_inputs)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def event_median_sync(fn, runs=20, warmup=3) -> float:
    """Median GPU time in ms of fn() with a synchronization after each run (no sleep kernel:
    the call's Python is inside, as a user's loop sees it)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)


def wall_median(fn, runs=5, warmup=0, cuda_sync=True) -> float:
    """Wall-clock median (ms) of fn() after `warmup` calls, the device synchronized around each
    timed call when cuda_sync (and PyTorch sees a device)."""
    sync = None
    if cuda_sync:
        try:
            import torch

            if torch.cuda.is_available():
                sync = torch.cuda.synchronize
        except ImportError:
            pass
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        if sync:
            sync()
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def host_median(fn, runs) -> float:
    """Median host wall time (ms) of fn(), no synchronization (a front end's Python alone, or a
    CPU library's call)."""
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)
