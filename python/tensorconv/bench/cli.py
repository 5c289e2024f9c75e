"""python -m tensorconv.bench (console script tensorconv-bench): time every registry method and
the peers on this machine, or reproduce a paper's evaluation with --preset, or tune 'auto'
with --tune, or redraw the tables and figures of a results file with --report.

  tensorconv-bench --preset im2tensor --out results/      # Tables 3-4, Figs 9-10 (GPU)
  tensorconv-bench --preset kelefouras                     # the uint8 grid against OpenCV (CPU)
  tensorconv-bench --preset cpu-float                      # CPU float grid against scipy/OpenCV
  tensorconv-bench --preset gpu-core                       # naive, naive_shmem, separable, fft
  tensorconv-bench --preset tc-fp                          # tf32/fp32/fp64 as a user's call sees
  tensorconv-bench --preset scipy-compat                   # complex data against scipy / CuPy
  tensorconv-bench --preset workspace-nonfinite            # NaN/inf repair cost, workspaces
  tensorconv-bench --preset astropy                        # tensorconv.astropy vs astropy
  tensorconv-bench --preset kondo --parts fig5 --sizes 4096 --rs 1,3,7,11,15,23   # Fig. 5 only
  tensorconv-bench --preset filters --parts gaussian --rs 1-23 --cv2-rs ""   # vs cupyx, kornia...
  tensorconv-bench --preset stacks --skip-host --quick     # stack vs loop vs cuDNN batch
  tensorconv-bench --preset oneshot --quick                # scipy-style calls vs plans (~2 min)
  tensorconv-bench --preset torch --quick                  # tensorconv.torch vs cuDNN (~3 min)
  tensorconv-bench --preset dask --gpus 2 --sizes 65536 --kernels 15 --overhead
  tensorconv-bench --sizes 1024 --kernels 3,15 --precisions fp32 --methods naive_shmem,fft
  tensorconv-bench --tune                                  # cost model of 'auto' for this GPU
  tensorconv-bench --report benchmarks/results/im2tensor_h100.json [--readme README.md]

Kernel timing: CUDA events around the public Plan's call on device arrays (a sleep kernel queued
first keeps the host's Python work out), 3 warm-ups, median of 20 (fewer for a call slower than
--row-cap-s / 23, said by the row's "runs"); end_to_end: NumPy in and out, wall clock.
A SIGTERM (e.g. from timeout(1)) ends the measurements and writes the rows measured so far, the
file's "cut_short" saying so."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import tensorconv as tc

from . import _peers, _presets, _report
from ._sweep import Part, Sweep, grid_size
from ._timing import Device


def _ints(text: str, what: str) -> tuple:
    """'3,15,25' or '1-60' or a mix."""
    out = []
    for tok in text.split(","):
        tok = tok.strip()
        m = re.fullmatch(r"(\d+)-(\d+)", tok)
        try:
            out += list(range(int(m[1]), int(m[2]) + 1)) if m else [int(tok)]
        except (TypeError, ValueError):
            raise SystemExit(f"tensorconv-bench: error: --{what} takes integers such as 3,15 or "
                             f"1-60; got {text!r}") from None
    if not out or min(out) < 1:
        raise SystemExit(f"tensorconv-bench: error: --{what} must list positive integers")
    return tuple(out)


def _u8_sizes(text: str) -> tuple:
    out = []
    for tok in text.split(","):
        m = re.fullmatch(r"(\d+)(?:x(\d+))?", tok.strip())
        if not m:
            raise SystemExit(f"tensorconv-bench: error: --sizes for kelefouras takes WxH such as "
                             f"640x480; got {tok!r}")
        w = int(m[1])
        out.append((int(m[2]) if m[2] else w, w))
    return tuple(out)


def _shapes(text: str) -> tuple:
    """'8x64x224x224,1x16x1024x1024' -> ((8, 64, 224, 224), (1, 16, 1024, 1024))."""
    out = []
    for tok in text.split(","):
        m = re.fullmatch(r"(\d+)x(\d+)x(\d+)x(\d+)", tok.strip())
        if not m or min(map(int, m.groups())) < 1:
            raise SystemExit(f"tensorconv-bench: error: --shapes takes NxCxHxW such as "
                             f"8x64x224x224; got {tok!r}")
        out.append(tuple(map(int, m.groups())))
    return tuple(out)


def _torch_grid(a, precisions) -> dict:
    """--preset torch's grid from --quick, --shapes, --kernels and --precisions."""
    from . import _torch

    if a.sizes or a.methods:
        raise SystemExit("tensorconv-bench: error: --preset torch takes --shapes NxCxHxW, not "
                         "--sizes or --methods")
    asked = a.precisions not in (None, "all")  # all: the preset's three
    bad = [p for p in precisions if p not in _torch.PRECISIONS] if asked else []
    if bad:
        raise SystemExit(f"tensorconv-bench: error: --preset torch takes precisions "
                         f"{', '.join(_torch.PRECISIONS)}; got {', '.join(bad)}")
    return _torch.grid(a.quick, _shapes(a.shapes) if a.shapes else None,
                       _ints(a.kernels, "kernels") if a.kernels else None,
                       precisions if asked else None)


def _choices(text: str, valid, what: str) -> tuple:
    if text in ("all", ""):
        return tuple(valid)
    if text == "none":
        return ()
    got = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [t for t in got if t not in valid]
    if bad:
        raise SystemExit(f"tensorconv-bench: error: unknown {what} {', '.join(map(repr, bad))}; "
                         f"valid {what}s: {', '.join(valid)}")
    return got


def parser() -> argparse.ArgumentParser:
    # description: the docstring's first paragraph, whole; epilog: the examples and timing rule
    ap = argparse.ArgumentParser(prog="tensorconv-bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="examples:\n" + "\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--preset", help="a paper's evaluation: " + ", ".join(_presets.PRESETS))
    ap.add_argument("--sizes", help="square image sides, e.g. 1024,4096 (kelefouras: WxH list)")
    ap.add_argument("--kernels", help="square kernel sides, e.g. 3,15,55 or 1-60")
    ap.add_argument("--precisions", help="comma list or 'all': " + ", ".join(tc.PRECISIONS))
    ap.add_argument("--methods", help="registry methods (and 'auto'), comma list or 'all'")
    ap.add_argument("--peers", help="comma list, 'all' or 'none': " + ", ".join(_peers.PEERS))
    ap.add_argument("--timing", choices=("kernel", "call", "end_to_end", "both"),
                    help="kernel: data on the device (the paper's rule); call: the same with no "
                         "sleep kernel in front (Python dispatch included); end_to_end: NumPy "
                         "in and out (default: kernel; separable and gpu-core: both; tc-fp: "
                         "call)")
    ap.add_argument("--out", default="tensorconv-bench-results", help="folder for JSON/MD/PNG")
    ap.add_argument("--budget-s", type=float, default=900.0,
                    help="stop starting new rows after this many seconds (default 900)")
    ap.add_argument("--row-cap-s", type=float, default=10.0,
                    help="time one row for at most about this long (default 10)")
    ap.add_argument("--runs", type=int, help="timed calls per row (median; default 20, dask 3)")
    ap.add_argument("--tune", action="store_true",
                    help="measure the cost model of method='auto' on this GPU and keep it in "
                         "the user's cache directory (grid: --sizes, --kernels, --precisions)")
    ap.add_argument("--report", metavar="JSON", help="only rewrite the Markdown and figures of "
                    "a results file (no timing)")
    ap.add_argument("--readme", metavar="MD", help="with --report: rewrite the block between "
                    "<!-- bench-report:begin --> and <!-- bench-report:end --> in this file")
    ap.add_argument("--threads", type=int, help="kelefouras: threads of simd_u8 and OpenCV "
                    "alike (default: all)")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    g = ap.add_argument_group(
        "options of some presets only", "kondo, filters: --parts, --rs; filters: --cv2-rs, "
        "--kornia-max-r (--sizes: the one image side, default 4096); stacks: --quick, "
        "--host-only, --skip-host; dask: --gpus, --chunk, --boundary, --mode, --overhead, --halos, "
        "--device (--sizes: the image side, default 65536; --kernels, default 15; --precisions, "
        "default fp32; --methods: one method; --threads: per worker, default 16; --runs, "
        "default 3); oneshot: --quick; torch: --quick, --shapes (--kernels; --precisions: "
        "fp16, bf16, fp32). Any of them with another preset is an error.")
    g.add_argument("--parts", help="kondo: general (Figs. 4, 6), fig5 (bilateral; default "
                   "both); filters: gaussian, fig5, bilateral (default all)")
    g.add_argument("--rs", help="radii r (kernel 2r + 1), e.g. 1,3,7 or 1-23 (default 1-23; "
                   "kondo fig5: from --kernels when given)")
    g.add_argument("--cv2-rs", help="filters: radii at which the host cv2 peers run "
                   "(default 3,7,23; '' for none)")
    g.add_argument("--kornia-max-r", type=int, help="filters: largest radius of kornia "
                   "bilateral_blur (default 11; it runs out of memory beyond)")
    g.add_argument("--quick", action="store_true", help="stacks: 5 runs of the slow loop of "
                   "correlate2d calls; oneshot: 4096², fp32, k = 3, 15, 55, valid/same, "
                   "fill/symm; torch: fp32 and fp16, k = 7, 31, 51, 8x64x224x224 and "
                   "1x16x1024x1024")
    g.add_argument("--host-only", action="store_true", help="stacks: only the host-array rows "
                   "(~10 s; files stacks_host_<device>)")
    g.add_argument("--skip-host", action="store_true", help="stacks: stacks and batched "
                   "launches only")
    g.add_argument("--gpus", type=int, help="dask: workers, one per GPU (default 1)")
    g.add_argument("--chunk", type=int, help="dask: chunk side (default 8192)")
    g.add_argument("--boundary", help="dask: comma list of boundaries, each timed and checked "
                   "(default fill, fillvalue 0.5)")
    g.add_argument("--mode", choices=("full", "same", "valid"), help="dask: output mode "
                   "(default same)")
    g.add_argument("--overhead", action="store_true", help="dask: also Dask's halos and a "
                   "fresh result per chunk, no correlation")
    g.add_argument("--halos", help="dask: comma list of tensorconv.dask halo paths, each "
                   "timed and checked: gather (default: read from the neighbouring blocks), "
                   "map_overlap")
    g.add_argument("--device", choices=("cuda", "cpu"), help="dask: cuda (default) or cpu (a "
                   "2-process LocalCluster, method direct: a correctness check)")
    g.add_argument("--shapes", help="torch: (N, C, H, W) shapes as NxCxHxW, comma list (default "
                   "32x128x56x56,8x64x224x224,1x16x1024x1024)")
    return ap


# option -> the presets it applies to
PRESET_ONLY = {"parts": ("kondo", "filters"), "rs": ("kondo", "filters"),
               "cv2_rs": ("filters",), "kornia_max_r": ("filters",),
               "quick": ("stacks", "oneshot", "torch"),
               "host_only": ("stacks",), "skip_host": ("stacks",), "gpus": ("dask",),
               "chunk": ("dask",), "boundary": ("dask",), "mode": ("dask",),
               "overhead": ("dask",), "device": ("dask",), "halos": ("dask",),
               "shapes": ("torch",)}
PARTS = {"kondo": ("general", "fig5"), "filters": ("gaussian", "fig5", "bilateral")}


def _check_preset_options(a) -> None:
    for opt, presets in PRESET_ONLY.items():
        if getattr(a, opt) not in (None, False) and a.preset not in presets:
            raise SystemExit(f"tensorconv-bench: error: --{opt.replace('_', '-')} applies only "
                             f"to --preset {' or '.join(presets)}")
    if a.host_only and a.skip_host:
        raise SystemExit("tensorconv-bench: error: --host-only and --skip-host exclude each other")
    if a.preset in _report.FAMILY_PRESETS and (a.tune or a.timing or a.peers):
        raise SystemExit(f"tensorconv-bench: error: --preset {a.preset} takes no --tune, "
                         "--timing or --peers (its peers and timing are fixed)")


def _progress(total: int, quiet: bool, desc: str):
    if quiet:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="point")


class _Stopped(BaseException):
    """SIGTERM (a time limit) during the measurements: not an Exception, so that no per-point
    error handling records it and carries on."""


def _stop_on_sigterm():
    def stop(signum, frame):
        raise _Stopped("stopped by SIGTERM before the last point")

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: no handler, the default stays
        return signal.getsignal(signal.SIGTERM)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    a = parser().parse_args(argv)
    if a.report:
        return report(Path(a.report), Path(a.readme) if a.readme else None)
    if a.preset is not None and a.preset not in _presets.PRESETS:
        raise SystemExit(f"tensorconv-bench: error: unknown preset {a.preset!r}; valid presets: "
                         + ", ".join(_presets.PRESETS))
    _check_preset_options(a)
    if a.runs is None:
        a.runs = 3 if a.preset == "dask" else 20
    if a.runs < 1:
        raise SystemExit("tensorconv-bench: error: --runs must be at least 1")
    parts_asked = (_choices(a.parts, PARTS[a.preset], "part") if a.parts is not None
                   else PARTS.get(a.preset, ()))
    methods_valid = _presets.correlate_methods() + ("auto",)
    precisions = _choices(a.precisions or "all", tc.PRECISIONS, "precision")
    methods = _choices(a.methods, methods_valid, "method") if a.methods else None
    peers = _choices(a.peers, tuple(_peers.PEERS), "peer") if a.peers else None
    timing = {"kernel": ("kernel",), "call": ("call",), "end_to_end": ("end_to_end",),
              "both": ("kernel", "end_to_end"), None: None}[a.timing]
    if a.tune:
        from . import tune

        kw = {}
        if a.sizes:
            kw["sizes"] = _ints(a.sizes, "sizes")
        if a.kernels:
            kw["kernels"] = _ints(a.kernels, "kernels")
        try:
            model = tune(precisions=precisions, budget_s=a.budget_s, progress=not a.no_progress,
                         out=Path(a.out), **kw)
        except ValueError as e:
            raise SystemExit(f"tensorconv-bench: error: {e}") from None
        doc = json.loads(Path(model["rows_file"]).read_text())  # its tables and figures too
        _report.write(doc, Path(a.out), Path(model["rows_file"]).stem)
        print(f"cost model of {len(model['points'])} points saved to {model['path']}")
        return 0

    if a.preset == "torch":
        from . import _torch

        _torch_grid(a, precisions)
        why = _torch.unavailable()
        if why:
            raise SystemExit(f"tensorconv-bench: error: --preset torch times CUDA tensors: {why}")
    dev = Device()
    if not tc.cuda_available() or dev.lib is None:
        why = (tc._core.cuda_unavailable_reason() if not tc.cuda_available()
               else f"no CUDA array library ({dev.why})")
        print(f"GPU methods and peers are skipped: {why}", file=sys.stderr)
        dev.lib = None
    device_name = dev.name() if dev.lib else f"CPU {_report.cpu_model()}"
    sweep = Sweep(dev, time.time() + a.budget_s, a.row_cap_s,
                  log=lambda s: print(s, file=sys.stderr))
    t0 = time.time()
    extra = {}
    bar, status, cut = None, 0, None
    previous = _stop_on_sigterm()
    try:
        if a.preset == "cpu-float":
            extra["load_average_start"] = list(os.getloadavg())
            extra["fma_peak_gflops"] = _presets.fma_peaks()
            print(f"load average {extra['load_average_start']}; FMA peak (GFLOP/s, all cores): "
                  f"{extra['fma_peak_gflops']}", file=sys.stderr)
            sweep.rows += _presets.small_call_rows()
        if a.preset in _report.FAMILY_PRESETS:
            status = family(a, sweep, dev, precisions, methods, parts_asked, extra)
            parts, bar = [], None
            if a.preset == "dask" and a.device == "cpu":
                device_name = f"CPU {_report.cpu_model()}"
        elif a.preset == "astropy":
            kw = {"sizes": _ints(a.sizes, "sizes")} if a.sizes else {}
            if a.kernels:
                kw["ks"] = _ints(a.kernels, "kernels")
            _presets.astropy_rows(sweep, runs=a.runs, timing=timing or ("end_to_end", "kernel"),
                                  **kw)
            parts, bar = [], None
        elif a.preset == "scipy-compat":
            sizes = _ints(a.sizes, "sizes") if a.sizes else None
            ks = _ints(a.kernels, "kernels") if a.kernels else None
            _presets.complex_rows(sweep, (sizes[0] if sizes else 1024, ks[0] if ks else 15),
                                  (sizes[-1] if sizes else 4096, ks[-1] if ks else 55), a.runs)
            parts, bar = [], None
        elif a.preset == "kelefouras":
            sizes = _u8_sizes(a.sizes) if a.sizes else _presets.U8_SIZES
            ks = _ints(a.kernels, "kernels") if a.kernels else (3, 5, 7, 9)
            bar = _progress(len(sizes) * len(ks), a.no_progress, "kelefouras")
            _presets.u8_sweep(sweep, sizes, ks, peers=("opencv",) if peers is None else peers,
                              progress=bar, runs=a.runs, threads=a.threads)
            parts = []
        else:
            if a.preset:
                parts = _presets.PRESETS[a.preset]()
                if a.preset == "kondo" and "general" not in parts_asked:
                    parts = []
            else:
                parts = [Part("sweep", (1024,), (3, 15, 55), precisions,
                              _presets.correlate_methods() + ("auto",), _presets.ALL_PEERS)]
            for p in parts:
                if a.sizes:
                    p.sizes = _ints(a.sizes, "sizes")
                if a.kernels:
                    p.kernels = _ints(a.kernels, "kernels")
                elif a.rs is not None:  # kondo: the radii of Fig. 5 for Figs. 4 and 6 too
                    p.kernels = tuple(2 * r + 1 for r in _radii(a))
                if a.precisions:
                    p.precisions = precisions
                if methods is not None:
                    p.methods = methods
                if peers is not None:
                    p.peers = peers
                if timing:
                    p.timing = timing
                p.runs = a.runs
            bar = _progress(grid_size(parts), a.no_progress, a.preset or "bench")
            for p in parts:
                sweep.run(p, bar)
            if a.preset == "kondo" and "fig5" in parts_asked:
                from ._filters import fig5_rows

                fig5_rows(sweep, tuple(sorted(_ints(a.sizes, "sizes") if a.sizes else (128, 4096),
                                              reverse=True)), _radii(a))
            if a.preset == "workspace-nonfinite" and dev.lib is not None:
                _presets.workspace_rows(sweep, _ints(a.sizes, "sizes") if a.sizes else (4096, 32768),
                                        _ints(a.kernels, "kernels") if a.kernels else (15, 55))
    except _Stopped as e:  # a time limit's SIGTERM: what was measured is still written
        cut = str(e)
        print(f"tensorconv-bench: {cut}; writing the rows measured so far", file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if bar is not None:
        bar.close()
    if a.preset == "cpu-float":
        extra["load_average_end"] = list(os.getloadavg())
    env = _report.environment(device_name)
    doc = _report.document(env, sweep.rows, title=f"tensorconv-bench {a.preset or ''}".strip(),
                           preset=a.preset, images=sweep.images,
                           seconds=round(time.time() - t0, 1),
                           skipped_for_time=sweep.skipped_for_time,
                           notes=_notes(a.preset),
                           command=" ".join(["tensorconv-bench", *argv]),
                           **({"cut_short": cut} if cut else {}), **extra)
    stem = f"{a.preset or 'bench'}{'_host' if a.host_only else ''}_{_report.slug(device_name)}"
    files = _report.write(doc, Path(a.out), stem)
    if sweep.skipped_for_time:
        print(f"budget of {a.budget_s:g} s reached: {sweep.skipped_for_time} points not timed",
              file=sys.stderr)
    print("wrote", *map(str, files))
    if a.preset in _report.FAMILY_PRESETS:
        return status
    return 0


def _notes(preset) -> str:
    """The timing rule the file's rows follow (the family presets state their own)."""
    doc = __doc__
    if preset in _report.FAMILY_PRESETS:
        from . import _dask, _filters, _oneshot, _stacks, _torch

        doc = {"filters": _filters, "stacks": _stacks, "dask": _dask,
               "oneshot": _oneshot, "torch": _torch}[preset].__doc__
    return doc.split("\n\n")[-1].replace("\n", " ")


def _radii(a) -> tuple:
    """--rs, else the radii of --kernels' odd sides, else 1..23."""
    if a.rs is not None:
        return _ints(a.rs, "rs")
    if a.kernels:
        return tuple(k // 2 for k in _ints(a.kernels, "kernels") if k % 2 and k > 1)
    return tuple(range(1, 24))


def family(a, sweep, dev, precisions, methods, parts, extra) -> int:
    """--preset filters / stacks / dask / oneshot / torch: their rows into sweep.rows; the exit
    status (dask: 1 when a result is not bit-for-bit the one call's)."""
    sizes = _ints(a.sizes, "sizes") if a.sizes else None
    if sizes and len(sizes) > 1 and a.preset != "oneshot":
        raise SystemExit(f"tensorconv-bench: error: --preset {a.preset} takes one --sizes value")
    if a.preset == "filters":
        from . import _filters

        cv2_rs = () if a.cv2_rs == "" else (_ints(a.cv2_rs, "cv2-rs") if a.cv2_rs
                                             else (3, 7, 23))
        errors = _filters.filters_rows(sweep, parts, sizes[0] if sizes else 4096, _radii(a),
                                       cv2_rs, 11 if a.kornia_max_r is None else a.kornia_max_r)
        if errors:
            extra["errors"] = errors
        return 0
    if a.preset == "oneshot":
        from . import _oneshot

        sweep.rows += _oneshot.oneshot_rows(
            sweep, a.quick, a.runs, sizes=sizes,
            ks=_ints(a.kernels, "kernels") if a.kernels else None,
            precisions=precisions if a.precisions else None)
        return 0
    if a.preset == "torch":
        from . import _torch

        sweep.rows += _torch.torch_rows(sweep, _torch_grid(a, precisions), a.runs)
        return 0
    if a.preset == "stacks":
        from . import _stacks

        sweep.rows += _stacks.stacks_rows(sweep, dev.lib == "torch", a.runs, a.quick,
                                          a.host_only, a.skip_host)
        return 0
    from . import _dask

    device = a.device or "cuda"
    if methods is not None and len(methods) != 1:
        raise SystemExit("tensorconv-bench: error: --preset dask takes one --methods value")
    args = dict(device=device, gpus=1 if a.gpus is None else a.gpus,
                size=sizes[0] if sizes else 65536, chunk=8192 if a.chunk is None else a.chunk,
                ks=_ints(a.kernels, "kernels") if a.kernels else (15,),
                precisions=precisions if a.precisions else ("fp32",),
                boundaries=tuple(b.strip() for b in (a.boundary or "fill").split(",")),
                method=methods[0] if methods else None, mode=a.mode or "same")
    try:
        _dask.plan(**args)
    except ValueError as e:
        raise SystemExit(f"tensorconv-bench: error: {e}") from None
    halos = tuple(h.strip() for h in (a.halos or "gather").split(","))
    if any(h not in ("gather", "map_overlap") for h in halos):
        raise SystemExit(f"tensorconv-bench: error: --halos takes gather, map_overlap; got "
                         f"{a.halos!r}")
    if device == "cuda" and dev.lib is None:
        sweep.log("dask rows skipped: no usable CUDA device (see above); --device cpu runs "
                  "the CPU check")
        return 0
    name = dev.name() if device == "cuda" else f"CPU {_report.cpu_model()}"
    rows = _dask.dask_rows(sweep, name, threads=16 if a.threads is None else a.threads,
                           runs=a.runs, overhead=a.overhead, halos=halos, **args)
    sweep.rows += rows
    return 0 if all(r.get("equal", True) for r in rows) else 1


def report(path: Path, readme: Path | None) -> int:
    import json

    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SystemExit(f"tensorconv-bench: error: cannot read {path}: {e}") from None
    stem = path.stem
    files = [path.with_suffix(".md")]
    files[0].write_text(_report.markdown(doc))
    files += _report.figures(doc, path.parent, stem)
    if readme is not None:
        readme_block(doc, readme, files)
        files.append(readme)
    print("wrote", *map(str, files))
    return 0


def readme_block(doc: dict, readme: Path, files) -> None:
    """The README's speed figure and table: the 4096² kernel-time figure and, per precision,
    the fastest method of the run beside auto's pick."""
    begin, end = "<!-- bench-report:begin -->", "<!-- bench-report:end -->"
    text = readme.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"tensorconv-bench: error: {readme} has no {begin} ... {end} block")
    figs = [f for f in files if f.suffix == ".png" and "table3" in f.name] or \
        [f for f in files if f.suffix == ".png"]
    lines = [begin, ""]
    for f in figs[:1]:
        try:
            rel = f.resolve().relative_to(readme.resolve().parent)
        except ValueError:
            rel = f
        lines += [f"![kernel time against kernel size, {doc['device']}]({rel.as_posix()})", ""]
    lines += _report.auto_table(doc["rows"])
    lines += [f"Generated by `tensorconv-bench --report {files[0].with_suffix('.json').name}` "
              f"from the run of {doc['created']} on {doc['device']}.", "", end]
    head, rest = text.split(begin, 1)
    readme.write_text(head + "\n".join(lines) + rest.split(end, 1)[1])
