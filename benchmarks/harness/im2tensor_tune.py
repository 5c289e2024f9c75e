"""Sweep the P_block width Wc and depth dB (plan options im2tensor.wc / .db) for one variant
and precision on 4096x4096, printing the median ms per (k, Wc, dB). Used to pick the defaults
in csrc/cuda/methods/im2tensor/im2tensor.cuh.
Usage: python benchmarks/harness/im2tensor_tune.py [variant] [precision] [k,k,...]
       python benchmarks/harness/im2tensor_tune.py --mma [variant] [precision] [k,k,...]
--mma: the mma.sync path: dB x 128-column passes per CTA (im2tensor.db / im2tensor.passes)."""

import itertools
import sys

import numpy as np
import torch

import tensorconv as tc
from tensorconv.bench._sweep import random_kernel, test_image
from tensorconv.bench._timing import event_median

_TORCH = {"float16": torch.float16, "float32": torch.float32, "float64": torch.float64}


def load_image(n: int):
    """The bench's n x n image (USC-SIPI 4.1.01 resized, else a seeded random one) on the GPU,
    float64, and its description."""
    name, img = test_image(n)
    return torch.from_numpy(np.ascontiguousarray(img)).cuda(), name


kernel_of = random_kernel  # the bench's random kernel of side k (seed 1000 + k)


class Im2TensorRun:
    """A valid plan with the given options and a device image in its storage; calling it runs
    the plan's call on that image."""

    def __init__(self, method, precision, image64: torch.Tensor, kernel: np.ndarray,
                 options=None):
        self.p = tc.plan(kernel, tuple(image64.shape), mode="valid", method=method,
                         precision=precision, device="cuda", options=options)
        self.x = image64.to(_TORCH[self.p.storage]).contiguous()

    def __call__(self, _i=0):
        return self.p(self.x)


def median_ms(run) -> float:
    return event_median(run)


def sweep_mma(variant, prec, ks):
    img, _ = load_image(4096)
    for k in ks:
        kernel = kernel_of(k)
        best = None
        for nh, db in itertools.product((1, 2, 4), (16, 32, 48, 64)):
            try:
                run = Im2TensorRun(variant, prec, img, kernel,
                                   {"im2tensor.passes": nh, "im2tensor.db": db})
            except RuntimeError as e:  # staged rows beyond the shared memory of an SM
                print(f"tune {variant} {prec} k={k} nh={nh} dB={db} skipped: {e}", flush=True)
                continue
            ms = median_ms(run)
            print(f"tune {variant} {prec} k={k} nh={nh} dB={db} {ms:.4f} ms", flush=True)
            best = min(best or (ms, nh, db), (ms, nh, db))
            del run
        print(f"best {variant} {prec} k={k}: {best[0]:.4f} ms at nh={best[1]} dB={best[2]}")
    torch.cuda.synchronize()


def main(argv):
    if len(argv) > 1 and argv[1] == "--mma":
        a = argv[2:]
        sweep_mma(a[0] if a else "im2tensor_fused", a[1] if len(a) > 1 else "fp16fp32",
                  [int(k) for k in (a[2] if len(a) > 2 else "15,25,35,55").split(",")])
        return
    variant = argv[1] if len(argv) > 1 else "im2tensor_fused"
    prec = argv[2] if len(argv) > 2 else "fp16fp32"
    ks = [int(k) for k in (argv[3] if len(argv) > 3 else "15,25,35,55").split(",")]
    img, _ = load_image(4096)
    for k in ks:
        kernel = kernel_of(k)
        best = None
        for wc, db in itertools.product((64, 128, 256), (16, 32, 64, 128)):
            run = Im2TensorRun(variant, prec, img, kernel, {"im2tensor.wc": wc, "im2tensor.db": db})
            ms = median_ms(run)
            print(f"tune {variant} {prec} k={k} Wc={wc} dB={db} {ms:.4f} ms", flush=True)
            best = min(best or (ms, wc, db), (ms, wc, db))
            del run
        print(f"best {variant} {prec} k={k}: {best[0]:.4f} ms at Wc={best[1]} dB={best[2]}")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv)
