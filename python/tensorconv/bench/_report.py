"""Results files from rows: the JSON (design.md's format, with device, clocks and library
versions), Markdown tables shaped like the im2tensor paper's Tables 3-4 (time [MAPE] per method
and kernel size; extra device memory), an auto-vs-best table, and PNG figures like its Figs.
9-10 (time against kernel size, one panel per precision) or CPS against image size (Kelefouras)."""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path

import numpy as np

import tensorconv as tc
from tensorconv import _bounds

ORDER = (*tc.PRECISIONS, "uint8")


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "unknown"


def environment(device_name: str) -> dict:
    """Device, clocks and library versions for every results file."""
    import numpy
    import scipy

    versions = {"tensorconv": tc.__version__, "numpy": numpy.__version__,
                "scipy": scipy.__version__, "python": platform.python_version()}
    for mod, attr in (("torch", "__version__"), ("cupy", "__version__"), ("cv2", "__version__"),
                      ("matplotlib", "__version__")):
        try:
            versions[mod] = getattr(__import__(mod), attr)
        except Exception:
            pass
    try:
        import torch

        versions["cuda"] = torch.version.cuda
        versions["cudnn"] = str(torch.backends.cudnn.version())
    except Exception:
        pass
    env = {"device": device_name, "versions": versions, "host": platform.node(),
           "cpu": cpu_model(), "cpu_count": os.cpu_count()}
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,"
                              "clocks.max.sm,clocks.mem,clocks.max.mem,power.limit",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
        if smi.returncode == 0:
            env["clocks"] = ("name, driver, sm MHz, max sm MHz, mem MHz, max mem MHz, power "
                             "limit: " + smi.stdout.strip())
    except (OSError, subprocess.SubprocessError):
        pass
    return env


def cpu_model() -> str:
    """The CPU's model name (for results files)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def document(env: dict, rows: list, **extra) -> dict:
    doc = {"device": env["device"],
           "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
           "tensorconv": tc.__version__, **{k: v for k, v in env.items() if k != "device"},
           **extra, "rows": rows}
    return doc


def _porder(p):
    return ORDER.index(p) if p in ORDER else len(ORDER)


def _iorder(impl):
    return (impl.startswith("peer:"), impl == "auto", impl)


def _eligible(r) -> bool:
    """A registry row 'auto' may pick: deterministic, measured within the precision's bound."""
    if r["impl"].startswith("peer:") or r["impl"] == "auto" or r.get("median_ms") is None:
        return False
    if r["impl"] in _bounds.NONDETERMINISTIC or r["precision"] not in _bounds.MAPE_PCT:
        return False
    m = r.get("mape_pct")
    return m is not None and m <= _bounds.MAPE_PCT[r["precision"]]


def _groups(rows, timing):
    g = {}
    for r in rows:
        if r.get("timing") == timing and r.get("median_ms") is not None:
            key = (r.get("part", ""), r.get("kernel_kind", "random"), tuple(r["image"]),
                   r["precision"])
            g.setdefault(key, []).append(r)
    return g


def _header(doc: dict) -> list:
    out = [f"# {doc.get('title', 'tensorconv benchmark')}", "",
           f"Device: {doc['device']}; created {doc['created']}; tensorconv {doc['tensorconv']}",
           f"Versions: {json.dumps(doc.get('versions', {}))}"]
    if doc.get("clocks"):
        out.append(f"Clocks: {doc['clocks']}")
    out.append(f"CPU: {doc.get('cpu', '')} ({doc.get('cpu_count', '?')} threads)")
    for key in ("preset", "images", "seconds", "skipped_for_time", "notes", "errata",
                "fma_peak_gflops", "load_average_start", "load_average_end"):
        if key in doc:
            out.append(f"{key}: {doc[key]}")
    out.append("")
    return out


def _family_tables(rows) -> list:
    from ._filters import gaussian_table
    from . import _oneshot, _torch

    return (_fig5_table(rows) + gaussian_table(rows) + _oneshot.goals_table(rows)
            + _torch.goals_table(rows))


def _fig5_table(rows) -> list:
    """Kondo Fig. 5 (bilateral plans): ms per radius, one line per layout and size."""
    f5 = [r for r in rows if r.get("part") == "fig5" and r.get("median_ms") is not None]
    if not f5:
        return []
    rs = sorted({r["kernel"][0] // 2 for r in f5})
    out = ["### Kondo Fig. 5: bilateral plans (median ms against radius r)", "",
           "| impl | precision | image | " + " | ".join(f"r={r}" for r in rs) + " |",
           "|---|---|---|" + "---|" * len(rs)]
    for key in sorted({(r["image"][0], r["impl"], r["precision"]) for r in f5}, reverse=True):
        got = {r["kernel"][0] // 2: r["median_ms"] for r in f5
               if (r["image"][0], r["impl"], r["precision"]) == key}
        out.append(f"| {key[1]} | {key[2]} | {key[0]}² | "
                   + " | ".join(f"{got[r]:.4g}" if r in got else "—" for r in rs) + " |")
    return out + [""]


# rows of their own shape: a flat table
FAMILY_PRESETS = ("filters", "stacks", "dask", "oneshot", "torch")


def family_table(rows) -> list:
    """Every row of a family preset's run (filters, stacks, dask, oneshot, torch), one line
    each."""
    extra = ("gpus", "pinned_mb", "mape_pct", "max_rel_err", "images_per_s", "per_image_ms",
             "ratio_to_copy", "throughput_mpix_s", "ratio_to_one_call", "equal", "halos", "error",
             "input", "mode", "boundary", "first_ms", "method", "mape_grad_input_pct",
             "mape_grad_weight_pct", "batch", "channels")
    out = ["| part | impl | variant | precision | image | kernel | timing | median ms | runs | "
           "other |", "|" + "---|" * 10]
    for r in rows:
        ms = r.get("median_ms")
        other = "; ".join(f"{k}={r[k]:.3g}" if isinstance(r[k], float) else f"{k}={r[k]}"
                          for k in extra if r.get(k) is not None)
        img, ker = r.get("image"), r.get("kernel")
        out.append(f"| {r.get('part', '')} | {r['impl']} | "
                   f"{r.get('variant') or r.get('peer') or r.get('method') or ''} | "
                   f"{r.get('precision', '')} | {f'{img[0]}x{img[1]}' if img else ''} | "
                   f"{ker[0] if ker else ''} | {r.get('timing', '')} | "
                   f"{'' if ms is None else f'{ms:.4g}'} | {r.get('runs', '')} | {other} |")
    return out + [""]


def markdown(doc: dict) -> str:
    rows = doc["rows"]
    if doc.get("preset") in FAMILY_PRESETS:
        return "\n".join(_header(doc) + _family_tables(rows) + family_table(rows)) + "\n"
    out = _header(doc) + _fig5_table(rows)
    for timing in ("kernel", "call", "end_to_end"):
        groups = _groups(rows, timing)
        for (part, kind, image, prec), grp in sorted(groups.items(),
                                                     key=lambda kv: (kv[0][0], kv[0][1],
                                                                     kv[0][2], _porder(kv[0][3]))):
            if part in ("kelefouras", "small_call"):
                continue
            ks = sorted({r["kernel"][0] for r in grp})
            out += [f"### {part} · {timing} · {image[0]}x{image[1]} · {prec} · {kind} kernels "
                    "(median ms; MAPE % in brackets)", "",
                    "| impl | " + " | ".join(f"k={k}" for k in ks) + " |",
                    "|---|" + "---|" * len(ks)]
            for impl in sorted({r["impl"] for r in grp}, key=_iorder):
                cells = []
                for k in ks:
                    r = next((r for r in grp if r["impl"] == impl and r["kernel"][0] == k), None)
                    if r is None:
                        cells.append("—")
                        continue
                    m = r.get("mape_pct")
                    c = f"{r['median_ms']:.4g}" + (f" [{m:.2g}]" if m is not None else "")
                    if r.get("chose"):
                        c += f" →{r['chose']}"
                    cells.append(c)
                out.append(f"| {impl} | " + " | ".join(cells) + " |")
            out.append("")
    out += (memory_table(rows) + auto_table(rows) + peer_table(rows) + small_call_table(rows)
            + replay_table(rows) + u8_table(rows) + u8_speedup_table(rows)
            + workspace_table(rows))
    return "\n".join(out) + "\n"


def memory_table(rows) -> list:
    """Table 4's shape: extra device memory per method at the kernel size nearest 15."""
    mem = [r for r in rows if r.get("timing") == "kernel" and "extra_bytes" in r]
    if not mem:
        return []
    out = []
    for image in sorted({tuple(r["image"]) for r in mem}):
        sel = [r for r in mem if tuple(r["image"]) == image]
        k = min({r["kernel"][0] for r in sel}, key=lambda k: abs(k - 15))
        sel = [r for r in sel if r["kernel"][0] == k and r.get("kernel_kind", "random") == "random"]
        if not sel:
            continue
        out += [f"### Extra memory, {image[0]}x{image[1]}, k = {k} (MB; paper Table 4)", "",
                "| impl | precision | workspace (plan) | measured |", "|---|---|---|---|"]
        seen = set()
        for r in sorted(sel, key=lambda r: (_iorder(r["impl"]), _porder(r["precision"]))):
            if (r["impl"], r["precision"]) in seen:
                continue
            seen.add((r["impl"], r["precision"]))
            meas = r.get("extra_bytes_measured")
            out.append(f"| {r['impl']} | {r['precision']} | {r['extra_bytes'] / 1e6:.2f} | "
                       + (f"{meas / 1e6:.2f}" if meas is not None else "—") + " |")
        out.append("")
    return out


def auto_rows(rows) -> list:
    """Per point with an 'auto' row: auto's time, the fastest eligible method (deterministic,
    measured within the precision's bound) and the fastest of all, from the same run."""
    res = []
    for a in rows:
        if a["impl"] != "auto" or a.get("median_ms") is None or a.get("part") == "small_call":
            continue
        same = [r for r in rows if r.get("timing") == a["timing"] and r["image"] == a["image"]
                and r["kernel"] == a["kernel"] and r["precision"] == a["precision"]
                and r.get("kernel_kind") == a.get("kernel_kind") and r.get("part") == a.get("part")
                and not r["impl"].startswith("peer:") and r["impl"] != "auto"
                and r.get("median_ms") is not None]
        elig = [r for r in same if _eligible(r)]
        best = min(elig, key=lambda r: r["median_ms"]) if elig else None
        fastest = min(same, key=lambda r: r["median_ms"]) if same else None
        res.append({"part": a.get("part"), "image": a["image"], "kernel": a["kernel"],
                    "precision": a["precision"], "kernel_kind": a.get("kernel_kind"),
                    "auto_ms": a["median_ms"], "chose": a.get("chose"),
                    "best": best and best["impl"], "best_ms": best and best["median_ms"],
                    "ratio": best and a["median_ms"] / best["median_ms"],
                    "fastest": fastest and fastest["impl"],
                    "fastest_ms": fastest and fastest["median_ms"]})
    return res


def auto_table(rows) -> list:
    res = auto_rows(rows)
    if not res:
        return []
    out = ["### auto against the best method of the same run", "",
           "best: the fastest deterministic method measured within the precision's MAPE bound "
           "(what auto may pick); fastest: of all registry methods.", "",
           "| image | precision | k | kernel | auto ms (chose) | best | best ms | auto/best | "
           "fastest (ms) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(res, key=lambda r: (r["image"], _porder(r["precision"]), r["kernel"])):
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "—"
        out.append(f"| {r['image'][0]} | {r['precision']} | {r['kernel'][0]} | "
                   f"{r['kernel_kind']} | {r['auto_ms']:.4g} ({r['chose']}) | {r['best']} | "
                   f"{r['best_ms'] if r['best_ms'] is None else format(r['best_ms'], '.4g')} | "
                   f"{ratio} | " + (f"{r['fastest']} ({r['fastest_ms']:.4g})" if r["fastest"]
                                    else "—") + " |")
    ok = [r for r in res if r["ratio"]]
    within = sum(r["ratio"] <= 1.10 for r in ok)
    out += ["", f"auto within 10 % of the best at {within} of {len(ok)} points.", ""]
    return out


def replay_auto(rows, image=(4096, 4096)) -> list:
    """What 'auto' picks now (the model in use: tuned, else shipped) at each point of a run
    with random kernels on `image`, and that method's time in the run against the best
    eligible one: the decision alone, without the call's own overhead."""
    from tensorconv import _autotune

    out = []
    pts = {}
    for r in rows:
        if (r.get("timing") == "kernel" and list(r["image"]) == list(image)
                and r.get("kernel_kind", "random") == "random" and r.get("median_ms")
                and not r["impl"].startswith("peer:") and r["impl"] != "auto"):
            pts.setdefault((r["precision"], r["kernel"][0]), []).append(r)
    for (prec, k), grp in sorted(pts.items(), key=lambda kv: (_porder(kv[0][0]), kv[0][1])):
        if prec not in _bounds.MAPE_PCT:
            continue
        order, _, _, where = _autotune.rank(prec, (k, k), (image[0] + k - 1, image[1] + k - 1),
                                            [r["impl"] for r in grp])
        elig = [r for r in grp if _eligible(r)]
        if not order or not elig:
            continue
        got = next(r for r in grp if r["impl"] == order[0])
        best = min(elig, key=lambda r: r["median_ms"])
        out.append({"precision": prec, "k": k, "pick": order[0], "pick_ms": got["median_ms"],
                    "best": best["impl"], "best_ms": best["median_ms"],
                    "ratio": got["median_ms"] / best["median_ms"], "model": where})
    return out


def replay_table(rows) -> list:
    res = replay_auto(rows)
    if not res:
        return []
    out = ["### auto's decision replayed on this run's times (the model in use now)", "",
           f"Model: {res[0]['model'].split(';')[0]}", "",
           "| precision | k | auto picks | its ms | best | best ms | ratio |",
           "|---|---|---|---|---|---|---|"]
    for r in res:
        out.append(f"| {r['precision']} | {r['k']} | {r['pick']} | {r['pick_ms']:.4g} | "
                   f"{r['best']} | {r['best_ms']:.4g} | {r['ratio']:.2f} |")
    within = sum(r["ratio"] <= 1.10 for r in res)
    out += ["", f"decision within 10 % of the best at {within} of {len(res)} points.", ""]
    return out


def peer_table(rows) -> list:
    """CPU parts: auto's speed-up over the fastest peer of the same point (best peer ms / auto
    ms; above 1: auto is faster), the peer named."""
    sel = [r for r in rows if r.get("timing") == "end_to_end" and r.get("median_ms")
           and r.get("part") not in ("small_call", "kelefouras")]
    out = []
    groups = {}
    for r in sel:
        groups.setdefault((r.get("part"), tuple(r["image"]), r["precision"]), []).append(r)
    table = {}
    for (part, image, prec), grp in groups.items():
        for a in grp:
            if a["impl"] != "auto":
                continue
            peers = [r for r in grp if r["impl"].startswith("peer:") and r["kernel"] == a["kernel"]]
            if peers:
                b = min(peers, key=lambda r: r["median_ms"])
                table.setdefault((part, prec), {}).setdefault(image, {})[a["kernel"][0]] = (
                    b["median_ms"] / a["median_ms"], b["impl"][5:])
    for (part, prec), by_image in sorted(table.items(), key=lambda kv: (kv[0][0], _porder(kv[0][1]))):
        ks = sorted({k for v in by_image.values() for k in v})
        out += [f"### {part} · {prec}: speed-up of auto over the fastest peer (its name)", "",
                "| image | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "---|" * len(ks)]
        for image in sorted(by_image):
            cells = [f"{by_image[image][k][0]:.2f} ({by_image[image][k][1]})"
                     if k in by_image[image] else "—" for k in ks]
            out.append(f"| {image[0]}x{image[1]} | " + " | ".join(cells) + " |")
        out.append("")
    return out


def small_call_table(rows) -> list:
    sel = [r for r in rows if r.get("part") == "small_call" and r.get("median_ms")]
    if not sel:
        return []
    out = ["### small calls: 32x32 fp64, 3x3 (µs per call)", "",
           "| mode | " + " | ".join(sorted({r["impl"] for r in sel}, key=_iorder)) + " | ratio |",
           "|---|" + "---|" * (len({r["impl"] for r in sel}) + 1)]
    for mode in ("full", "same", "valid"):
        grp = {r["impl"]: r["median_ms"] * 1e3 for r in sel if r.get("mode") == mode}
        if not grp:
            continue
        ratio = (grp.get("auto", 0) / grp["peer:scipy_signal"]
                 if grp.get("peer:scipy_signal") else None)
        out.append(f"| {mode} | " + " | ".join(f"{grp[i]:.1f}" for i in sorted(grp, key=_iorder))
                   + f" | {'—' if ratio is None else format(ratio, '.2f')} |")
    return out + ["", "ratio: auto's time over scipy.signal.correlate2d's.", ""]


def u8_table(rows) -> list:
    sel = [r for r in rows if r.get("part") == "kelefouras" and r.get("median_ms")]
    if not sel:
        return []
    out = []
    for case in sorted({r.get("kernel_kind") for r in sel}):
        for k in sorted({r["kernel"][0] for r in sel}):
            grp = [r for r in sel if r["kernel"][0] == k and r.get("kernel_kind") == case]
            if not grp:
                continue
            sizes = sorted({tuple(r["image"]) for r in grp}, key=lambda s: s[0] * s[1])
            out += [f"### kelefouras · {case} · k={k} (median ms; CPS = pixels/s in brackets)",
                    "", "| impl | " + " | ".join(f"{w}x{h}" for h, w in sizes) + " |",
                    "|---|" + "---|" * len(sizes)]
            for impl in sorted({r["impl"] for r in grp}, key=_iorder):
                cells = []
                for s in sizes:
                    r = next((r for r in grp if r["impl"] == impl and tuple(r["image"]) == s), None)
                    cells.append("—" if r is None else
                                 f"{r['median_ms']:.3g} [{s[0] * s[1] / r['median_ms'] / 1e6:.2g}G]")
                out.append(f"| {impl} | " + " | ".join(cells) + " |")
            out.append("")
    return out


def workspace_table(rows) -> list:
    """Plan-only workspace rows (workspace-nonfinite): MB per method x precision, one column per
    (image, k); a plan that could not be made shows its error's name."""
    sel = [r for r in rows if r.get("part") == "workspace"]
    if not sel:
        return []
    cols = sorted({(r["image"][0], r["kernel"][0]) for r in sel})
    out = ["### Workspace (Plan.workspace_bytes, MB; plan only)", "",
           "| impl | precision | " + " | ".join(f"{n}² k={k}" for n, k in cols) + " |",
           "|---|---|" + "---|" * len(cols)]
    cell = {(r["impl"], r["precision"], r["image"][0], r["kernel"][0]): r for r in sel}
    for impl, prec in sorted({(r["impl"], r["precision"]) for r in sel},
                             key=lambda t: (_iorder(t[0]), _porder(t[1]))):
        cells = []
        for n, k in cols:
            r = cell.get((impl, prec, n, k))
            cells.append("—" if r is None else f"{r['extra_bytes'] / 1e6:.2f}"
                         if r.get("extra_bytes") is not None else r.get("note", "?").split(":")[0])
        out.append(f"| {impl} | {prec} | " + " | ".join(cells) + " |")
    return out + [""]


def u8_speedup_table(rows) -> list:
    """Kelefouras: simd_u8's speed-up over the peer of each kernel case's goal (filter2D; the
    Gaussian: GaussianBlur), min / median / max over the image sizes and how many meet it."""
    from ._presets import U8_GOALS

    t = {(r["impl"], r.get("kernel_kind"), tuple(r["image"]), r["kernel"][0]): r["median_ms"]
         for r in rows if r.get("part") == "kelefouras" and r.get("median_ms")}
    ks = sorted({key[3] for key in t})
    lines = []
    for case, (peer, goal) in U8_GOALS.items():
        cells = []
        for k in ks:
            s = np.array([t[(peer, c, img, kk)] / ms for (impl, c, img, kk), ms in t.items()
                          if impl == "simd_u8" and c == case and kk == k
                          and (peer, c, img, kk) in t])
            cells.append("—" if s.size == 0 else f"{s.min():.2f} / {np.median(s):.2f} / "
                         f"{s.max():.2f}, {int((s >= goal).sum())} of {s.size}")
        if any(c != "—" for c in cells):
            lines.append(f"| {case} vs {peer[5:]} (>= {goal:g}x) | " + " | ".join(cells) + " |")
    if not lines:
        return []
    return (["### kelefouras · speed-up of simd_u8 (min / median / max over the sizes; sizes "
             "meeting the goal)", "", "| case | " + " | ".join(f"k={k}" for k in ks) + " |",
             "|---|" + "---|" * len(ks)] + lines + [""])


def figures(doc: dict, out: Path, stem: str) -> list:
    """PNG figures: per (part, size, timing): time against k, one panel per precision (Figs.
    9-10; Kondo Figs. 4-6); Kelefouras: CPS against image size, one panel per k."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    if doc.get("preset") in FAMILY_PRESETS:
        from . import _dask, _filters, _oneshot, _stacks, _torch

        mod = {"filters": _filters, "stacks": _stacks, "dask": _dask,
               "oneshot": _oneshot, "torch": _torch}[doc["preset"]]
        return mod.figures(plt, doc, out, stem)
    rows = [r for r in doc["rows"] if r.get("median_ms") is not None]
    files = []
    if any(r.get("part") == "fig5" for r in rows):  # Kondo Fig. 5, against the radius
        from ._filters import fig5_figure

        files += fig5_figure(plt, rows, out, stem, doc["device"])
    # one colour and marker per impl across every panel and figure (20+ lines per panel)
    colours = list(plt.get_cmap("tab20").colors) + list(plt.get_cmap("Dark2").colors)
    markers = "os^vDP*Xhp<>"
    impls = sorted({r["impl"] for r in rows}, key=_iorder)
    style = {m: (colours[i % len(colours)], markers[i % len(markers)]) for i, m in enumerate(impls)}
    for part in sorted({r.get("part", "") for r in rows}):
        pr = [r for r in rows if r.get("part", "") == part]
        if part == "kelefouras":
            files += _u8_figure(plt, pr, out, stem, doc["device"])
            continue
        for timing in ("kernel", "call", "end_to_end"):
            for image in sorted({tuple(r["image"]) for r in pr}):
                sel = [r for r in pr if tuple(r["image"]) == image and r["timing"] == timing]
                if not sel or len({r["kernel"][0] for r in sel}) < 2:
                    continue
                precs = sorted({r["precision"] for r in sel}, key=_porder)
                # a precision timed only for peers (Fig. 9's torch.fft fp32) joins the first
                # panel, as the paper draws it, its precision in the label
                guests = [p for p in precs[1:] if all(r["impl"].startswith("peer:")
                                                      for r in sel if r["precision"] == p)]
                precs = [p for p in precs if p not in guests]
                cols = min(3, len(precs))
                nrow = -(-len(precs) // cols)
                fig, axes = plt.subplots(nrow, cols, figsize=(4.6 * cols + 1.5, 3.6 * nrow),
                                         squeeze=False)
                for ax, prec in zip(axes.flat, precs):
                    shown = [(prec, "")] + ([(g, f" ({g})") for g in guests]
                                            if prec == precs[0] else [])
                    for impl, (p, tag) in sorted({(r["impl"], pt) for pt in shown for r in sel
                                                  if r["precision"] == pt[0]},
                                                 key=lambda x: (_iorder(x[0]), x[1])):
                        for kind in sorted({r.get("kernel_kind", "random") for r in sel}):
                            pts = sorted((r["kernel"][0], r["median_ms"]) for r in sel
                                         if r["impl"] == impl and r["precision"] == p
                                         and r.get("kernel_kind", "random") == kind)
                            if not pts:
                                continue
                            lab = impl + tag + (f" ({kind})" if kind != "random" else "")
                            colour, marker = style[impl]
                            ax.plot(*zip(*pts), marker=marker, ms=3, lw=1.2, label=lab,
                                    color=colour, ls="--" if impl.startswith("peer:") else
                                    (":" if impl == "auto" else "-"))
                    ax.set_title(prec)
                    ax.set_yscale("log")
                    ax.set_xlabel("kernel size k (k x k)")
                    ax.set_ylabel(f"median ms ({timing})")
                    ax.grid(alpha=0.3)
                for ax in list(axes.flat)[len(precs):]:
                    ax.axis("off")
                handles, labels = {}, []
                for ax in axes.flat:
                    for h, l in zip(*ax.get_legend_handles_labels()):
                        if l not in handles:
                            handles[l] = h
                            labels.append(l)
                fig.legend([handles[l] for l in labels], labels, loc="center right", fontsize=7)
                fig.suptitle(f"{part}: {image[0]}x{image[1]}, {timing} ({doc['device']})")
                fig.tight_layout(rect=(0, 0, 1 - 1.5 / (4.6 * cols + 1.5), 1))
                fn = out / f"{stem}_{part}_{image[0]}_{timing}.png"
                fig.savefig(fn, dpi=100)
                plt.close(fig)
                files.append(fn)
    return files


def _u8_figure(plt, rows, out, stem, device):
    ks = sorted({r["kernel"][0] for r in rows})
    fig, axes = plt.subplots(1, len(ks), figsize=(4.2 * len(ks), 3.8), squeeze=False)
    for ax, k in zip(axes.flat, ks):
        for impl in sorted({r["impl"] for r in rows}, key=_iorder):
            for case in sorted({r.get("kernel_kind") for r in rows}):
                pts = sorted((r["image"][0] * r["image"][1] / 1e6,
                              r["image"][0] * r["image"][1] / r["median_ms"] / 1e6)
                             for r in rows if r["impl"] == impl and r["kernel"][0] == k
                             and r.get("kernel_kind") == case)
                if pts:
                    ax.plot(*zip(*pts), marker="o", ms=2.5, label=f"{impl} ({case})",
                            ls="--" if impl.startswith("peer:") else "-")
        ax.set_title(f"k = {k}")
        ax.set_xlabel("megapixels")
        ax.set_ylabel("CPS (Gpixel/s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"simd_u8 vs peers, uint8 ({device})")
    fig.tight_layout()
    fn = out / f"{stem}_kelefouras.png"
    fig.savefig(fn, dpi=100)
    plt.close(fig)
    return [fn]


def write(doc: dict, out: Path, stem: str) -> list:
    out.mkdir(parents=True, exist_ok=True)
    js = out / f"{stem}.json"
    js.write_text(json.dumps(doc, indent=1))
    md = out / f"{stem}.md"
    md.write_text(markdown(doc))
    return [js, md] + figures(doc, out, stem)
