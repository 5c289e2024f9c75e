"""Markdown tables for benchmarks/IM2TENSOR_NOTES.md from a results JSON: Table 3 per precision
with the floor of each point, Fig. 9 summary and Table 4.
Floors: useful FLOPs 2·hR·wR·k² over the precision's tensor-core rate measured on the lent H100
(fp16 769, bf16 800, tf32 411, fp32-by-3xTF32 411/3, fp64 60 TFLOP/s; fp16 also shown, as the
issue asks), and the bytes that must move (image in + result out) over 2.98 TB/s.
Usage: python benchmarks/im2tensor_tables.py benchmarks/results/im2tensor_<device>.json"""

import json
import sys

RATE = {"fp16": 769e12, "fp16fp32": 769e12, "bf16": 800e12, "tf32": 411e12, "fp32": 137e12,
        "fp64": 60e12}
ES = {"fp16": 2, "fp16fp32": 2, "bf16": 4, "tf32": 4, "fp32": 4, "fp64": 8}
BW = 2.98e12


def floors(n, k, prec):
    m = n - k + 1
    flops = 2.0 * m * m * k * k
    byts = ES[prec] * (n * n + m * m)
    return flops / 769e12 * 1e3, flops / RATE[prec] * 1e3, byts / BW * 1e3


def main(path):
    d = json.load(open(path))
    rows = d["rows"]
    print(f"Device: {d['device']}; created {d['created']}; versions {d['versions']}\n")
    t3 = [r for r in rows if r.get("part") == "table3" and r.get("median_ms") is not None]
    ks = sorted({r["kernel"][0] for r in t3})
    for prec in ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"):
        pr = [r for r in t3 if r["precision"] == prec]
        if not pr:
            continue
        print(f"#### {prec} (4096², median ms of 20; MAPE % vs float64 in brackets)\n")
        print("| impl | " + " | ".join(f"k={k}" for k in ks) + " |")
        print("|---|" + "---|" * len(ks))
        fl = [floors(4096, k, prec) for k in ks]
        print("| floor: max(FLOPs/fp16 rate, bytes/BW) | " +
              " | ".join(f"{max(a, c):.3f}" for a, b, c in fl) + " |")
        if prec not in ("fp16", "fp16fp32"):
            print(f"| floor at the {prec} tensor rate | " +
                  " | ".join(f"{max(b, c):.3f}" for a, b, c in fl) + " |")
        for impl in sorted({r["impl"] for r in pr}, key=lambda s: (s.startswith("peer"), s)):
            cells = []
            for k in ks:
                r = next((r for r in pr if r["impl"] == impl and r["kernel"][0] == k), None)
                if r is None:
                    cells.append("—")
                else:
                    m = r.get("mape_pct")
                    cells.append(f"{r['median_ms']:.3f}" + (f" [{m:.2g}]" if m is not None else ""))
            print(f"| {impl} | " + " | ".join(cells) + " |")
        print()
    t4 = [r for r in rows if r.get("part") == "table4"]
    if t4:
        print("#### Table 4: extra device memory, k = 15, 4096² (MB)\n")
        print("| impl | precision | extra MB |\n|---|---|---|")
        for r in t4:
            print(f"| {r['impl']} | {r['precision']} | {r['extra_bytes'] / 1e6:.1f} |")
        print()
    f9 = [r for r in rows if r.get("part") == "fig9" and r.get("median_ms") is not None]
    if f9:
        print("#### Fig. 9 (1024², fp16): median ms at selected k\n")
        sel = [1, 3, 7, 15, 25, 31, 33, 45, 55, 60]
        print("| impl | " + " | ".join(f"k={k}" for k in sel) + " |")
        print("|---|" + "---|" * len(sel))
        for impl in sorted({r["impl"] for r in f9}, key=lambda s: (s.startswith("peer"), s)):
            cells = []
            for k in sel:
                r = next((r for r in f9 if r["impl"] == impl and r["kernel"][0] == k), None)
                cells.append(f"{r['median_ms']:.3f}" if r else "—")
            print(f"| {impl} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
