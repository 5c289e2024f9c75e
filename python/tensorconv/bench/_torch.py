"""PyTorch depthwise ops against cuDNN (--preset torch): tensorconv.torch.correlate2d (mode
same, fill 0: conv2d with padding k // 2) and torch.nn.functional.conv2d(x, w, padding=k // 2,
groups=C) (cuDNN, TF32 off, cudnn.benchmark on) in the same run, forward and forward + backward
with both gradients (input and weight: out.backward(g) with a fixed random g), float16 /
bfloat16 / float32 tensors, k = 3, 7, 15, 31, 51, 63, (N, C, H, W) = (32, 128, 56, 56),
(8, 64, 224, 224), (1, 16, 1024, 1024); the MAPE of the output and of both gradients against
the float64 cuDNN conv2d of the same (rounded) inputs and g on the device. --quick: fp32 and
fp16, k = 7, 31, 51, (8, 64, 224, 224) and (1, 16, 1024, 1024). Goals: forward + backward
>= 5x cuDNN at every k >= 15; forward >= 5x at k >= 15 and no slower at k = 7.

Timing ('call'): CUDA events around each call (its Python inside: tensorconv.torch reads the
weights to the host to make its plan), two warm-up calls (the first: cuDNN's algorithm search
and tensorconv's plans; the second, warm, sizes the row), then the median of 20 (fewer for a
call slower than --row-cap-s / 20, said by the row's "runs"); forward + backward: the forward
call and out.backward(g), the gradients reset to None before each."""

from __future__ import annotations

from ._timing import time_device

SHAPES = ((32, 128, 56, 56), (8, 64, 224, 224), (1, 16, 1024, 1024))
KS = (3, 7, 15, 31, 51, 63)
PRECISIONS = ("fp16", "bf16", "fp32")
QUICK = dict(shapes=((8, 64, 224, 224), (1, 16, 1024, 1024)), ks=(7, 31, 51),
             precisions=("fp32", "fp16"))
DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
OURS, CUDNN = "tensorconv.torch.correlate2d", "peer:cudnn_depthwise"
PASSES = ("forward", "fwd_bwd")
GOAL_X, GOAL_FROM_K = 5.0, 15  # forward and forward + backward, k >= 15
WARM = 0  # time_device's own first call (after the cold one here) is the second warm-up


def grid(quick=False, shapes=None, ks=None, precisions=None) -> dict:
    """The preset's (shapes, ks, precisions): the full grid or --quick's, each overridable."""
    g = dict(QUICK) if quick else dict(shapes=SHAPES, ks=KS, precisions=PRECISIONS)
    for key, val in (("shapes", shapes), ("ks", ks), ("precisions", precisions)):
        if val:
            g[key] = tuple(val)
    return g


def unavailable() -> str | None:
    """Why the preset cannot run here (None: PyTorch sees a CUDA device and tensorconv has its
    CUDA methods)."""
    import tensorconv as tc

    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    if not tc.cuda_available():
        return tc._core.cuda_unavailable_reason()
    return None


def torch_rows(sweep, g, runs=20, device="cuda") -> list:
    """Rows of both impls x both passes per (shape, precision, k) of grid g (see the module
    docstring); a point that cannot run (out of memory) is a row with its error. device: where
    the tensors live (the preset: cuda; the tests run the same rows on the CPU with a host
    timer)."""
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    rows = []
    for shape in g["shapes"]:
        n, c, h, w = shape
        gen = torch.Generator(device=device).manual_seed(0)
        x32 = torch.rand(shape, device=device, generator=gen)
        g32 = torch.randn(shape, device=device, generator=gen)
        for prec in g["precisions"]:
            dt = getattr(torch, DTYPES[prec])
            for k in g["ks"]:
                if sweep.out_of_time():
                    sweep.skipped_for_time += 1
                    continue
                w32 = torch.randn((c, 1, k, k), device=device, generator=gen) / k
                base = {"part": "torch", "precision": prec, "dtype": DTYPES[prec],
                        "shape": list(shape), "batch": n, "channels": c, "image": [h, w],
                        "kernel": [k, k], "mode": "same", "boundary": "fill",
                        "timing": "call"}
                try:
                    rows += _point(sweep, base, x32.to(dt), w32.to(dt), g32.to(dt), runs)
                except Exception as e:  # out of memory at a large point: recorded, not fatal
                    rows += [{"impl": impl, "variant": p, **base, "median_ms": None,
                              "error": repr(e)[:200]} for impl in (OURS, CUDNN) for p in PASSES]
                    sweep.log(f"  torch {shape} {prec} k={k}: {e!r}")
                torch.cuda.empty_cache()
        del x32, g32
        torch.cuda.empty_cache()
    return rows


def _point(sweep, base, x, w, g, runs) -> list:
    """Both impls, forward and forward + backward, with their errors against float64 cuDNN."""
    import torch.nn.functional as F

    import tensorconv.torch as tct

    k = base["kernel"][0]
    impls = {OURS: lambda a, b: tct.correlate2d(a, b, mode="same", boundary="fill"),
             CUDNN: lambda a, b: F.conv2d(a, b, padding=k // 2, groups=a.shape[1])}
    ref = _grads(impls[CUDNN], x.double(), w.double(), g.double())
    dev, rows = sweep.device, []
    for impl, op in impls.items():
        got = _grads(op, x, w, g)
        err = dict(zip(("mape_pct", "mape_grad_input_pct", "mape_grad_weight_pct"),
                       (dev.mape(a, b) for a, b in zip(got, ref))))
        del got
        xr, wr = x.detach().requires_grad_(), w.detach().requires_grad_()

        def fwd_bwd(i, op=op, xr=xr, wr=wr):
            xr.grad = wr.grad = None
            op(xr, wr).backward(g)

        extra = {"tc_precision": tct.precision_for(x.dtype)} if impl == OURS else \
            {"cudnn_benchmark": True}
        for p, fn, e in (("forward", lambda i, op=op: op(x, w), {"mape_pct": err["mape_pct"]}),
                         ("fwd_bwd", fwd_bwd, err)):
            fn(0)  # cold: kept out of time_device's sizing of the row
            ms, done = time_device(dev, fn, runs, WARM, sweep.row_cap_s, sleep=False)
            rows.append({"impl": impl, "variant": p, **base, "median_ms": round(ms, 5),
                         "runs": done, **e, **extra})
            sweep.log(f"  {impl:30s} {p:8s} {base['precision']:4s} {tuple(base['shape'])} "
                      f"k={k:<3d}: {ms:9.3f} ms, MAPE {e['mape_pct']} %")
        xr.grad = wr.grad = None
    return rows


def _grads(op, x, w, g) -> tuple:
    """(output, grad of x, grad of w) of op(x, w) with grad_output g."""
    import torch

    x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
    out = op(x, w)
    gx, gw = torch.autograd.grad(out, (x, w), g)
    return out.detach(), gx, gw


def _cells(rows) -> dict:
    """(shape, precision, k, impl, pass) -> row, timed rows of this preset only."""
    return {(tuple(r["shape"]), r["precision"], r["kernel"][0], r["impl"], r["variant"]): r
            for r in rows if r.get("part") == "torch" and r.get("median_ms") is not None}


def goal(k: int, fwd_x: float, fb_x: float | None) -> bool | None:
    """The speed-up goal at k (None: no goal at this k): forward and forward + backward >= 5x
    cuDNN from k = 15, forward no slower than cuDNN at k = 7."""
    if k >= GOAL_FROM_K:
        return fwd_x >= GOAL_X and fb_x is not None and fb_x >= GOAL_X
    if k == 7:
        return fwd_x >= 1.0
    return None


def goals_table(rows) -> list:
    """Per shape and precision: ms of both impls, forward and forward + backward, the speed-up
    over cuDNN, our MAPE (output / grad input / grad weight) and the goal check."""
    cell = _cells(rows)
    if not cell:
        return []
    out = ["### tensorconv.torch against cuDNN depthwise (median ms; speed-up = cuDNN / ours)",
           "",
           f"Goal: forward + backward >= {GOAL_X:g}x cuDNN at every k >= {GOAL_FROM_K}; forward "
           f">= {GOAL_X:g}x from k = {GOAL_FROM_K} and no slower at k = 7.", "",
           "| shape (N, C, H, W) | precision | k | fwd ours | fwd cuDNN | fwd x | fwd+bwd ours "
           "| fwd+bwd cuDNN | fwd+bwd x | MAPE % ours (out / dx / dw) | MAPE % cuDNN | goal met |",
           "|" + "---|" * 12]
    met = total = 0
    points = sorted({key[:3] for key in cell},
                    key=lambda p: (p[0], PRECISIONS.index(p[1]) if p[1] in PRECISIONS else 9,
                                   p[2]))
    for shape, prec, k in points:
        get = lambda impl, p: cell.get((shape, prec, k, impl, p))  # noqa: E731
        fo, fc, bo, bc = get(OURS, "forward"), get(CUDNN, "forward"), get(OURS, "fwd_bwd"), \
            get(CUDNN, "fwd_bwd")
        if fo is None or fc is None:
            continue
        fx = fc["median_ms"] / fo["median_ms"]
        bx = bc["median_ms"] / bo["median_ms"] if bo and bc else None
        ok = goal(k, fx, bx)
        if ok is not None:
            total += 1
            met += ok

        def ms(r):
            return "—" if r is None else f"{r['median_ms']:.4g}"

        def errs(r):
            if r is None:
                return "—"
            return " / ".join("—" if r.get(f) is None else f"{r[f]:.2g}" for f in
                              ("mape_pct", "mape_grad_input_pct", "mape_grad_weight_pct"))

        out.append(f"| {'x'.join(map(str, shape))} | {prec} | {k} | {ms(fo)} | {ms(fc)} | "
                   f"{fx:.3g} | {ms(bo)} | {ms(bc)} | {'—' if bx is None else f'{bx:.3g}'} | "
                   f"{errs(bo or fo)} | {errs(bc or fc)} | "
                   f"{'—' if ok is None else ('yes' if ok else 'no')} |")
    return out + ["", f"torch goals met at {met} of {total} points.", ""]


def figures(plt, doc, out, stem) -> list:
    """One figure per shape: median ms against k, a panel per precision, tensorconv and cuDNN,
    forward solid and forward + backward dashed."""
    cell = _cells(doc["rows"])
    files = []
    for shape in sorted({key[0] for key in cell}):
        precs = [p for p in PRECISIONS if any(key[:2] == (shape, p) for key in cell)]
        fig, axes = plt.subplots(1, len(precs), figsize=(4.6 * len(precs), 4.0), squeeze=False)
        for ax, prec in zip(axes.flat, precs):
            for impl, colour in ((OURS, "tab:blue"), (CUDNN, "tab:orange")):
                for p, ls in (("forward", "-"), ("fwd_bwd", "--")):
                    pts = sorted((key[2], r["median_ms"]) for key, r in cell.items()
                                 if key[:2] == (shape, prec) and key[3:] == (impl, p))
                    if pts:
                        ax.plot(*zip(*pts), marker="o", ms=3, ls=ls, color=colour,
                                label=f"{'tensorconv' if impl == OURS else 'cuDNN'} "
                                      f"{'forward' if p == 'forward' else 'fwd+bwd'}")
            ax.set_yscale("log")
            ax.set_xlabel("kernel size k (k x k)")
            ax.set_ylabel("median ms (call)")
            ax.set_title(prec)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(f"tensorconv.torch vs cuDNN depthwise: {'x'.join(map(str, shape))} "
                     f"({doc['device']})", fontsize=10)
        fig.tight_layout()
        fn = out / f"{stem}_{'x'.join(map(str, shape))}.png"
        fig.savefig(fn, dpi=100)
        plt.close(fig)
        files.append(fn)
    return files
