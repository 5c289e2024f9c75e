"""Plot benchmarks/results/gpu_core_<device>.json: kernel time vs kernel size, one panel per
precision, 4096^2 (solid) and 1024^2 (dashed).   python benchmarks/plot_gpu_core.py JSON [PNG]"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(argv):
    src = Path(argv[0])
    dst = Path(argv[1]) if len(argv) > 1 else src.with_suffix(".png")
    meta = json.loads(src.read_text())
    precs = ["fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), sharex=True)
    series = {}
    for r in meta["rows"]:
        if r["timing"] != "kernel" or "band_mb" in r:
            continue
        prec = r["precision"]
        impl = r["impl"] + (" (gaussian)" if r.get("kernel_kind") == "gaussian" else "") + (
            f" ({r['variant']})" if "variant" in r else "")
        series.setdefault((prec, impl, r["image"][0]), []).append((r["kernel"][0], r["median_ms"]))
    colors = {}
    for ax, prec in zip(axes.flat, precs):
        for (p, impl, size), pts in sorted(series.items()):
            if p != prec:
                continue
            pts.sort()
            c = colors.setdefault(impl, f"C{len(colors) % 10}")
            ax.plot([k for k, _ in pts], [t for _, t in pts], "-" if size == 4096 else "--",
                    marker="o", ms=3, color=c, label=impl if size == 4096 else None)
        ax.set_title(prec)
        ax.set_yscale("log")
        ax.set_xlabel("kernel size k (k x k)")
        ax.set_ylabel("median ms (CUDA events)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"GPU core, {meta['device']}, {meta['created']}: 4096² solid, 1024² dashed")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(dst)


if __name__ == "__main__":
    main(sys.argv[1:])
