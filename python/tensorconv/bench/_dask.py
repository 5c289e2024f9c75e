"""tensorconv.dask on 1..N GPUs against one correlate2d call.

A float32 host image (default 65536², 16 GB), kernel k x k, through
  * one_call: tensorconv.correlate2d on the whole host NumPy array (copies in, compute, copies
    out: end to end), and
  * dask: tensorconv.dask.correlate2d on a cluster with one worker per GPU (dask_cuda's
    LocalCUDACluster when importable, else a distributed SpecCluster of Nanny workers with
    CUDA_VISIBLE_DEVICES set per worker, as dask-cuda does), the image's chunks already in the
    workers' host memory, the result left there as host NumPy chunks: host to host, end to end.
Then exact equality: a SHA-1 of every result chunk (on the workers) against the same slice of the
one-call result ("equal"). --halos gather (default; halos read from the neighbouring
blocks, no map_overlap) and/or map_overlap, each timed and checked. --device cpu runs the
same code on a 2-process CPU LocalCluster (method direct). --overhead: Dask's halos and a fresh result per chunk alone, no correlation.
Rows: "seconds" (median of --runs, default 3), "median_ms", "throughput_mpix_s",
"ratio_to_one_call", "equal"."""

from __future__ import annotations

import hashlib
import os
import statistics
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
                            dashboard_address=":0"), "LocalCluster (CPU, 2 processes)"
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


def plan(device, gpus, size, chunk, ks, precisions, boundaries, method, mode) -> dict:
    """What a run does (checked before any cluster starts): the method, the chunk grid and
    the (precision, k, boundary) cases."""
    if size < 1 or chunk < 1:
        raise ValueError(f"--sizes and --chunk must be positive; got {size}, {chunk}")
    if device == "cuda" and gpus < 1:
        raise ValueError(f"--gpus must be at least 1; got {gpus}")
    method = method or ("naive_shmem" if device == "cuda" else "direct")
    n = -(-size // chunk)
    return {"method": method, "chunks": (tuple(min(chunk, size - i * chunk) for i in range(n)),)
            * 2, "cases": [(p, k, b) for p in precisions for k in ks for b in boundaries],
            "mode": mode}


def _warm(ker, mode, bnd, method, prec) -> None:
    import tensorconv as tc

    tc.correlate2d(np.ones((256, 256), np.float32), ker, mode, bnd, 0.5, method=method,
                   precision=prec)


def _held(client) -> int:
    """Keys the cluster's workers hold in memory."""
    return sum(client.run(lambda dask_worker: len(dask_worker.data)).values())


def _settle(client, n_base: int, timeout: float = 60.0) -> None:
    """Wait until the workers hold only the image again: a released 16 GB result is freed
    asynchronously, and a run timed while it goes measured 16 s instead of 5 (docs/design/dask.md)."""
    t0 = time.monotonic()
    while _held(client) > n_base and time.monotonic() - t0 < timeout:
        time.sleep(0.05)


def dask_rows(sweep, dev, device, gpus, size, chunk, ks, precisions, boundaries, method,
              mode, threads, runs, overhead, halos=("gather",)) -> list:
    import dask
    import dask.array as da
    from distributed import Client, wait

    import tensorconv as tc
    import tensorconv.dask as tcd

    pl = plan(device, gpus, size, chunk, ks, precisions, boundaries, method, mode)
    method = pl["method"]
    # the pinned pool's cap for results (the workers inherit it): past it a result is pageable,
    # unpacked from pinned staging (2 GPUs, docs/design/dask.md: 0.96 s at 2048 MB, 0.54 s at 24 GB)
    pinned_mb = int(os.environ.get("TENSORCONV_PINNED_MB", "").strip() or 2048)
    t = time.perf_counter()
    x = host_image(size, chunk, seed=1)
    sweep.log(f"image {size}^2 float32 ({x.nbytes / 2**30:.1f} GiB) built in "
              f"{time.perf_counter() - t:.1f} s; device {dev}")
    rows = []
    cluster, kind = make_cluster(device, gpus, threads)
    with cluster, Client(cluster) as client:
        sweep.log(f"cluster: {kind}")
        dx = da.map_blocks(make_block, chunks=pl["chunks"], dtype=np.float32,
                           meta=np.empty((0, 0), np.float32), chunk=chunk, size=size, seed=1)
        dx = client.persist(dx)
        wait(dx)
        n_base = _held(client)
        for prec, k, bnd in pl["cases"]:
            ker = np.random.default_rng(k).random((k, k))
            base = {"impl": method, "image": [size, size], "kernel": [k, k],
                    "kernel_kind": "random", "part": "dask", "precision": prec, "mode": mode,
                    "boundary": bnd, "timing": "end_to_end", "device": dev,
                    "pinned_mb": pinned_mb}
            # one call on the whole host array (a small call first: context, module load)
            tc.correlate2d(x[:256, :256], ker, mode, bnd, 0.5, method=method, precision=prec)
            # the same on the workers (their CUDA context and module), outside the timing
            client.run(_warm, ker, mode, bnd, method, prec)
            times = []
            for i in range(runs):
                t = time.perf_counter()
                ref = tc.correlate2d(x, ker, mode, bnd, 0.5, method=method, precision=prec)
                times.append(time.perf_counter() - t)
                if i < runs - 1:
                    del ref
            one = statistics.median(times)
            mpix = size * size / one / 1e6
            sweep.log(f"one call  k={k} {prec} {bnd}: {times} s -> {mpix:.0f} Mpix/s")
            rows.append({**base, "peer": "one_call", "gpus": 1 if device == "cuda" else 0,
                         "seconds": one, "median_ms": one * 1e3, "runs": runs,
                         "all_seconds": times, "throughput_mpix_s": mpix})
            for hi, hal in enumerate(halos):
                out = tcd.correlate2d(dx, ker, mode, bnd, 0.5, method=method, precision=prec,
                                      halos=hal)
                times, res = [], None
                for r in range(runs):
                    res = None
                    _settle(client, n_base)  # the last run's result gone from the worker
                    # a fresh output name per run: the last run's chunks are never reused
                    run_out = out.map_blocks(_same_block,
                                             name=f"tc-dask-{prec}-{k}-{bnd}-{hal}-{r}",
                                             dtype=out.dtype, meta=out._meta)
                    t = time.perf_counter()
                    res = client.persist(run_out)
                    wait(res)
                    times.append(time.perf_counter() - t)
                sec = statistics.median(times)
                if overhead and hi == 0:
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
                    sweep.log(f"dask halo + copy only (no correlation): {ov_s:.2f} s")
                    rows.append({**base, "impl": "dask_halo_and_copy_only", "peer": "overhead",
                                 "gpus": 0, "threads_per_worker": threads,
                                 "chunk": [chunk, chunk], "seconds": ov_s,
                                 "median_ms": ov_s * 1e3, "runs": 1,
                                 "throughput_mpix_s": size * size / ov_s / 1e6})
                # bit-for-bit: a SHA-1 per result chunk, on the workers, vs the one call's
                # slices
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
                del res, blocks
                mpix = size * size / sec / 1e6
                sweep.log(f"dask ({hal}) k={k} {prec} {bnd}: {[round(v, 3) for v in times]} s "
                          f"-> {mpix:.0f} Mpix/s, {sec and one / sec:.2f}x one call, "
                          f"equal={equal}")
                rows.append({**base, "peer": "tensorconv.dask", "cluster": kind, "halos": hal,
                             "gpus": gpus if device == "cuda" else 0,
                             "workers": gpus if device == "cuda" else 2,
                             "threads_per_worker": threads, "chunk": [chunk, chunk],
                             "seconds": sec, "median_ms": sec * 1e3, "runs": runs,
                             "all_seconds": times, "throughput_mpix_s": mpix,
                             "ratio_to_one_call": one / sec, "equal": equal})
            del ref
            _settle(client, n_base)
    return rows


def figures(plt, doc, out, stem) -> list:
    rows = [r for r in doc["rows"] if r.get("part") == "dask"]
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(6, 4))
    caps = {r.get("pinned_mb") for r in rows}
    keys = sorted({(r["kernel"][0], r["precision"], r.get("pinned_mb") or 0) for r in rows})
    for k, p, cap in keys:
        rs = [r for r in rows if r["kernel"][0] == k and r["precision"] == p
              and (r.get("pinned_mb") or 0) == cap]
        tag = f" k={k} {p}" + (f" pinned {cap} MB" if len(caps) > 1 else "")
        d = sorted((r["gpus"], r["throughput_mpix_s"]) for r in rs
                   if r["peer"] not in ("one_call", "overhead"))
        one = [r["throughput_mpix_s"] for r in rs if r["peer"] == "one_call"]
        color = None
        if d:
            color = ax.plot([g for g, _ in d], [v for _, v in d], "o-",
                            label=f"dask{tag}")[0].get_color()
        if one:
            ax.axhline(one[0], ls="--", lw=1, color=color, label=f"one call{tag}")
    ax.set_xticks(sorted({r["gpus"] for r in rows}))
    ax.set_xlabel("GPUs (workers; 0: CPU LocalCluster)")
    ax.set_ylabel("Mpixel/s, end to end (host in, host out)")
    ax.set_title(f"tensorconv.dask {rows[0]['image'][0]}² float32, {doc['device']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fn = out / f"{stem}.png"
    fig.savefig(fn, dpi=120)
    plt.close(fig)
    return [fn]
