"""tensorconv.dask on 1..N GPUs (issues #23 item 5 and #19) against one correlate2d call.

A float32 host image (default 65536^2, 16 GB), kernel k x k, through
  * one_call: tensorconv.correlate2d on the whole host NumPy array (copies in, compute, copies
    out: end to end), and
  * dask: tensorconv.dask.correlate2d on a cluster with one worker per GPU (dask_cuda's
    LocalCUDACluster when importable, else a distributed SpecCluster of Nanny workers with
    CUDA_VISIBLE_DEVICES set per worker, as dask-cuda does), the image's chunks already in the
    workers' host memory, the result left there as host NumPy chunks: host to host, end to end.
Then exact equality: a SHA-1 of every result chunk (on the workers) against the same slice of the
one-call result. --device cpu runs the same code on a 2-process CPU LocalCluster (method direct).

Rows: {"impl", "gpus", "image", "kernel", "precision", "timing": "end_to_end", "seconds" (median),
"runs", "throughput_mpix_s", "ratio_to_one_call", "equal", "device"} in JSON (design.md's format)
plus a PNG of throughput against the number of GPUs.

  python benchmarks/dask_multi_gpu.py --size 65536 --k 15 --precision fp32 --gpus 1
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def make_block(block_id=None, *, chunk: int, size: int, seed: int):
    """Chunk (i, j) of the benchmark image: uniform [0, 1) float32 from its own seeded stream,
    so workers and the client build the same image without moving it."""
    i, j = block_id
    h, w = min(chunk, size - i * chunk), min(chunk, size - j * chunk)
    rng = np.random.Generator(np.random.PCG64([seed, i, j]))
    return rng.random((h, w), dtype=np.float32)


def host_image(size: int, chunk: int, seed: int) -> np.ndarray:
    x = np.empty((size, size), np.float32)
    n = -(-size // chunk)

    def fill(ij):
        i, j = ij
        x[i * chunk:(i + 1) * chunk, j * chunk:(j + 1) * chunk] = make_block(
            (i, j), chunk=chunk, size=size, seed=seed)

    with ThreadPoolExecutor(os.cpu_count()) as ex:
        list(ex.map(fill, [(i, j) for i in range(n) for j in range(n)]))
    return x


def _same_block(b):
    return b


def _interior_copy(b, h):
    return b[h:-h, h:-h] + np.float32(0)  # a fresh result, as a correlation's would be


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


def make_cluster(device: str, gpus: int, threads: int):
    from distributed import LocalCluster

    if device == "cpu":
        return LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                            dashboard_address=None), "LocalCluster (CPU, 2 processes)"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",")[:gpus] if visible else [str(i) for i in range(gpus)]
    try:
        from dask_cuda import LocalCUDACluster

        return (LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(ids), threads_per_worker=threads,
                                 dashboard_address=None), "dask_cuda.LocalCUDACluster")
    except ImportError:
        pass
    from distributed import Nanny, Scheduler, SpecCluster

    workers = {f"gpu{g}": {"cls": Nanny, "options": {"nthreads": threads,
                                                     "env": {"CUDA_VISIBLE_DEVICES": g}}}
               for g in ids}
    return (SpecCluster(workers=workers, scheduler={"cls": Scheduler,
                                                    "options": {"dashboard_address": None}}),
            "distributed.SpecCluster of Nanny workers, CUDA_VISIBLE_DEVICES per worker")


def device_name(device: str) -> str:
    if device == "cpu":
        import platform

        return platform.processor() or platform.machine()
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception:  # noqa: BLE001 - the name is only a label
        return "cuda"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--chunk", type=int, default=8192)
    ap.add_argument("--k", type=int, nargs="+", default=[15])
    ap.add_argument("--precision", nargs="+", default=["fp32"])
    ap.add_argument("--method", default=None, help="default: naive_shmem (GPU), direct (CPU)")
    ap.add_argument("--mode", default="same")
    ap.add_argument("--boundary", nargs="+", default=["fill"],
                    help="each is timed and checked for equality (fill: fillvalue 0.5)")
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--threads", type=int, default=16, help="threads per worker")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--overhead", action="store_true",
                    help="also time Dask's halos and a fresh result per chunk, no correlation")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--out", default="benchmarks/results/dask_multi_gpu.json")
    ap.add_argument("--png", default=None)
    a = ap.parse_args(argv)

    import dask.array as da
    from distributed import Client, wait

    import tensorconv as tc
    import tensorconv.dask as tcd

    method = a.method or ("naive_shmem" if a.device == "cuda" else "direct")
    dev = device_name(a.device)
    n = -(-a.size // a.chunk)
    chunks = (tuple(min(a.chunk, a.size - i * a.chunk) for i in range(n)),) * 2
    t = time.perf_counter()
    x = host_image(a.size, a.chunk, seed=1)
    print(f"image {a.size}^2 float32 ({x.nbytes / 2**30:.1f} GiB) built in "
          f"{time.perf_counter() - t:.1f} s; device {dev}", flush=True)
    rows = []
    cluster, kind = make_cluster(a.device, a.gpus, a.threads)
    with cluster, Client(cluster) as client:
        print("cluster:", kind, flush=True)
        dx = da.map_blocks(make_block, chunks=chunks, dtype=np.float32,
                           meta=np.empty((0, 0), np.float32), chunk=a.chunk, size=a.size,
                           seed=1)
        dx = client.persist(dx)
        wait(dx)
        for prec, k, bnd in [(p, k, b) for p in a.precision for k in a.k for b in a.boundary]:
            ker = np.random.default_rng(k).random((k, k))
            # one call on the whole host array (a small call first: context, module load)
            tc.correlate2d(x[:256, :256], ker, a.mode, bnd, 0.5, method=method, precision=prec)
            times = []
            for _ in range(a.runs):
                t = time.perf_counter()
                ref = tc.correlate2d(x, ker, a.mode, bnd, 0.5, method=method,
                                     precision=prec)
                times.append(time.perf_counter() - t)
                if _ < a.runs - 1:
                    del ref
            one = statistics.median(times)
            mpix = a.size * a.size / one / 1e6
            print(f"one call  k={k} {prec} {bnd}: {times} s -> {mpix:.0f} Mpix/s", flush=True)
            rows.append({"impl": method, "peer": "one_call", "gpus": 1 if a.device == "cuda"
                         else 0, "image": [a.size, a.size], "kernel": [k, k],
                         "precision": prec, "mode": a.mode, "boundary": bnd,
                         "timing": "end_to_end", "seconds": one, "runs": a.runs,
                         "all_seconds": times,
                         "throughput_mpix_s": mpix, "device": dev})
            out = tcd.correlate2d(dx, ker, a.mode, bnd, 0.5, method=method,
                                  precision=prec)
            times, res = [], None
            for r in range(a.runs):
                res = None
                # a fresh output name per run: the last run's chunks are never reused
                run_out = out.map_blocks(_same_block, name=f"tc-dask-{prec}-{k}-{bnd}-{r}",
                                         dtype=out.dtype, meta=out._meta)
                t = time.perf_counter()
                res = client.persist(run_out)
                wait(res)
                times.append(time.perf_counter() - t)
            sec = statistics.median(times)
            if a.overhead:
                # the same halos and a fresh result per chunk, no correlation: what Dask's
                # graph, halo concatenation and result allocation cost on their own
                h = k // 2
                ov = da.map_overlap(_interior_copy, dx, depth=h, boundary=0.5, trim=False,
                                    dtype=np.float32, h=h, name=f"tc-overhead-{k}")
                t = time.perf_counter()
                ovp = client.persist(ov)
                wait(ovp)
                ov_s = time.perf_counter() - t
                del ovp
                print(f"dask halo + copy only (no correlation): {ov_s:.2f} s", flush=True)
                rows.append({"impl": "dask_halo_and_copy_only", "peer": "overhead",
                             "gpus": 0, "image": [a.size, a.size], "kernel": [k, k],
                             "precision": prec, "threads_per_worker": a.threads, "chunk": [a.chunk, a.chunk],
                             "timing": "end_to_end", "seconds": ov_s, "runs": 1,
                             "throughput_mpix_s": a.size * a.size / ov_s / 1e6,
                             "device": dev})
            # bit-for-bit: a SHA-1 per result chunk, on the workers, vs the one call's slices
            import dask

            blocks = res.to_delayed()
            hs = dask.compute(*[dask.delayed(sha)(b) for b in blocks.ravel()],
                              scheduler=client)
            ends = [np.cumsum((0,) + c) for c in res.chunks]
            with ThreadPoolExecutor(os.cpu_count()) as ex:  # hashlib releases the GIL
                want = list(ex.map(
                    lambda ij: sha(ref[ends[0][ij[0]]:ends[0][ij[0] + 1],
                                       ends[1][ij[1]]:ends[1][ij[1] + 1]]),
                    [(i, j) for i in range(blocks.shape[0])
                     for j in range(blocks.shape[1])]))
            equal = list(hs) == want and tuple(res.shape) == ref.shape
            del res, ref
            mpix = a.size * a.size / sec / 1e6
            print(f"dask      k={k} {prec} {bnd}: {times} s -> {mpix:.0f} Mpix/s, "
                  f"{sec and one / sec:.2f}x one call, equal={equal}", flush=True)
            rows.append({"impl": method, "peer": "tensorconv.dask", "cluster": kind,
                         "gpus": a.gpus if a.device == "cuda" else 0,
                         "workers": a.gpus if a.device == "cuda" else 2,
                         "threads_per_worker": a.threads, "chunk": [a.chunk, a.chunk],
                         "image": [a.size, a.size], "kernel": [k, k], "precision": prec,
                         "mode": a.mode, "boundary": bnd, "timing": "end_to_end",
                         "seconds": sec,
                         "runs": a.runs, "all_seconds": times, "throughput_mpix_s": mpix,
                         "ratio_to_one_call": one / sec, "equal": equal, "device": dev})
    doc = {"device": dev, "created": datetime.datetime.now(datetime.timezone.utc)
           .strftime("%Y-%m-%dT%H:%M:%SZ"), "tensorconv": tc.__version__,
           "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                        "dask": __import__("dask").__version__},
           "rows": rows}
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print("wrote", a.out)
    plot(doc, a.png or os.path.splitext(a.out)[0] + ".png")
    return 0 if all(r.get("equal", True) for r in rows) else 1


def plot(doc, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    keys = sorted({(r["kernel"][0], r["precision"]) for r in doc["rows"]})
    for k, p in keys:
        rs = [r for r in doc["rows"] if r["kernel"][0] == k and r["precision"] == p]
        d = sorted((r["gpus"], r["throughput_mpix_s"]) for r in rs
                   if r["peer"] not in ("one_call", "overhead"))
        one = [r["throughput_mpix_s"] for r in rs if r["peer"] == "one_call"]
        if d:
            ax.plot([g for g, _ in d], [v for _, v in d], "o-", label=f"dask k={k} {p}")
        if one:
            ax.axhline(one[0], ls="--", lw=1, label=f"one call k={k} {p}")
    r0 = doc["rows"][0]
    ax.set_xlabel("GPUs (workers)")
    ax.set_ylabel("Mpixel/s, end to end (host in, host out)")
    ax.set_title(f"tensorconv.dask {r0['image'][0]}² float32, {doc['device']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("wrote", path)


if __name__ == "__main__":
    sys.exit(main())
