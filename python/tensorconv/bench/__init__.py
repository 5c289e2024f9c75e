"""Benchmarks shipped with the package: `python -m tensorconv.bench` (see .cli) and tune(), the
measurement behind method='auto' on the GPU."""

from __future__ import annotations

import time
from pathlib import Path

import tensorconv as tc

from ._sweep import Part, Sweep
from ._timing import Device

TUNE_SIZES = (4096, 1024)  # the goal grid first, should the budget end the run
TUNE_KERNELS = (3, 15, 25, 35, 55, 7)


def tune(sizes=TUNE_SIZES, kernels=TUNE_KERNELS, precisions=tc.PRECISIONS, *,
         budget_s: float = 300.0, save: bool = True, progress: bool = True,
         out: Path | None = None) -> dict:
    """Time every available CUDA correlate2d method (separable also on a rank-1 kernel) on this
    device over a grid of square images and kernels, in each precision (kernel timing, median
    of 10 after 2 warm-ups, MAPE against float64), and keep the cost model in the user's cache
    directory for this device name and package version, where method='auto' reads it. Needs a
    CUDA device and PyTorch or CuPy (for device arrays and CUDA events). Returns the model,
    with 'path' (where it was saved) and, when `out` is given, the raw rows written there as
    JSON."""
    from .. import _autotune, _plan_cache
    from . import _report

    if not tc.cuda_available():
        raise ValueError("tune() times methods on a CUDA device: "
                         + tc._core.cuda_unavailable_reason())
    dev = Device()
    if dev.lib is None:
        raise ValueError("tune() needs PyTorch or CuPy for device arrays and CUDA events: "
                         + dev.why)
    bad = [p for p in precisions if p not in tc.PRECISIONS]
    if bad:
        raise ValueError(f"unknown precision {bad[0]!r}; valid precisions: "
                         + ", ".join(tc.PRECISIONS))
    names = tuple(m.name for m in tc.methods() if m.device == "cuda" and m.available
                  and m.entry == "correlate2d")
    part = Part("tune", tuple(sizes), tuple(kernels), tuple(precisions), names,
                gaussian_for=("separable",), runs=10, warm=2)
    sweep = Sweep(dev, time.time() + budget_s, row_cap_s=3.0, image_source="random")
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(sizes) * len(kernels), desc="tune", unit="point")
        except ImportError:
            pass
    t0 = time.time()
    sweep.run(part, bar)
    if bar is not None:
        bar.close()
    device = _autotune.device_name() or dev.name()
    model = _autotune.model_from_rows(complete_points(sweep.rows, names), device,
                                      "tensorconv.tune() on this device")
    model["seconds"] = round(time.time() - t0, 1)
    model["skipped_for_time"] = sweep.skipped_for_time
    if save:
        model["path"] = str(_autotune.save(dict(model)))
        _plan_cache.clear()  # cached 'auto' plans were chosen without this model
    else:
        model["path"] = None
    if out is not None:
        env = _report.environment(device)
        doc = _report.document(env, sweep.rows, title="tensorconv.tune()",
                               seconds=model["seconds"], skipped_for_time=sweep.skipped_for_time)
        model["rows_file"] = str(_report.write(doc, Path(out), f"tune_{_report.slug(device)}")[0])
    return model


def complete_points(rows, names) -> list:
    """The rows of the grid points where every method of `names` that supports the precision
    has a row (timed or failed): a point the budget cut short would rank only part of them."""
    infos = {m.name: m for m in tc.methods()}
    seen: dict = {}
    for r in rows:
        if r.get("kernel_kind", "random") == "random":
            key = (r["precision"], tuple(r["image"]), r["kernel"][0])
            seen.setdefault(key, set()).add(r["impl"])
    done = {key for key, got in seen.items()
            if {n for n in names if key[0] in infos[n].precisions} <= got}
    return [r for r in rows if (r["precision"], tuple(r["image"]), r["kernel"][0]) in done]


__all__ = ["tune", "Part", "Sweep"]
