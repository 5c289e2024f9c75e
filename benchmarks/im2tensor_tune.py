"""Sweep the P_block width Wc and depth dB (TENSORCONV_I2T_WC / _DB overrides) for one variant
and precision on 4096x4096, printing the median ms per (k, Wc, dB). Used to pick the defaults
in csrc/cuda/im2tensor/im2tensor.cuh.
Usage: python benchmarks/im2tensor_tune.py [variant] [precision] [k,k,...]
       python benchmarks/im2tensor_tune.py --mma [variant] [precision] [k,k,...]
--mma: the mma.sync path (Wc fixed at 128): dB x window-as-C-operand on/off
(TENSORCONV_I2T_CHAIN) x two rows per B fragment where possible / one (TENSORCONV_I2T_RW)."""

import itertools
import os
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
        for chain, db, rw in itertools.product(("1", "0"), (16, 32, 64), ("2", "1")):
            os.environ["TENSORCONV_I2T_CHAIN"], os.environ["TENSORCONV_I2T_DB"] = chain, str(db)
            os.environ["TENSORCONV_I2T_RW"] = rw
            run = Im2TensorRun(variant, prec, img, kernel)
            ms = median_ms(run)
            print(f"tune {variant} {prec} k={k} chain={chain} dB={db} rw={rw} {ms:.4f} ms",
                  flush=True)
            best = min(best or (ms, chain, db, rw), (ms, chain, db, rw))
            del run
        print(f"best {variant} {prec} k={k}: {best[0]:.4f} ms at chain={best[1]} dB={best[2]}"
              f" rw={best[3]}")
    for v in ("TENSORCONV_I2T_CHAIN", "TENSORCONV_I2T_DB", "TENSORCONV_I2T_RW"):
        os.environ.pop(v)
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
            os.environ["TENSORCONV_I2T_WC"], os.environ["TENSORCONV_I2T_DB"] = str(wc), str(db)
            run = Im2TensorRun(variant, prec, img, kernel)
            ms = median_ms(run)
            print(f"tune {variant} {prec} k={k} Wc={wc} dB={db} {ms:.4f} ms", flush=True)
            best = min(best or (ms, wc, db), (ms, wc, db))
            del run
        print(f"best {variant} {prec} k={k}: {best[0]:.4f} ms at Wc={best[1]} dB={best[2]}")
    os.environ.pop("TENSORCONV_I2T_WC")
    os.environ.pop("TENSORCONV_I2T_DB")
    torch.cuda.synchronize()


if __name__ == "__main__":
    main(sys.argv)
