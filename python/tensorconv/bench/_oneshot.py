"""One-shot calls against plans (--preset oneshot): the scipy-style call
tc.correlate2d(x, k, mode, boundary) with no plan kept, repeated with the same kernel (the plan
cache's hit), with a new kernel on an already-seen shape each call (a miss whose shape and
method were seen), and the prepared plan's call, for every mode x boundary, fp32 / fp16fp32 /
fp64 (float32 / float16 / float64 arrays, the precision scipy-style calls get), k = 3, 7, 15, 31,
55, 4096² and 16384², CuPy and NumPy inputs; peers timed the same way in the same run
(cupyx.scipy.signal correlate2d and fftconvolve, cupyx.scipy.ndimage.correlate, torch conv2d),
where they compute the same thing; where the plan is fft's in 'same' or 'full', both of its
layouts (plan_fft_rows, plan_fft_2d: the padded width is rarely a fast transform size). --quick:
4096², fp32, k = 3, 15, 55, valid/same, fill/symm.

Timing: wall clock with a device synchronisation before and after each call; the first call
(after the plan cache is emptied: the cold one-shot call, or the plan's construction and first
call, also given apart as build_ms and first_call_ms) reported apart from the steady state, the
median of 20 calls after it."""

from __future__ import annotations

import time

import numpy as np

SIZES = (4096, 16384)
KS = (3, 7, 15, 31, 55)
PRECISIONS = ("fp32", "fp16fp32", "fp64")
MODES = (("valid", "fill"), ("same", "fill"), ("same", "wrap"), ("same", "symm"),
         ("full", "fill"), ("full", "wrap"), ("full", "symm"))
QUICK = dict(sizes=(4096,), ks=(3, 15, 55), precisions=("fp32",),
             modes=(("valid", "fill"), ("same", "fill"), ("same", "symm")))
_DT = {"fp32": np.float32, "fp16fp32": np.float16, "fp64": np.float64}


def _sync_fn(cp):
    return (lambda: cp.cuda.runtime.deviceSynchronize()) if cp is not None else (lambda: None)


def _time(fn, sync, runs):
    """(first ms, steady median ms): wall clock, synchronised around each call."""
    def once(i):
        sync()
        t = time.perf_counter()
        fn(i)
        sync()
        return (time.perf_counter() - t) * 1e3

    first = once(0)
    ts = sorted(once(i + 1) for i in range(runs))
    return first, ts[len(ts) // 2]


def _peers(cp, torch, x, k, mode, boundary, prec):
    """name -> fn() of the peers that compute this correlation (device inputs)."""
    out = {}
    if prec == "fp16fp32":
        return out
    try:
        import cupyx.scipy.signal as sig

        out["cupyx.signal.correlate2d"] = lambda: sig.correlate2d(x, k, mode, boundary)
        if boundary == "fill":
            kf = cp.ascontiguousarray(k[::-1, ::-1])
            out["cupyx.signal.fftconvolve"] = lambda: sig.fftconvolve(x, kf, mode)
    except ImportError:
        pass
    if mode == "same" and k.shape[0] % 2:
        try:
            import cupyx.scipy.ndimage as nd

            ndm = {"fill": "constant", "wrap": "wrap", "symm": "reflect"}[boundary]
            out["cupyx.ndimage.correlate"] = lambda: nd.correlate(x, k, mode=ndm)
        except ImportError:
            pass
    if torch is not None and boundary == "fill" and mode in ("valid", "same"):
        F = torch.nn.functional
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        xt = torch.as_tensor(x, device="cuda")[None, None]
        kt = torch.as_tensor(k, device="cuda")[None, None]
        out["torch.conv2d"] = lambda: F.conv2d(xt, kt, padding=mode)
    return out


def oneshot_rows(sweep, quick=False, runs=20, sizes=None, ks=None, precisions=None):
    """Rows of one-shot calls, plan calls and peers (see the module docstring)."""
    import tensorconv as tc

    grid = dict(QUICK) if quick else dict(sizes=SIZES, ks=KS, precisions=PRECISIONS,
                                          modes=MODES)
    if sizes:
        grid["sizes"] = tuple(sizes)
    if ks:
        grid["ks"] = tuple(ks)
    if precisions:
        grid["precisions"] = tuple(p for p in precisions if p in _DT) or grid["precisions"]
    cp = torch = None
    if sweep.device.lib is not None:
        try:
            import cupy as cp
        except ImportError:
            sweep.log("oneshot: no CuPy: NumPy inputs only")
        try:
            import torch
            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None
    sync = _sync_fn(cp)
    rows = []
    rng = np.random.default_rng(0)
    for n in grid["sizes"]:
        host = rng.random((n, n), dtype=np.float32)
        for prec in grid["precisions"]:
            dt = _DT[prec]
            xh = host.astype(dt)
            inputs = [("numpy", xh)] + ([("cupy", cp.asarray(xh))] if cp is not None else [])
            for kk in grid["ks"]:
                kh_ = rng.random((kk, kk)).astype(dt)
                # a new kernel per call: distinct contents, made before the timing
                news = [(kh_ + np.asarray(1e-3 * (i + 1), dt)).astype(dt)
                        for i in range(runs + 1)]
                for lib, x in inputs:
                    k = cp.asarray(kh_) if lib == "cupy" else kh_
                    knew = [cp.asarray(a) for a in news] if lib == "cupy" else news
                    for mode, boundary in grid["modes"]:
                        if sweep.out_of_time():
                            sweep.skipped_for_time += 1
                            continue
                        base = {"part": "oneshot", "image": [n, n], "kernel": [kk, kk],
                                "precision": prec, "input": lib, "mode": mode,
                                "boundary": boundary, "timing": "wall_sync"}
                        rows += _one_config(tc, sweep, base, x, k, knew, mode, boundary, sync,
                                            runs, cp, torch, lib)
            del inputs
    return rows


def _one_config(tc, sweep, base, x, k, knew, mode, boundary, sync, runs, cp, torch, lib):
    rows = []

    def add(impl, first, steady, **extra):
        r = {"impl": impl, **base, "first_ms": first, "median_ms": steady, "runs": runs,
             **extra}
        rows.append(r)
        sweep.log(f"  {impl:28s} {base['input']:5s} {base['precision']:8s} {base['image'][0]}² "
                  f"k={base['kernel'][0]:<3d} {mode:5s} {boundary:4s}: first {first:9.3f} ms, "
                  f"steady {steady:9.3f} ms")

    try:
        tc.clear_plan_cache()
        one = lambda i: tc.correlate2d(x, k, mode, boundary)  # noqa: E731
        first, steady = _time(one, sync, runs)
        info = tc.plan_cache_info()
        method = tc.plan(k, x.shape, mode=mode, boundary=boundary).method
        add("oneshot", first, steady, method=method, cache_hits=info["hits"],
            cache_bytes=info["bytes"])
        new = lambda i: tc.correlate2d(x, knew[i], mode, boundary)  # noqa: E731
        before = tc.plan_cache_info()
        f_new, s_new = _time(new, sync, runs)
        after = tc.plan_cache_info()
        # re-prepared plans against new ones: whether the new kernels took the cheap path
        add("oneshot_new_kernel", f_new, s_new, method=method,
            rekernels=sum(d["rekernels"] for d in after["devices"].values())
            - sum(d["rekernels"] for d in before["devices"].values()),
            misses=after["misses"] - before["misses"])
        # the plan's first call in two parts: building it (the method's choice, cuFFT plans,
        # workspaces, kernel state) and its first call (module loading where this process has
        # not run the method yet, the pad index, the first launch)
        sync()
        t = time.perf_counter()
        p = tc.plan(k, x.shape, mode=mode, boundary=boundary)
        sync()
        t_built = time.perf_counter()
        p(x)
        sync()
        build_ms = (t_built - t) * 1e3
        first_call_ms = (time.perf_counter() - t_built) * 1e3
        p_first = build_ms + first_call_ms
        _, p_steady = _time(lambda i: p(x), sync, runs)
        a, b = one(0), p(x)
        equal = bool((cp.asnumpy(a) == cp.asnumpy(b)).all()) if lib == "cupy" else \
            bool((np.asarray(a) == np.asarray(b)).all())
        add("plan", p_first, p_steady, method=p.method, equal=equal, build_ms=build_ms,
            first_call_ms=first_call_ms)
        if mode != "valid":
            pv = tc.plan(k, x.shape, mode="valid")
            _, v_steady = _time(lambda i: pv(x), sync, runs)
            add("plan_valid", float("nan"), v_steady, method=pv.method)
        if p.method == "fft" and mode != "valid" and base["precision"] in ("fp32", "fp64"):
            # the padded width is rarely a fast transform size: fft's two layouts there (the
            # automatic choice takes rows only at fast widths)
            for layout in ("rows", "2d"):
                q = tc.plan(k, x.shape, mode=mode, boundary=boundary, method="fft",
                            precision=base["precision"], options={"fft.layout": layout})
                q_first, q_steady = _time(lambda i: q(x), sync, runs)
                add(f"plan_fft_{layout}", q_first, q_steady, method="fft")
        tc.clear_plan_cache()
    except Exception as e:  # a row that cannot run (memory at 16384² fp64): recorded, not fatal
        rows.append({"impl": "oneshot", **base, "median_ms": None, "error": repr(e)[:200]})
        sweep.log(f"  oneshot {base}: {e!r}")
        return rows
    if lib == "cupy":
        for name, fn in _peers(cp, torch, x, k, mode, boundary, base["precision"]).items():
            if sweep.out_of_time():
                break
            try:
                f, s = _time(lambda i: fn(), sync, runs)
                add(f"peer:{name}", f, s)
            except Exception as e:
                rows.append({"impl": f"peer:{name}", **base, "median_ms": None,
                             "error": repr(e)[:200]})
    return rows


def goals_table(rows) -> list:
    """The one-shot goals per configuration: the cached one-shot call against 1.15 x the plan's
    call of the same mode + 15 us (device inputs; the plan's valid call is a row of its own), a
    new kernel against the cached call + 0.25 ms, NumPy one-shot against 1.1 x the plan's host
    call."""
    sel = [r for r in rows if r.get("part") == "oneshot" and r.get("median_ms") is not None]
    if not sel:
        return []
    cell = {}
    for r in sel:
        cell[(r["input"], r["precision"], r["image"][0], r["kernel"][0], r["mode"],
              r["boundary"], r["impl"])] = r["median_ms"]
    out = ["### one-shot against plan (steady median ms)", "",
           "| input | precision | image | k | mode | boundary | one-shot | plan | ratio | "
           "new kernel | new - one-shot | goal met |", "|" + "---|" * 12]
    for key in sorted({k[:6] for k in cell}):
        one, pl = cell.get(key + ("oneshot",)), cell.get(key + ("plan",))
        if one is None or pl is None:
            continue
        new = cell.get(key + ("oneshot_new_kernel",))
        ok = one <= 1.1 * pl if key[0] == "numpy" else one <= 1.15 * pl + 0.015
        ok = ok and (new is None or new <= one + 0.25)
        out.append(f"| {key[0]} | {key[1]} | {key[2]}² | {key[3]} | {key[4]} | {key[5]} | "
                   f"{one:.4g} | {pl:.4g} | {one / pl:.3g} | "
                   f"{'—' if new is None else f'{new:.4g}'} | "
                   f"{'—' if new is None else f'{new - one:+.3g}'} | {'yes' if ok else 'no'} |")
    return out + [""]


def figures(plt, doc, out, stem) -> list:
    """Per (image, precision, input): steady ms against k, a panel per mode x boundary, a line
    per impl (one-shot, new kernel, plan, peers), first calls dotted."""
    rows = [r for r in doc["rows"] if r.get("part") == "oneshot" and r.get("median_ms")
            is not None]
    files = []
    for img, prec, lib in sorted({(r["image"][0], r["precision"], r["input"]) for r in rows}):
        sel = [r for r in rows if (r["image"][0], r["precision"], r["input"]) == (img, prec, lib)]
        panels = sorted({(r["mode"], r["boundary"]) for r in sel})
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2),
                                 squeeze=False)
        for a, (mode, bnd) in zip(axes.flat, panels):
            grp = [r for r in sel if (r["mode"], r["boundary"]) == (mode, bnd)]
            for impl in sorted({r["impl"] for r in grp}):
                pts = sorted((r["kernel"][0], r["median_ms"], r.get("first_ms")) for r in grp
                             if r["impl"] == impl)
                line = a.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                              label=impl.replace("peer:", ""))[0]
                if impl in ("oneshot", "plan"):
                    a.plot([p[0] for p in pts], [p[2] for p in pts], ls=":",
                           color=line.get_color(), label=f"{impl} (first call)")
            a.set_xscale("log")
            a.set_yscale("log")
            a.set_xlabel("k")
            a.set_ylabel("ms")
            a.set_title(f"{mode} / {bnd}", fontsize=9)
        axes.flat[0].legend(fontsize=6)
        fig.suptitle(f"one-shot vs plan: {img}² {prec} {lib} ({doc['device']})", fontsize=10)
        fig.tight_layout()
        fn = out / f"{stem}_{img}_{prec}_{lib}.png"
        fig.savefig(fn, dpi=110)
        plt.close(fig)
        files.append(fn)
    return files
