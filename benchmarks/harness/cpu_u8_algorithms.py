"""A tuning program, not a paper evaluation (that is `tensorconv-bench --preset kelefouras`): every
simd_u8 algorithm forced on the preset's three kernel cases (bench._presets.u8_kernels) at one
image size, one thread (least disturbed by other jobs on shared cores), median of 20 interleaved
runs: the measurements behind filter2d_u8's automatic choice. Writes
cpu_u8_algorithms_<host>.json and prints a Markdown table. With
TENSORCONV_FORCE_AVX2=1 in the environment the AVX2 tier runs where AVX-512 is present (the
former cpu_u8.py's simd_u8_avx2 rows).

    python benchmarks/harness/cpu_u8_algorithms.py [--size 1920x1080] [--threads 1]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import datetime
import json
import socket
import time
from pathlib import Path

import numpy as np

import tensorconv as tc
from tensorconv.bench._presets import u8_kernels as kernels

RESULTS = Path(__file__).resolve().parent.parent / "results"

ALGOS = ("alg1", "alg2", "alg3", "sep", "pairs", "wide", "portable")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    image = np.random.default_rng(0).integers(0, 256, (h, w), dtype=np.uint8)
    rows = []
    table = ["| k | case | IR bits | auto | " + " | ".join(ALGOS) + " |",
             "|---|---|---|---|" + "---|" * len(ALGOS)]
    for k in (3, 5, 7, 9, 15):
        cases = kernels(k) if k < 15 else {"filter2d32": kernels(k)["filter2d32"]}
        for case, (kern, d) in cases.items():
            fns = {}
            for algo in ALGOS:
                try:
                    tc.filter2d_u8_info(kern, d, algorithm=algo)
                except ValueError:
                    continue
                fns[algo] = (lambda algo=algo: tc.filter2d_u8(image, kern, d, algorithm=algo,
                                                             threads=args.threads))
            times = {a: [] for a in fns}
            ref = None
            for a, f in fns.items():  # warm-up and agreement
                out = f()
                ref = out if ref is None else ref
                assert np.array_equal(out, ref), (k, case, a)
            for _ in range(args.runs if k < 15 else 5):
                for a, f in fns.items():
                    t = time.perf_counter()
                    f()
                    times[a].append(time.perf_counter() - t)
            med = {a: float(np.median(v)) * 1e3 for a, v in times.items()}
            auto = tc.filter2d_u8_info(kern, d)
            for a, ms in med.items():
                rows.append({"impl": "simd_u8", "algorithm": a, "case": case, "precision": "u8",
                             "image": [h, w], "kernel": [k, k], "timing": "end_to_end",
                             "median_ms": ms, "runs": len(times[a]), "threads": args.threads,
                             "extra_bytes": 0, "mape_pct": None, "auto": auto["algorithm"]})
            best = min(med.values())
            cells = [f"**{med[a]:.2f}**" if a in med and med[a] == best else
                     (f"{med[a]:.2f}" if a in med else "-") for a in ALGOS]
            table.append(f"| {k} | {case} | {auto['ir_bits']} | {auto['algorithm']} | "
                         + " | ".join(cells) + " |")
            print(table[-1], flush=True)
    doc = {"device": socket.gethostname(), "created":
           datetime.datetime.now(datetime.timezone.utc).isoformat(), "tensorconv": tc.__version__,
           "versions": {"numpy": np.__version__, "threads": args.threads}, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"cpu_u8_algorithms_{socket.gethostname()}.json"
    out.write_text(json.dumps(doc, indent=1))
    print("\n".join(table))
    print("wrote", out)


if __name__ == "__main__":
    main()
