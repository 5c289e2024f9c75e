"""tensorconv.dask: chunked correlate2d/convolve2d equal to one call on the whole
array, bit for bit for the translation-invariant methods, on a 2-process distributed.LocalCluster
(4096^2 float64 in 1024^2 chunks, every boundary and mode; a (B, H, W) stack), with a worker killed
mid-computation; bad input gives clear errors; a failing chunk raises."""

import itertools
import os
import signal
import time

import numpy as np
import pytest

import tensorconv as tc

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
import tensorconv.dask as tcd  # noqa: E402
from dask.core import flatten, get_dependencies  # noqa: E402

# from_array of a NumPy array ships its chunks inside the graph (128 MB here, on purpose)
pytestmark = pytest.mark.filterwarnings("ignore:Sending large graph")

MODES = ("full", "same", "valid")
BOUNDARIES = ("fill", "wrap", "symm")


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


# ---- local (threaded scheduler): small shapes, every path of the halo arithmetic ----

@pytest.mark.parametrize("convolve", [False, True])
@pytest.mark.parametrize("kshape", [(5, 4), (1, 1), (6, 9), (3, 3), (2, 7)])
def test_every_mode_boundary_and_chunking(convolve, kshape):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((203, 157))
    k = rng.standard_normal(kshape)
    f, g = (tcd.convolve2d, tc.convolve2d) if convolve else (tcd.correlate2d, tc.correlate2d)
    with dask.config.set(scheduler="threads"):
        for mode, bnd in itertools.product(MODES, BOUNDARIES):
            ref = g(x, k, mode, bnd, fillvalue=1.5, method="direct")
            # uneven chunks, one chunk
            for chunks in [(50, 40), (203, 157), (64, 33)]:
                out = f(da.from_array(x, chunks=chunks), k, mode, bnd, fillvalue=1.5,
                        method="direct")
                assert out.shape == ref.shape
                assert _same(out.compute(), ref), (mode, bnd, chunks)


@pytest.mark.parametrize("convolve", [False, True])
def test_chunks_smaller_than_the_halo_are_merged(convolve):
    rng = np.random.default_rng(8)
    x, k = rng.standard_normal((40, 36)), rng.standard_normal((6, 9))
    f, g = (tcd.convolve2d, tc.convolve2d) if convolve else (tcd.correlate2d, tc.correlate2d)
    with dask.config.set(scheduler="threads"):
        for mode, bnd in itertools.product(MODES, BOUNDARIES):
            out = f(da.from_array(x, chunks=(2, 3)), k, mode, bnd, method="direct")
            assert min(out.chunks[0] + out.chunks[1]) >= 1
            assert _same(out.compute(), g(x, k, mode, bnd, method="direct")), (mode, bnd)


def test_same_mode_keeps_the_input_chunks():
    x = da.zeros((300, 200), chunks=(100, 50))
    out = tcd.correlate2d(x, np.ones((5, 6)), "same", "symm")
    assert out.chunks == x.chunks


@pytest.mark.parametrize("precision,dtype", [("fp32", np.float32), ("fp16fp32", np.float16),
                                             ("fp64", np.float64)])
def test_precisions_and_auto(precision, dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((130, 170)).astype(dtype)
    k = rng.standard_normal((7, 5))
    with dask.config.set(scheduler="threads"):
        for method in ("direct", "auto"):
            out = tcd.correlate2d(da.from_array(x, chunks=(40, 60)), k, "same", "wrap",
                                  method=method, precision=precision).compute()
            # 'auto' keeps to a tile-exact method: direct here
            ref = tc.correlate2d(x, k, "same", "wrap", method="direct", precision=precision)
            assert _same(out, ref), method


def test_integer_complex_and_fill_rules():
    rng = np.random.default_rng(3)
    xi = rng.integers(-300, 300, (90, 80)).astype(np.int16)
    ki = rng.integers(-5, 5, (4, 3)).astype(np.int16)
    xc = rng.standard_normal((90, 80)) + 1j * rng.standard_normal((90, 80))
    kc = rng.standard_normal((4, 3)) - 0.5j
    with dask.config.set(scheduler="threads"):
        for x, k, fill in [(xi, ki, 7), (xc, kc, 2 - 1j), (xc.real, kc, 0.5), (xi, ki, 2.7)]:
            for mode in MODES:
                out = tcd.correlate2d(da.from_array(x, chunks=30), k, mode, "fill", fill,
                                      method="direct").compute()
                ref = tc.correlate2d(x, k, mode, "fill", fill, method="direct")
                assert _same(out, ref), (x.dtype, k.dtype, fill, mode)


def test_stack_chunked_along_b_and_within_images():
    rng = np.random.default_rng(4)
    s = rng.standard_normal((5, 70, 90))
    k = rng.standard_normal((6, 5))
    with dask.config.set(scheduler="threads"):
        for chunks, mode, bnd in [((2, 70, 90), "same", "symm"), ((1, 30, 40), "full", "wrap"),
                                  ((3, 70, 25), "valid", "fill")]:
            out = tcd.convolve2d(da.from_array(s, chunks=chunks), k, mode, bnd,
                                 method="direct").compute()
            ref = np.stack([tc.convolve2d(im, k, mode, bnd, method="direct") for im in s])
            assert _same(out, ref), (chunks, mode, bnd)


def test_bad_input():
    k = np.ones((3, 3))
    with pytest.raises(ValueError, match="ndim=1"):
        tcd.correlate2d(da.ones(10, chunks=5), k)
    with pytest.raises(ValueError, match="ndim=4"):
        tcd.correlate2d(da.ones((2, 2, 8, 8), chunks=4), k)
    with pytest.raises(TypeError, match="kernel must be a NumPy or CuPy array, not a dask"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), da.ones((3, 3), chunks=3))
    with pytest.raises(ValueError, match="B=0"):
        tcd.correlate2d(da.ones((0, 8, 8), chunks=4), k)
    with pytest.raises(ValueError, match="empty"):
        tcd.correlate2d(da.ones((0, 8), chunks=4), k)
    with pytest.raises(TypeError, match="dask.array.Array"):
        tcd.correlate2d(np.ones((8, 8)), k)
    with pytest.raises(TypeError, match="int32"):
        tcd.correlate2d(da.ones((8, 8), chunks=4, dtype=np.int32), k)
    with pytest.raises(ValueError, match="unknown method"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, method="nope")
    with pytest.raises(ValueError, match="unknown mode"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, "nope")
    with pytest.raises(ValueError, match="unknown boundary"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, boundary="nope")
    with pytest.raises(ValueError, match="does not support precision 'bf16'"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, method="direct", precision="bf16")
    with pytest.raises(ValueError, match="unknown precision"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, precision="fp8")
    with pytest.raises(ValueError, match="at least as large as the kernel"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), np.ones((9, 2)), "valid")
    with pytest.raises(ValueError, match="needs complex data"):
        tcd.correlate2d(da.ones((8, 8), chunks=4), k, fillvalue=1j)


def test_failed_chunk_raises(monkeypatch):
    """A chunk that fails makes the whole computation raise; nothing partial comes back."""
    from tensorconv import _api

    real, calls = _api.correlate2d, []

    def flaky(*a, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("chunk 3 failed")
        return real(*a, **kw)

    monkeypatch.setattr(_api, "correlate2d", flaky)
    out = tcd.correlate2d(da.ones((64, 64), chunks=16), np.ones((3, 3)), method="direct")
    target = np.zeros(out.shape)
    with dask.config.set(scheduler="threads"), pytest.raises(RuntimeError, match="chunk 3"):
        da.store(out, target)


# ---- a 2-process distributed.LocalCluster ----

@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    # dashboard on a free port: None still binds the HTTP server to 8787, and a second cluster
    # on the machine (another test run) turns its port warning into a failed start
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=40) as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(5)
    return rng.standard_normal((4096, 4096)), rng.standard_normal((5, 4))


def test_cluster_4096_every_boundary_and_mode(client, big):
    x, k = big
    dx = client.persist(da.from_array(x, chunks=1024))
    for mode, bnd in itertools.product(MODES, BOUNDARIES):
        out = tcd.correlate2d(dx, k, mode, bnd, fillvalue=-0.25, method="direct")
        ref = tc.correlate2d(x, k, mode, bnd, fillvalue=-0.25, method="direct")
        assert _same(client.compute(out).result(), ref), (mode, bnd)
    # 'auto': one call's choice when tile-exact, else the device's exact default (direct on
    # the CPU, naive_shmem where a GPU runs it): compared with that method's one call
    m = tcd._resolve_method("auto", "fp64", False, np.asarray(k, np.float64), (4100, 4099))
    out = tcd.convolve2d(dx, k, "same", "symm")
    assert _same(client.compute(out).result(), tc.convolve2d(x, k, "same", "symm", method=m)), m


def test_cluster_stack(client):
    rng = np.random.default_rng(6)
    s = rng.standard_normal((8, 512, 384)).astype(np.float32)
    k = rng.standard_normal((7, 4))
    ds = da.from_array(s, chunks=(2, 512, 384))
    for mode, bnd in itertools.product(MODES, BOUNDARIES):
        out = client.compute(tcd.correlate2d(ds, k, mode, bnd, method="direct")).result()
        ref = np.stack([tc.correlate2d(im, k, mode, bnd, method="direct") for im in s])
        assert _same(out, ref), (mode, bnd)


def test_cluster_survives_a_killed_worker(client, big):
    """SIGKILL a worker process once it holds a finished chunk: the scheduler recomputes what
    it held on the restarted/remaining worker and the result is still the one-call result."""
    x, _ = big
    k = np.random.default_rng(7).standard_normal((15, 15))  # ~0.1-0.3 s per chunk: time to kill
    out = tcd.correlate2d(client.persist(da.from_array(x, chunks=1024)), k, "same", "wrap",
                          method="direct")
    fut = client.compute(out)
    keys = {str(key) for key in flatten(out.__dask_keys__())}
    victim, t0 = None, time.monotonic()
    while victim is None and time.monotonic() - t0 < 60:
        for key, where in client.who_has().items():
            if str(key) in keys and where:
                victim = where[0]
                break
        time.sleep(0.01)
    assert victim is not None and not fut.done(), "no chunk finished before the whole result"
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    result = fut.result(timeout=300)
    assert _same(result, tc.correlate2d(x, k, "same", "wrap", method="direct"))


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16fp32", "fp64"])
@pytest.mark.parametrize("method", ["naive_shmem", "naive"])
def test_gpu_cupy_and_host_chunks(method, precision):
    """CuPy chunks stay on the device (and come back as CuPy); host chunks go through the
    method's host path. Both equal one call on the whole array, bit for bit."""
    cp = pytest.importorskip("cupy")
    dt = {"fp32": np.float32, "fp16fp32": np.float16, "fp64": np.float64}[precision]
    rng = np.random.default_rng(9)
    x = rng.standard_normal((777, 1029)).astype(dt)
    k = rng.standard_normal((9, 6))
    with dask.config.set(scheduler="threads"):
        for mode, bnd in itertools.product(MODES, BOUNDARIES):
            ref = tc.correlate2d(x, k, mode, bnd, method=method, precision=precision)
            dh = tcd.correlate2d(da.from_array(x, chunks=(256, 300)), k, mode, bnd,
                                 method=method, precision=precision).compute()
            assert _same(dh, ref), ("host", mode, bnd)
            xd = cp.asarray(x)
            refd = tc.correlate2d(xd, k, mode, bnd, method=method, precision=precision)
            dd = tcd.correlate2d(da.from_array(xd, chunks=(256, 300), asarray=False), k, mode,
                                 bnd, method=method, precision=precision).compute()
            assert isinstance(dd, cp.ndarray)
            assert _same(cp.asnumpy(dd), cp.asnumpy(refd)), ("cupy", mode, bnd)
            assert _same(cp.asnumpy(refd), ref), ("cupy vs host one call", mode, bnd)


@pytest.mark.gpu
def test_gpu_kept_plans_follow_the_kernel():
    """GPU plans kept between chunks (the plan cache's GPU pools) are keyed by the kernel's values:
    another kernel of the same shape (or the same array changed in place) gets its own plan."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((600, 700)).astype(np.float32)
    k = rng.standard_normal((7, 7))
    with dask.config.set(scheduler="threads"):
        for kk in (k, k * -1.5, k):
            got = tcd.correlate2d(da.from_array(x, chunks=(200, 350)), kk, "same", "symm",
                                  method="naive_shmem", precision="fp32").compute()
            assert _same(got, tc.correlate2d(x, kk, "same", "symm", method="naive_shmem",
                                             precision="fp32"))
        k[3, 3] += 1.0  # in place: the key holds the bytes, not the array
        got = tcd.correlate2d(da.from_array(x, chunks=(200, 350)), k, "same",
                              method="naive_shmem", precision="fp32").compute()
        assert _same(got, tc.correlate2d(x, k, "same", method="naive_shmem", precision="fp32"))
    devices = tc.plan_cache_info()["devices"]
    assert any(d != "cpu" and v["plans"] for d, v in devices.items())
    tcd.clear_plans()
    devices = tc.plan_cache_info()["devices"]
    assert not any(d != "cpu" and v["plans"] for d, v in devices.items())


# ---- halos gathered from the neighbouring blocks (no map_overlap) ----

def _graph_layers(a):
    return list(a.__dask_graph__().layers)


@pytest.mark.parametrize("convolve", [False, True])
def test_gather_and_map_overlap_agree_with_one_call(convolve):
    """Both halo paths, small and uneven chunks (a halo spanning several blocks), every mode
    and boundary: the one call's result bit for bit."""
    rng = np.random.default_rng(21)
    x = rng.standard_normal((61, 47)).astype(np.float32)
    k = rng.standard_normal((7, 10))
    f, g = (tcd.convolve2d, tc.convolve2d) if convolve else (tcd.correlate2d, tc.correlate2d)
    with dask.config.set(scheduler="sync"):
        for mode, bnd in itertools.product(MODES, BOUNDARIES):
            ref = g(x, k, mode, bnd, fillvalue=0.75, method="direct", precision="fp32")
            for chunks in [(3, 2), ((20, 1, 30, 10), (5, 40, 2)), (61, 47), (16, 16)]:
                for halos in ("gather", "map_overlap"):
                    out = f(da.from_array(x, chunks=chunks), k, mode, bnd, fillvalue=0.75,
                            method="direct", precision="fp32", halos=halos)
                    assert _same(out.compute(), ref), (mode, bnd, chunks, halos)


def test_gather_graph_reads_neighbour_blocks():
    """The gather path's graph: one task per output chunk whose inputs are the blocks it reads
    (no overlap or concatenation layer); 'wrap' reads across the image edge, 'fill' does not.
    Of a neighbour it reads only the halo strip: a task slicing it, so a block on another
    worker sends only those pixels."""
    x = da.from_array(np.arange(64 * 64, dtype=np.float64).reshape(64, 64), chunks=16)
    k = np.ones((5, 5))
    for bnd, corner in [("wrap", {(0, 0), (0, 1), (0, 3), (1, 0), (1, 1), (1, 3), (3, 0),
                                  (3, 1), (3, 3)}),
                        ("symm", {(0, 0), (0, 1), (1, 0), (1, 1)}),
                        ("fill", {(0, 0), (0, 1), (1, 0), (1, 1)})]:
        out = tcd.correlate2d(x, k, "same", bnd, method="direct")
        layers = _graph_layers(out)
        assert len(layers) == 2 and layers[1].startswith("tc-gather"), layers
        assert out.chunks == x.chunks
        graph = dict(out.__dask_graph__())
        keys = get_dependencies(graph, (out.name, 0, 0))
        got = {(kk[1], kk[2]) for kk in keys if isinstance(kk, tuple)
               and (kk[0] == x.name or kk[0].startswith("tc-halo"))}
        assert got == corner, (bnd, got)
        assert (x.name, 0, 0) in keys  # its own block whole
        for kk in keys:
            if kk[0].startswith("tc-halo"):  # a neighbour: at most the 2 halo rows / columns
                r0, r1, c0, c1 = kk[3:]
                assert kk[1:3] != (0, 0) and min(r1 - r0, c1 - c0) <= 2, kk
                assert get_dependencies(graph, kk) == {(x.name,) + kk[1:3]}
    # the old path on request
    out = tcd.correlate2d(x, k, "same", "wrap", method="direct", halos="map_overlap")
    assert any("overlap" in n for n in _graph_layers(out))


def _parts(grid, ra, ca):
    """What an output chunk's task receives: of each block it reads, the range it reads."""
    return [[tcd._slice_block(grid[a][b], ra.lo[ia], ra.hi[ia], ca.lo[ib], ca.hi[ib])
             for ib, b in enumerate(ca.used)] for ia, a in enumerate(ra.used)]


@pytest.mark.parametrize("bnd", BOUNDARIES)
def test_block_maps_give_the_one_call_padding(bnd):
    """The per-position (block, local index) maps, applied to the blocks, give exactly the one
    call's padded image (np.pad of the whole image), slice by slice, for pads wider than a
    chunk too."""
    rng = np.random.default_rng(22)
    for (h, w), chunks, (kh, kw), mode in [((37, 29), ((5, 9, 23), (4, 25)), (6, 9), "full"),
                                           ((40, 40), ((2,) * 20, (3,) * 13 + (1,)), (7, 5),
                                            "same"),
                                           ((19, 23), ((19,), (23,)), (3, 4), "valid"),
                                           ((9, 30), ((3, 3, 3), (10, 20)), (8, 2), "full")]:
        x = rng.standard_normal((h, w))
        (pt, pb), (pl, pr) = tc._api._pads(mode, kh, kw, False)
        ref = tc._api.NumpyBackend().pad(x, ((pt, pb), (pl, pr)), bnd, -2.5)
        ends = [np.cumsum((0,) + c) for c in chunks]
        grid = [[x[ends[0][i]:ends[0][i + 1], ends[1][j]:ends[1][j + 1]]
                 for j in range(len(chunks[1]))] for i in range(len(chunks[0]))]
        oc = [tcd._last_positive(chunks[0], pt + pb - (kh - 1)),
              tcd._last_positive(chunks[1], pl + pr - (kw - 1))]
        assert sum(oc[0]) == h + pt + pb - kh + 1 and sum(oc[1]) == w + pl + pr - kw + 1
        o_r = np.cumsum((0,) + oc[0])
        o_c = np.cumsum((0,) + oc[1])
        for i, ci in enumerate(oc[0]):
            ra = tcd._Axis(h, pt, pb, bnd, chunks[0], int(o_r[i]), ci + kh - 1)
            for j, cj in enumerate(oc[1]):
                ca = tcd._Axis(w, pl, pr, bnd, chunks[1], int(o_c[j]), cj + kw - 1)
                got = tcd._gather_numpy(_parts(grid, ra, ca), *ra.maps(), *ca.maps(), -2.5,
                                        "float64")
                want = ref[o_r[i]:o_r[i] + ci + kh - 1, o_c[j]:o_c[j] + cj + kw - 1]
                assert _same(got, want), (bnd, mode, chunks, i, j)


@pytest.fixture(scope="module")
def native_gather(tmp_path_factory):
    """csrc/cuda/runtime/block_gather.hpp (the C++ staging's multi-block gather) as a CPU library."""
    import ctypes
    import shutil
    import subprocess

    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH to build tests/native/block_gather_check.cpp")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    src = os.path.join(root, "tests", "native", "block_gather_check.cpp")
    if not os.path.exists(os.path.join(root, "csrc", "cuda", "runtime", "block_gather.hpp")):
        pytest.skip("csrc/ is not beside tests/ (an installed package without sources)")
    lib = str(tmp_path_factory.mktemp("native") / "block_gather.so")
    subprocess.run([cxx, "-O1", "-std=c++17", "-shared", "-fPIC", "-I", os.path.join(root, "csrc"),
                    src, "-o", lib], check=True, capture_output=True)
    f = ctypes.CDLL(lib).tc_gather_blocks
    f.restype = ctypes.c_int
    return f


def _run_native(f, blocks, rb, rl, cb, cl, fill, dtype):
    import ctypes

    flat = [np.ascontiguousarray(b, dtype) for row in blocks for b in row]
    es = np.dtype(dtype).itemsize
    ptrs = (ctypes.c_void_p * len(flat))(*[b.ctypes.data for b in flat])
    dims = np.array([(b.shape[0], b.shape[1], b.strides[0] // es) for b in flat],
                    np.int64).ravel()
    out = np.full((rl.size, cl.size), np.nan, dtype)
    p = ctypes.c_void_p
    rc = f(ptrs, p(dims.ctypes.data), ctypes.c_int64(len(blocks)), ctypes.c_int64(len(blocks[0])),
           p(rb.ctypes.data), p(rl.ctypes.data), p(cb.ctypes.data), p(cl.ctypes.data),
           ctypes.c_int64(rl.size), ctypes.c_int64(cl.size), ctypes.c_double(fill),
           ctypes.c_int64(es), p(out.ctypes.data))
    assert rc == 0
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bnd", BOUNDARIES)
def test_native_block_gather_equals_one_call_padding(native_gather, bnd, dtype):
    """The C++ gather (column runs over the block columns, rows from their block rows) with the
    Python maps of every output chunk equals the one call's padded image, slice by slice:
    what host_pipeline.cu stages for a Dask chunk on a GPU, checked here without one."""
    rng = np.random.default_rng(23)
    for (h, w), chunks, (kh, kw), mode in [((50, 44), ((16, 16, 18), (11, 11, 22)), (15, 15),
                                            "same"),
                                           ((33, 27), ((2, 4, 27), (1, 26)), (6, 9), "full"),
                                           ((30, 30), ((7,) * 4 + (2,), (3,) * 10), (5, 8),
                                            "valid")]:
        x = rng.standard_normal((h, w)).astype(dtype)
        (pt, pb), (pl, pr) = tc._api._pads(mode, kh, kw, False)
        ref = tc._api.NumpyBackend().pad(x, ((pt, pb), (pl, pr)), bnd, 0.3)
        ends = [np.cumsum((0,) + c) for c in chunks]
        grid = [[x[ends[0][i]:ends[0][i + 1], ends[1][j]:ends[1][j + 1]]
                 for j in range(len(chunks[1]))] for i in range(len(chunks[0]))]
        oc = [tcd._last_positive(chunks[0], pt + pb - (kh - 1)),
              tcd._last_positive(chunks[1], pl + pr - (kw - 1))]
        o_r, o_c = np.cumsum((0,) + oc[0]), np.cumsum((0,) + oc[1])
        for i, ci in enumerate(oc[0]):
            ra = tcd._Axis(h, pt, pb, bnd, chunks[0], int(o_r[i]), ci + kh - 1)
            for j, cj in enumerate(oc[1]):
                ca = tcd._Axis(w, pl, pr, bnd, chunks[1], int(o_c[j]), cj + kw - 1)
                got = _run_native(native_gather, _parts(grid, ra, ca), *ra.maps(), *ca.maps(),
                                  0.3, dtype)
                want = ref[o_r[i]:o_r[i] + ci + kh - 1, o_c[j]:o_c[j] + cj + kw - 1]
                assert _same(got, want), (bnd, mode, chunks, i, j)


def test_halos_argument():
    x = da.ones((40, 40), chunks=10)
    k = np.ones((3, 3))
    with pytest.raises(ValueError, match="unknown halos 'nope'"):
        tcd.correlate2d(x, k, halos="nope")
    with pytest.raises(ValueError, match="halos='gather' needs a 2-D dask array.*stack"):
        tcd.correlate2d(da.ones((2, 40, 40), chunks=10), k, halos="gather")
    with dask.config.set(scheduler="sync"):  # integers and complex data through the gather
        xi = np.arange(1600, dtype=np.int16).reshape(40, 40) % 97
        xc = xi + 1j * xi[::-1]
        for a, fill in [(xi, 3), (xc, 1 - 2j)]:
            got = tcd.correlate2d(da.from_array(a, chunks=(7, 13)), k, "full", "fill", fill,
                                  method="direct", halos="gather").compute()
            assert _same(got, tc.correlate2d(a, k, "full", "fill", fill, method="direct"))


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp16fp32", "fp64"])
def test_gpu_gather_from_host_blocks(precision):
    """Host chunks on a GPU method through the C++ multi-block staging (run_gather_blocks):
    uneven chunks, halos spanning several blocks, every mode and boundary, bit for bit the
    one call's result (and map_overlap's)."""
    dt = {"fp32": np.float32, "fp16fp32": np.float16, "fp64": np.float64}[precision]
    rng = np.random.default_rng(24)
    x = rng.standard_normal((531, 389)).astype(dt)
    k = rng.standard_normal((15, 15))
    with dask.config.set(scheduler="threads"):
        for mode, bnd in itertools.product(MODES, BOUNDARIES):
            ref = tc.correlate2d(x, k, mode, bnd, 0.5, method="naive_shmem", precision=precision)
            # odd chunk starts: naive_shmem's fp32 15x15 (Winograd row pairs) has a period of
            # two rows, onto which the chunk boundaries are moved
            for chunks in [(128, 100), ((5, 300, 226), (389,)), (7, 6), ((3, 3, 525), (389,))]:
                for halos in ("gather", "map_overlap"):
                    out = tcd.correlate2d(da.from_array(x, chunks=chunks), k, mode, bnd, 0.5,
                                          method="naive_shmem", precision=precision,
                                          halos=halos)
                    assert _same(out.compute(), ref), (mode, bnd, chunks, halos)
    if precision == "fp32":  # a complex kernel on a GPU method keeps to map_overlap
        kc = k + 0.25j
        dx = da.from_array(x, chunks=(128, 100))
        with pytest.raises(ValueError, match="complex data .* map_overlap"):
            tcd.correlate2d(dx, kc, "same", "symm", method="naive_shmem", halos="gather")
        got = tcd.correlate2d(dx, kc, "same", "symm", method="naive_shmem").compute(
            scheduler="threads")
        assert _same(got, tc.correlate2d(x, kc, "same", "symm", method="naive_shmem"))
    # the C++ checks of the maps: a local row outside its block is a ValueError, not a read
    p = tc.plan(k, (20, 20), mode="valid", method="naive_shmem", precision=precision)
    blk = rng.standard_normal((20, 20)).astype(dt)
    zeros, idx = np.zeros(20, np.int64), np.arange(20, dtype=np.int64)
    bad = idx.copy()
    bad[3] = 20
    out = np.empty(p.out_shape, dt)
    for rl, msg in [(bad, "row_src holds a row outside its block"), (idx, None)]:
        args = (np.array([blk.ctypes.data], np.int64), np.array([20, 20, 20], np.int64), 1, 1,
                zeros, rl, zeros, idx, 0.0, out.ctypes.data, *out.shape, out.shape[1],
                np.dtype(dt).name)
        if msg:
            with pytest.raises(ValueError, match=msg):
                p._plan.run_gather_blocks(*args)
        else:
            p._plan.run_gather_blocks(*args)
            assert _same(out, tc.correlate2d(blk, k, "valid", method="naive_shmem",
                                             precision=precision))
    tcd.clear_plans()


def test_block_gather_checks_its_maps():
    """_core.Plan.run_gather_blocks checks the maps before any read (any plan; a CPU plan then
    says that only CUDA plans stage)."""
    p = tc.plan(np.ones((3, 3)), (6, 6), mode="valid", method="direct", precision="fp64")
    blk = np.zeros((6, 6))
    out = np.empty(p.out_shape)
    idx, zeros = np.arange(6, dtype=np.int64), np.zeros(6, np.int64)

    def call(rb=zeros, rl=idx, cb=zeros, cl=idx, dims=(6, 6, 6), grid=(1, 1)):
        p._plan.run_gather_blocks(np.array([blk.ctypes.data] * (grid[0] * grid[1]), np.int64),
                                  np.array(dims * (grid[0] * grid[1]), np.int64), *grid, rb, rl,
                                  cb, cl, 0.0, out.ctypes.data, *out.shape, out.shape[1],
                                  "float64")

    with pytest.raises(ValueError, match="row_src holds a row outside its block"):
        call(rl=np.array([0, 1, 2, 3, 4, 6], np.int64))
    with pytest.raises(ValueError, match="col_src / col_blk name no block column"):
        call(cb=np.array([0, 0, 1, 0, 0, 0], np.int64))
    with pytest.raises(ValueError, match="name no block row"):
        call(rl=np.array([0, 1, -2, 3, 4, 5], np.int64))
    with pytest.raises(ValueError, match="one entry per padded row"):
        call(rb=zeros[:5])
    with pytest.raises(ValueError, match="bad row stride|bad host gather"):
        call(dims=(6, 6, 5))
    with pytest.raises(ValueError, match="one pointer and"):
        call(grid=(0, 1))
    if p.method == "direct":  # a CPU plan: the maps pass, then only CUDA plans stage
        with pytest.raises(ValueError, match="only CUDA plans"):
            call()


def test_plan_cache_evicts_past_checked_out_keys(monkeypatch):
    """The plan cache's checked-out (CUDA) plans: a key whose plans are all checked out stays a
    miss, and eviction past the cap drops the least recently used plans (an empty entry once
    raised IndexError in the chunk pool, failing the chunk after its result was computed)."""
    from tensorconv import _plan_cache as m

    class P:
        _device = "cuda"
        workspace_bytes = 0

    m.clear()
    monkeypatch.setattr(m, "MAX_GPU_PLANS", 2)
    key = {c: (0, None, c) for c in "abcd"}
    a = P()
    m.release(key["a"], a)
    assert m.acquire(key["a"]) is a
    assert m.acquire(key["a"]) is None  # checked out: a miss, no empty list left to trip on
    b, c, d = P(), P(), P()
    for k, p in (("a", a), ("b", b), ("c", c), ("d", d)):
        m.release(key[k], p)
    pool = m._pools[0]
    assert pool.plans == 2 and list(pool.entries) == [key["c"], key["d"]]
    m.clear()


def test_chunk_boundaries_move_onto_the_translation_period():
    """A method whose bits hold only under translations by a multiple of its period (the
    registry's translation_period: naive_shmem's fp32 Winograd rows at 9x9 and 15x15) gets its
    chunk boundaries moved down onto that period; empty chunks vanish; period 1 changes nothing."""
    from tensorconv.dask import _aligned, _period

    assert _aligned((5, 300, 226), 2) == (4, 300, 227)
    assert _aligned((5, 300, 226), 2, offset=1) == (5, 300, 226)
    assert _aligned((1, 1, 5), 2) == (2, 5)
    assert _aligned((3, 3, 525), 2) == (2, 4, 525)
    assert _aligned((7, 6), 1) == (7, 6) and _aligned((9,), 2) == (9,)
    for chunks, per, off in [((5, 300, 226), 2, 0), ((3, 3, 525), 2, 1), ((1,) * 9, 2, 0),
                             ((13, 2, 8, 1), 3, 2)]:
        got = _aligned(chunks, per, off)
        assert sum(got) == sum(chunks) and min(got) >= 1
        assert all((b + off) % per == 0 for b in np.cumsum(got)[:-1]), (chunks, got)
    k15, k13 = np.ones((15, 15)), np.ones((13, 13))
    assert _period("naive_shmem", "fp32", k15) == (2, 1)
    assert _period("naive_shmem", "fp64", k15) == (1, 1)
    assert _period("naive_shmem", "fp32", k13) == (1, 1)
    assert _period("direct", "fp32", k15) == (1, 1)
    assert _period("fft", "fp32", k15) == (1, 1)  # not tile-exact at all: no period to keep
