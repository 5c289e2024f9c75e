"""torch.fft peer of benchmarks/harness/fft_hybrid.cu, timed on the same device.

The same correlation as the package's bench peer `torch_fft` (python/tensorconv/bench/_peers.py):
irfft2(rfft2(x) * K)[:h-k+1, :w-k+1] with K = conj(rfft2(k, s=(h, w))) precomputed, median of 20
CUDA-event timings after 3 warm-ups. Standalone (no package import: the device run builds none).
Usage: python3 benchmarks/harness/fft_torch_peer.py [sizes] [ks], e.g. 4096,16384 3,15,55
"""
import sys

import torch


def median_ms(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t = []
    for r in range(23):
        s.record()
        fn()
        e.record()
        e.synchronize()
        if r >= 3:
            t.append(s.elapsed_time(e))
    t.sort()
    return 0.5 * (t[9] + t[10])


def main():
    sizes = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "4096,16384").split(",")]
    ks = [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "3,15,55").split(",")]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    g = torch.Generator(device="cuda").manual_seed(0)
    for n in sizes:
        for dt, name in ((torch.float32, "fp32"), (torch.float64, "fp64")):
            x = torch.rand((n, n), generator=g, device="cuda", dtype=dt)
            worst = 0.0
            for k in ks:
                K = torch.conj(torch.fft.rfft2(torch.rand((k, k), generator=g, device="cuda", dtype=dt), s=(n, n)))
                ms = median_ms(lambda: torch.fft.irfft2(torch.fft.rfft2(x) * K, s=(n, n))[:n - k + 1, :n - k + 1])
                worst = max(worst, ms)
                print(f"torch.fft {n}^2 {name} k={k}: {ms:.3f} ms")
                del K
            print(f"torch.fft {n}^2 {name}: worst {worst:.3f} ms -> goal (1.3x) <= {worst / 1.3:.3f} ms")
            del x
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
