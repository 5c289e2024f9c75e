"""The sweep: every (image size, kernel size) of a part, every registry method x precision asked
for through the public Plan, and the peers, rows in design.md's format. One image per size (the
first USC-SIPI misc image resized, as the paper resizes 'cameraman'; a fixed uniform random
image where the data are absent, said so in the file); kernels uniform in [0, 1) from a fixed
seed ('random') or a Gaussian ('gaussian', sigma = k / 6, rank 1); MAPE (%, eq. 20) against a
float64 reference of the same image (by FFT, within ~1e-15 of correlate2d)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

import tensorconv as tc

from . import _peers
from ._timing import L2_BYTES, Device, time_device, time_host, time_interleaved

_ESIZE = {"float16": 2, "float32": 4, "float64": 8}


@dataclass
class Part:
    """One sweep of a preset (a table or figure of a paper)."""
    name: str
    sizes: tuple                      # square image sides
    kernels: tuple                    # square kernel sides
    precisions: tuple
    methods: tuple                    # registry names (and 'auto')
    peers: tuple = ()
    kind: str = "random"              # 'random' or 'gaussian'
    timing: tuple = ("kernel",)       # 'kernel', 'call' (no sleep kernel), 'end_to_end'
    gaussian_for: tuple = ()          # methods also timed on a Gaussian kernel (rank-1 case)
    runs: int = 20
    warm: int = 3
    only: dict = field(default_factory=dict)  # precision -> the impls timed at it (else all)
    device: str | None = None         # where 'auto' runs (None: the GPU when there is one)
    interleave: bool = False          # host-timed impls of a point timed in shared rounds
    data: str = "finite"              # 'nonfinite': a NaN, a +inf and a -inf in the image

    def wants(self, impl: str, precision: str) -> bool:
        return precision not in self.only or impl in self.only[precision]


def random_kernel(k: int) -> np.ndarray:
    return np.random.default_rng(1000 + k).random((k, k))


def gaussian_kernel(k: int) -> np.ndarray:
    x = np.arange(k) - (k - 1) / 2
    g = np.exp(-0.5 * (x / max(k / 6, 0.5)) ** 2)
    return np.outer(g, g) / g.sum() ** 2


KERNELS = {"random": random_kernel, "gaussian": gaussian_kernel}


def test_image(n: int, source: str = "usc-sipi") -> tuple:
    """(name, float64 n x n image in [0, 1])."""
    if source == "usc-sipi":
        try:
            from scipy.ndimage import zoom

            from tensorconv.datasets import load_usc_sipi

            name, img = next(iter(load_usc_sipi()))
            out = zoom(img, (n / img.shape[0], n / img.shape[1]), order=1, grid_mode=True,
                       mode="nearest")
            return f"USC-SIPI {name} resized to {n}x{n}", np.clip(out, 0, 1)[:n, :n]
        except (FileNotFoundError, StopIteration):
            pass
    return f"uniform random {n}x{n} (seed 0)", np.random.default_rng(0).random((n, n))


def plant_nonfinite(img: np.ndarray) -> np.ndarray:
    """A copy with a NaN, a +inf and a -inf at fixed places (inside, centre, near a corner)."""
    n = img.shape[0]
    out = img.copy()
    out[n // 3, n // 5], out[n // 2, n // 2], out[n - 7, 3] = np.nan, np.inf, -np.inf
    return out


def reference(image: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """float64 valid correlation by FFT of the image's size (no wrap reaches the valid part)."""
    import scipy.fft as sf

    h, w = image.shape
    kh, kw = kernel.shape
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/inf planted (data='nonfinite')
        spec = sf.rfft2(image, workers=-1) * np.conj(sf.rfft2(kernel, s=(h, w), workers=-1))
        out = sf.irfft2(spec, s=(h, w), workers=-1)
    return np.ascontiguousarray(out[:h - kh + 1, :w - kw + 1])


class _Ref:
    """The float64 reference of one image and kernel, computed at first use (host, device)."""

    def __init__(self, image, kernel, device):
        self.image, self.kernel, self.device = image, kernel, device
        self.shape = (image.shape[0] - kernel.shape[0] + 1, image.shape[1] - kernel.shape[1] + 1)
        self._host = self._dev = None

    @property
    def host(self):
        if self._host is None:
            self._host = reference(self.image, self.kernel)
        return self._host

    @property
    def dev(self):
        if self._dev is None:
            self._dev = self.device.to_device(self.host, "float64")
        return self._dev


@dataclass
class Sweep:
    device: Device
    deadline: float
    row_cap_s: float = 10.0
    log: object = print
    image_source: str = "usc-sipi"
    rows: list = field(default_factory=list)
    images: dict = field(default_factory=dict)
    skipped_for_time: int = 0
    _pending: list | None = None      # (fn, rows to complete, digits) while a point interleaves

    def out_of_time(self) -> bool:
        return time.time() > self.deadline

    def run(self, part: Part, progress=None):
        infos = {m.name: m for m in tc.methods()}
        peers = _peers.usable(part.peers, self.log) if part.peers else []
        # smallest images first: a run cut short by --budget-s still covers every k there
        for n in sorted(part.sizes):
            label, img = test_image(n, self.image_source)
            if part.data == "nonfinite":  # the repair passes run (rows say "data")
                img = plant_nonfinite(img)
                label += ", a NaN, a +inf and a -inf planted"
            self.images[str(n)] = label
            for k in part.kernels:
                if k > n:
                    continue
                if self.out_of_time():
                    self.skipped_for_time += 1
                    if progress:
                        progress.update(1)
                    continue
                kinds = [part.kind] + (["gaussian"] if part.gaussian_for and part.kind != "gaussian"
                                       else [])
                for kind in kinds:
                    kernel = KERNELS[kind](k)
                    ref = _Ref(img, kernel, self.device)
                    names = part.methods if kind == part.kind else part.gaussian_for
                    self._pending = [] if part.interleave else None
                    self._methods(part, infos, names, n, k, kind, img, kernel, ref)
                    if kind == part.kind:
                        self._peers(part, peers, n, k, kind, img, kernel, ref)
                    self._flush(part)
                if progress:
                    progress.update(1)

    # ---- registry methods ----------------------------------------------------------------
    def _methods(self, part, infos, names, n, k, kind, img, kernel, ref):
        for name in names:
            info = infos.get(name)
            device = info.device if info else (part.device or ("cuda" if self.device.lib
                                                                 else None))
            if name != "auto" and (info is None or not info.available):
                continue
            if device == "cuda" and self.device.lib is None:
                continue
            for prec in part.precisions:
                if (info is not None and prec not in info.precisions) or not part.wants(name, prec):
                    continue
                if self.out_of_time():
                    self.skipped_for_time += 1
                    continue
                base = {"impl": name, "precision": prec, "image": [n, n], "kernel": [k, k],
                        "kernel_kind": kind, "part": part.name,
                        **({"data": part.data} if part.data != "finite" else {})}
                mem0 = self.device.memory() if device == "cuda" else None
                try:
                    p = tc.plan(kernel, (n, n), mode="valid", method=name, precision=prec,
                                device=device)
                except (ValueError, TypeError, MemoryError, RuntimeError) as e:
                    self.rows.append({**base, "timing": part.timing[0], "median_ms": None,
                                      "note": f"plan failed: {e}"})
                    continue
                chosen = {"chose": p.method} if name == "auto" else {}
                try:
                    if p._device == "cuda":
                        self._device_rows(part, p, base, chosen, img, ref.dev, mem0)
                    else:
                        self._host_rows(part, p, base, chosen, img, ref)
                except (ValueError, MemoryError, RuntimeError) as e:
                    self.rows.append({**base, "timing": part.timing[0], "median_ms": None,
                                      "note": f"run failed: {e}", **chosen})
                del p

    def _device_rows(self, part, p, base, chosen, img, ref_dev, mem0):
        """mem0: the device's (free, pool) before the plan was made."""
        dev = self.device
        storage = p.storage
        n_in = max(1, min(8, -(-2 * L2_BYTES // (img.size * _ESIZE[storage]))))
        free0, pool0 = mem0
        xs = [dev.to_device(img, storage) for _ in range(n_in)]
        outs = {}

        def fn(i):
            outs[0] = p(xs[i % n_in])

        fn(0)
        free1, pool1 = dev.memory()
        # what the plan's own allocations (workspace, library handles) took from the device,
        # less what the array library's pool grew by (inputs and the output live there)
        measured = max(0, (free0 - free1) - (pool1 - pool0))
        mp = dev.mape(outs[0], ref_dev)
        extra = {"extra_bytes": int(p.workspace_bytes), "extra_bytes_measured": int(measured),
                 "mape_pct": mp}
        for timing in ("kernel", "call"):
            if timing in part.timing:
                ms, runs = time_device(dev, fn, part.runs, part.warm, self.row_cap_s,
                                       sleep=timing == "kernel")
                self._add({**base, "timing": timing, "median_ms": round(ms, 5), "runs": runs,
                           **extra, **chosen})
        if "end_to_end" in part.timing and not self.out_of_time():
            host = np.ascontiguousarray(img.astype(storage))
            ms, runs = time_host(lambda i: p(host), part.runs, part.warm, self.row_cap_s)
            self._add({**base, "timing": "end_to_end", "median_ms": round(ms, 4), "runs": runs,
                       **extra, **chosen})

    def _host_rows(self, part, p, base, chosen, img, ref):
        from tensorconv.metrics import mape

        host = np.ascontiguousarray(img.astype(p.storage))
        out = p(host)
        extra = {"extra_bytes": int(p.workspace_bytes), "mape_pct": _finite_or_none(mape, out, ref.host)}
        if self._pending is not None:
            self._pending.append((lambda i: p(host), [{**base, "timing": t, **extra, **chosen}
                                                      for t in part.timing], 4))
            return
        ms, runs = time_host(lambda i: p(host), part.runs, part.warm, self.row_cap_s)
        load1 = _load1()
        for timing in part.timing:  # a CPU method's kernel time is its end-to-end time
            self._add({**base, "timing": timing, "median_ms": round(ms, 4), "runs": runs,
                       **extra, **chosen, **load1})

    # ---- peers -----------------------------------------------------------------------------
    def _peers(self, part, peers, n, k, kind, img, kernel, ref):
        from tensorconv.metrics import mape

        for name in peers:
            dev_kind, precs, make, rate = _peers.PEERS[name]
            for prec in part.precisions:
                if prec not in precs or not part.wants("peer:" + name, prec) or self.out_of_time():
                    continue
                base = {"impl": "peer:" + name, "precision": prec, "image": [n, n],
                        "kernel": [k, k], "kernel_kind": kind, "part": part.name}
                macs = float(n - k + 1) ** 2 * k * k
                if rate and macs / rate > self.row_cap_s:
                    self.log(f"peer {name} {prec} {n}x{n} k={k} skipped: about "
                             f"{macs / rate:.0f} s a call")
                    continue
                try:
                    fn, crop = make(img, kernel, prec)
                    out = fn()
                    if dev_kind == "cuda":
                        mp = self.device.mape(out[crop] if crop else out, ref.dev) \
                            if (crop or tuple(out.shape) == ref.shape) else None
                        dev_timings = [t for t in ("kernel", "call") if t in part.timing] or \
                            ["kernel"]
                        timed = {t: time_device(self.device, lambda i: fn(), part.runs, part.warm,
                                                self.row_cap_s, sleep=t == "kernel")
                                 for t in dev_timings}
                    else:
                        o = np.asarray(out)[crop] if crop else np.asarray(out)
                        mp = _finite_or_none(mape, o, ref.host) if o.shape == ref.shape else None
                        if self._pending is not None:
                            self._pending.append((lambda i, fn=fn: fn(), [
                                {**base, "timing": t, "mape_pct": mp} for t in part.timing], 5))
                            continue
                        ms, runs = time_host(lambda i: fn(), part.runs, part.warm, self.row_cap_s)
                    load1 = _load1() if dev_kind == "cpu" else {}
                except _peers.PeerSkip as e:
                    self.log(f"peer {name} {prec} skipped: {e}")
                    continue
                except Exception as e:  # a peer's own failure is a row note, never a traceback
                    self.rows.append({**base, "timing": "kernel", "median_ms": None,
                                      "note": f"{type(e).__name__}: {e}"})
                    continue
                # a CPU peer's call is both its kernel and its end-to-end time
                if dev_kind != "cuda":
                    timed = {t: (ms, runs) for t in part.timing}
                for timing, (ms, runs) in timed.items():
                    self._add({**base, "timing": timing, "median_ms": round(ms, 5), "runs": runs,
                               "mape_pct": mp, **load1})

    def _flush(self, part):
        """Time the point's pending host calls in shared rounds and add their rows."""
        pending, self._pending = self._pending, None
        if not pending:
            return
        res = time_interleaved([fn for fn, _, _ in pending], part.runs, part.warm, self.row_cap_s)
        load1 = _load1()
        for (_, rows, digits), (ms, runs) in zip(pending, res):
            for row in rows:
                self._add({**row, "median_ms": round(ms, digits), "runs": runs, **load1})

    def _add(self, row):
        self.rows.append(row)


def _load1() -> dict:
    """The 1-minute load average beside a host-timed row (the CPU is often shared)."""
    try:
        return {"load1": round(os.getloadavg()[0], 2)}
    except OSError:
        return {}


def _finite_or_none(metric, out, ref):
    o = np.asarray(out, dtype=np.float64)
    return metric(o, ref) if np.isfinite(o).all() else None


def grid_size(parts) -> int:
    return sum(sum(1 for n in p.sizes for k in p.kernels if k <= n) for p in parts)


def estimate_note(rows) -> str:
    t = [r["median_ms"] for r in rows if r.get("median_ms")]
    return f"{len(rows)} rows, {sum(t) / 1e3 if t else 0:.1f} s of timed medians" if t else ""
