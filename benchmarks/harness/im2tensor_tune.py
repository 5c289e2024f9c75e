"""Sweep the P_block width Wc and depth dB (plan options im2tensor.wc / .db) for one variant
and precision on 4096x4096, printing the median ms per (k, Wc, dB). Used to pick the defaults
in csrc/cuda/methods/im2tensor/im2tensor.cuh.
Usage: python benchmarks/harness/im2tensor_tune.py [variant] [precision] [k,k,...]
       python benchmarks/harness/im2tensor_tune.py --mma [variant] [precision] [k,k,...]
--mma: the mma.sync path: dB x 128-column passes per CTA (im2tensor.db / im2tensor.passes)."""

import itertools
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from im2tensor import Im2TensorRun, kernel_of, load_image, median_ms  # noqa: E402


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
