"""Timing helpers of the family scripts that remain (filters.py, stacks.py): CUDA events after a
sleep kernel, median of 20, a float64 torch.fft reference and its MAPE (paper eq. 20), a
USC-SIPI image resized on the device. They go with those scripts once they become presets.

The GPU core benchmark that lived here (naive, naive_shmem, separable, fft against cuDNN and
torch.fft) is now `tensorconv-bench --preset gpu-core` (python/tensorconv/bench/_presets.py);
its plan-option A/B rows (naive_shmem.coefficients, separable.fused / .tensor_cores) and the
separable band sweep were tuning runs: time `tc.plan(..., options={...})` rows the same way
(`tensorconv.plan_options()` lists them)."""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

TORCH_STORAGE = {"fp16": torch.float16, "fp16fp32": torch.float16, "bf16": torch.float32,
                 "tf32": torch.float32, "fp32": torch.float32, "fp64": torch.float64}
STORAGE = {"fp16": "float16", "fp16fp32": "float16", "bf16": "float32", "tf32": "float32",
           "fp32": "float32", "fp64": "float64"}
L2_BYTES = 50 << 20


def gaussian(k):
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-0.5 * (x / max(k / 6, 0.5)) ** 2)
    return np.outer(g, g) / g.sum() ** 2


def random_kernel(k):
    return np.random.default_rng(1000 + k).random((k, k))


def event_median(fn, n_inputs, runs=20, warmup=3, sleep_cycles=400_000):
    """Median GPU time in ms of fn(i); a sleep kernel queued first keeps host overhead out
    (as long as the host enqueues fn's work within the sleep: raise sleep_cycles for calls
    with much Python work)."""
    for i in range(warmup):
        fn(i % n_inputs)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        torch.cuda._sleep(sleep_cycles)
        starts[i].record()
        fn(i % n_inputs)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def time_plan(p, img64, prec):
    """Kernel time (ms, median of 20) of plan p (valid mode, square image img64 on the device)
    and its output; inputs rotated when they fit in L2."""
    size = img64.shape[0]
    oh, ow = p.out_shape
    dt = TORCH_STORAGE[prec]
    nbytes = size * size * torch.finfo(dt).bits // 8
    n_in = max(1, min(8, -(-2 * L2_BYTES // max(nbytes, 1))))
    xs = [img64.to(dt).contiguous() for _ in range(n_in)]
    out = torch.empty((oh, ow), dtype=dt, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    run = p._plan.run

    def fn(i):
        run(xs[i].data_ptr(), size, size, size, out.data_ptr(), oh, ow, ow, STORAGE[prec], True,
            stream)

    return event_median(fn, n_in), out


def wall_median(fn, runs=5):
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def fft_reference(img64, kernel64):
    """float64 valid correlation through torch.fft (the MAPE reference)."""
    h, w = img64.shape
    kh, kw = kernel64.shape
    K = torch.conj(torch.fft.rfft2(kernel64, s=(h, w)))
    full = torch.fft.irfft2(torch.fft.rfft2(img64) * K, s=(h, w))
    return full[: h - kh + 1, : w - kw + 1]


def mape_gpu(out, ref):
    """MAPE in percent (paper eq. 20); None when the output is not finite (strict JSON)."""
    p = out.double()
    if not torch.isfinite(p).all():
        return None
    nz = ref != 0
    rel = torch.zeros_like(ref)
    rel[nz] = (p[nz] - ref[nz]).abs() / ref[nz].abs()
    return float(100 * rel.flatten().median())


def load_image(size):
    from tensorconv.datasets import load_usc_sipi

    name, img = next(iter(load_usc_sipi()))
    t = torch.tensor(img, dtype=torch.float64, device="cuda")[None, None]
    t = F.interpolate(t, size=(size, size), mode="bilinear", align_corners=False)[0, 0]
    return name, t.clamp(0, 1).contiguous()
