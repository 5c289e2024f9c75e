"""PNG plots of a benchmarks/filters.py JSON: Kondo Fig. 5 (bilateral layouts vs CUDA cores),
filters.gaussian and filters.bilateral against their peers.

    python benchmarks/plot_filters.py benchmarks/results/filters_<device>.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def series(rows, bench, impl, precision=None, size=None, variant=None):
    pts = [(r["kernel"][0] // 2, r["median_ms"]) for r in rows
           if r.get("bench") == bench and r["impl"] == impl and r.get("median_ms") is not None
           and (precision is None or r["precision"] == precision)
           and (size is None or r["image"][0] == size) and r.get("variant") == variant]
    return sorted(pts)


def plot(ax, pts, label, **kw):
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=label, **kw)


def gaussian_panel(ax, rows, dev):
    plot(ax, series(rows, "gaussian", "filters.gaussian"), "filters.gaussian (auto: fused)")
    plot(ax, series(rows, "gaussian", "filters.gaussian", variant="host time hidden"),
         "filters.gaussian, host time hidden", ls=":")
    plot(ax, series(rows, "gaussian", "filters.gaussian",
                    variant="separable strips, host time hidden"),
         "method='separable' (strips), host time hidden", ls="-.")
    plot(ax, series(rows, "gaussian", "separable", variant="plan on a pre-padded image"),
         "separable plan, pre-padded input", ls="--")
    for impl, lab in (("peer:cupyx_gaussian_filter", "cupyx gaussian_filter"),
                      ("peer:cudnn_separable", "cuDNN 2 x 1-D conv2d (+ pad)"),
                      ("peer:kornia_gaussian_blur2d", "kornia gaussian_blur2d")):
        plot(ax, series(rows, "gaussian", impl), lab)
    ax.set(title=f"Gaussian 4096^2 fp32, sigma = r/2 ({dev})", xlabel="radius r", ylabel="ms",
           yscale="log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def gaussian_table(rows):
    """The Gaussian rows as a markdown table (ms; ratios = peer / filters.gaussian; GB/s = the
    image read and written once in fp32 over filters.gaussian's host-hidden time)."""
    def at(impl, variant=None, timing=None, key="median_ms"):
        return {r["kernel"][0] // 2: r.get(key) for r in rows
                if r.get("bench") == "gaussian" and r["impl"] == impl
                and r.get("variant") == variant and (timing is None or r.get("timing") == timing)}
    ours, hidden = at("filters.gaussian"), at("filters.gaussian", "host time hidden")
    host = at("filters.gaussian", "host time per call")
    mape = at("filters.gaussian", key="mape_pct")
    strips = at("filters.gaussian", "separable strips, host time hidden")
    cupyx, cudnn = at("peer:cupyx_gaussian_filter"), at("peer:cudnn_separable")
    kornia = at("peer:kornia_gaussian_blur2d")
    size = next(r["image"][0] for r in rows if r.get("bench") == "gaussian")

    def f(v, d=3):
        return "" if v is None else f"{v:.{d}f}"

    out = ["| r | filters.gaussian | host time hidden | host time per call | GB/s | MAPE % | "
           "x cupyx | x cuDNN | method='separable' (strips) | cupyx | cuDNN | kornia |",
           "|" + "---|" * 12]
    for r in sorted(ours):
        o, hd = ours[r], hidden.get(r)
        gbs = 2 * size * size * 4 / (hd * 1e6) if hd else None
        rc = cupyx.get(r) / o if o and cupyx.get(r) else None
        rd = cudnn.get(r) / o if o and cudnn.get(r) else None
        out.append(f"| {r} | {f(o, 4)} | {f(hd, 4)} | {f(host.get(r), 4)} | {f(gbs, 0)} | "
                   f"{'' if mape.get(r) is None else f'{mape[r]:.1e}'} | {f(rc, 1)} | {f(rd, 1)} | "
                   f"{f(strips.get(r), 4)} | {f(cupyx.get(r))} | {f(cudnn.get(r))} | "
                   f"{f(kornia.get(r))} |")
    return "\n".join(out)


def main(path):
    m = json.loads(Path(path).read_text())
    rows, dev = m["rows"], m["device"]
    stem = Path(path).with_suffix("")
    if not any(r.get("bench") in ("fig5", "bilateral") for r in rows):  # a Gaussian-only run
        fig, ax = plt.subplots(figsize=(7, 4.5))
        gaussian_panel(ax, rows, dev)
        fig.tight_layout()
        fig.savefig(f"{stem}.png", dpi=110)
        print(f"{stem}.png")
        print(gaussian_table(rows))
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, size in zip(axes, (4096, 128)):
        plot(ax, series(rows, "fig5", "bilateral_cuda", "fp32", size), "CUDA cores fp32")
        plot(ax, series(rows, "fig5", "bilateral_tc_32x8x16", None, size), "TC KI 32x8x16")
        plot(ax, series(rows, "fig5", "bilateral_tc_16x16x16", None, size), "TC KI 16x16x16")
        ax.set(title=f"bilateral {size}x{size} ({dev})", xlabel="radius r", ylabel="ms")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(f"{stem}_fig5.png", dpi=110)

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    gaussian_panel(axes[0], rows, dev)
    ax = axes[1]
    plot(ax, series(rows, "bilateral", "filters.bilateral"), "filters.bilateral (front end)")
    plot(ax, series(rows, "fig5", "bilateral_cuda", "fp32", 4096), "bilateral_cuda plan",
         ls="--")
    plot(ax, series(rows, "bilateral", "peer:kornia_bilateral_blur"),
         "kornia bilateral_blur (OOM from r = 9)")
    cv = series(rows, "bilateral", "peer:cv2_bilateralFilter")
    plot(ax, cv, "cv2.bilateralFilter (host CPU)")
    ax.set(title=f"bilateral 4096^2 fp32 ({dev})", xlabel="radius r", ylabel="ms",
           yscale="log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{stem}_peers.png", dpi=110)
    print(f"{stem}_fig5.png", f"{stem}_peers.png")


if __name__ == "__main__":
    main(sys.argv[1])
