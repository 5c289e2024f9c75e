"""(B, H, W) stacks through Plan and correlate2d/convolve2d(batch=True), and host arrays on CUDA
plans (padded while staged, pipelined in images or row bands): equal to a loop of single calls
and within tests/bounds.py of scipy in float64."""

import os

import numpy as np
import pytest
import scipy.signal
from bounds import rel_l2_bound
from conftest import require_available

import tensorconv as tc
from tensorconv._arrays import pad_sources
from tensorconv.metrics import relative_l2

MODES = ("full", "valid", "same")
BOUNDARIES = ("fill", "wrap", "symm")


def _scipy_stack(stack, kernel, mode, boundary, fillvalue=0, convolve=False):
    f = scipy.signal.convolve2d if convolve else scipy.signal.correlate2d
    return np.stack([f(x, kernel, mode, boundary, fillvalue) for x in stack])


@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("precision", ["fp64", "fp32"])
def test_cpu_stack_matches_loop_and_scipy(mode, boundary, precision):
    rng = np.random.default_rng(1)
    stack = rng.standard_normal((4, 23, 31))
    kernel = rng.standard_normal((5, 4))
    out = tc.correlate2d(stack, kernel, mode, boundary, 0.5, method="direct",
                         precision=precision, batch=True)
    loop = np.stack([tc.correlate2d(x, kernel, mode, boundary, 0.5, method="direct",
                                    precision=precision) for x in stack])
    ref = _scipy_stack(stack, kernel, mode, boundary, 0.5)
    assert out.shape == ref.shape == loop.shape
    np.testing.assert_array_equal(out, loop)  # the same plan image by image
    assert relative_l2(out, ref) <= rel_l2_bound("direct", precision)


@pytest.mark.parametrize("mode", MODES)
def test_cpu_convolve_stack_and_plan(mode):
    rng = np.random.default_rng(2)
    stack = rng.standard_normal((3, 17, 12))
    kernel = rng.standard_normal((3, 6))
    out = tc.convolve2d(stack, kernel, mode, "symm", batch=True, method="direct")
    ref = _scipy_stack(stack, kernel, mode, "symm", convolve=True)
    assert relative_l2(out, ref) <= rel_l2_bound("direct", "fp64")
    p = tc.plan(kernel, (17, 12), mode=mode, boundary="symm", convolve=True, method="direct")
    np.testing.assert_array_equal(p(stack), out)
    np.testing.assert_array_equal(p(stack[1]), out[1])  # 2-D images still work


def test_cpu_stack_b1_complex_and_integers():
    rng = np.random.default_rng(3)
    one = rng.standard_normal((1, 9, 10))
    k = rng.standard_normal((3, 3))
    out = tc.correlate2d(one, k, batch=True, method="direct")
    assert out.shape == (1, 11, 12)
    np.testing.assert_array_equal(out[0], tc.correlate2d(one[0], k, method="direct"))
    z = one + 1j * rng.standard_normal((1, 9, 10))
    zk = k - 0.5j * k
    out = tc.correlate2d(z, zk, "same", batch=True, method="direct")
    ref = _scipy_stack(z, zk, "same", "fill")
    assert relative_l2(out, ref) <= rel_l2_bound("direct", "fp64")
    ints = rng.integers(-50, 50, (2, 8, 7)).astype(np.int16)
    out = tc.correlate2d(ints, np.ones((2, 2), np.int16), batch=True)
    ref = _scipy_stack(ints, np.ones((2, 2), np.int16), "full", "fill")
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


def test_stack_errors():
    k = np.ones((3, 3))
    with pytest.raises(ValueError, match="stack of no images"):
        tc.correlate2d(np.zeros((0, 8, 8)), k, batch=True)
    with pytest.raises(ValueError, match="3-D"):
        tc.correlate2d(np.zeros((8, 8)), k, batch=True)
    with pytest.raises(ValueError, match="batch=True"):
        tc.correlate2d(np.zeros((2, 8, 8)), k)
    # a 3-D in2 is a stack of per-image kernels (test_perimage.py): its count must match
    with pytest.raises(ValueError, match="3 per-image kernels"):
        tc.correlate2d(np.zeros((2, 8, 8)), np.ones((3, 3, 3)), batch=True)
    with pytest.raises(ValueError, match="at least as large"):
        tc.correlate2d(np.zeros((2, 2, 2)), k, "valid", batch=True)
    with pytest.raises(TypeError, match="batch"):
        tc.correlate2d(np.zeros((2, 8, 8)), k, batch="yes")
    p = tc.plan(k, (8, 8), method="direct")
    with pytest.raises(ValueError, match="stack of no images"):
        p(np.zeros((0, 8, 8)))
    with pytest.raises(ValueError, match="shape"):
        p(np.zeros((2, 8, 9)))
    with pytest.raises(ValueError, match="2-D array .one image. or a 3-D"):
        p(np.zeros((1, 2, 8, 8)))


@pytest.mark.parametrize("boundary", BOUNDARIES)
def test_pad_sources_is_np_pad(boundary):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 7))
    for pads in [((2, 3), (1, 4)), ((7, 9), (8, 0)), ((0, 0), (0, 0))]:
        ri = pad_sources(5, *pads[0], boundary)
        ci = pad_sources(7, *pads[1], boundary)
        got = np.where((ri[:, None] < 0) | (ci[None, :] < 0), -2.5, x[ri[:, None], ci[None, :]])
        if boundary == "fill":
            want = np.pad(x, pads, constant_values=-2.5)
        else:
            want = np.pad(x, pads, mode={"wrap": "wrap", "symm": "symmetric"}[boundary])
        np.testing.assert_array_equal(got, want)


# ---- GPU ----------------------------------------------------------------------------------
# The methods 'auto' picks on the GPU (and toeplitz_tc), with a precision each supports.
GPU_CASES = [("im2tensor_fused", "fp16fp32"), ("im2tensor_fused", "fp32"),
             ("naive_shmem", "fp32"), ("naive_shmem", "fp64"), ("fft", "fp32"),
             ("separable", "fp32"), ("toeplitz_tc", "fp16fp32"), ("toeplitz_tc", "fp32")]
_STORE = {"fp16fp32": np.float16, "fp32": np.float32, "fp64": np.float64}


def _device_arrays(kind, x):
    if kind == "cupy":
        cp = pytest.importorskip("cupy")
        return cp.asarray(x), cp.asnumpy
    if kind == "torch":
        torch = pytest.importorskip("torch")
        return torch.as_tensor(x, device="cuda"), lambda t: t.cpu().numpy()
    return x, np.asarray


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["numpy", "cupy", "torch"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method,precision", GPU_CASES)
def test_gpu_stack_matches_loop_and_scipy(method, precision, mode, kind):
    require_available(method, precision)
    rng = np.random.default_rng(5)
    kernel = rng.standard_normal((7, 7))
    if method == "separable":
        kernel = np.outer(rng.standard_normal(7), rng.standard_normal(7))
    host = rng.standard_normal((5, 96, 130)).astype(_STORE[precision])
    stack, back = _device_arrays(kind, host)
    p = tc.plan(kernel, (96, 130), mode=mode, boundary="symm", method=method,
                precision=precision)
    out = back(p(stack))
    loop = np.stack([back(p(stack[i])) for i in range(5)])
    np.testing.assert_array_equal(out, loop)
    ref = _scipy_stack(host.astype(np.float64), kernel, mode, "symm")
    assert relative_l2(out, ref) <= rel_l2_bound(method, precision)
    b1 = back(tc.correlate2d(stack[:1], kernel, mode, "symm", method=method,
                             precision=precision, batch=True))
    np.testing.assert_array_equal(b1, out[:1])


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", ["naive_shmem", "fft"])
def test_gpu_host_bands_equal_one_shot(method, mode, boundary):
    """A NumPy image tall enough to run as row bands through pinned staging (24 MB and more):
    the result equals the device one-shot call (bit for bit for naive_shmem, whose sum does not
    depend on where an output sits; cuFFT's band transforms round differently) and scipy."""
    require_available(method)
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(6)
    image = rng.standard_normal((1700, 4096)).astype(np.float32)
    kernel = rng.standard_normal((5, 6))
    p = tc.plan(kernel, image.shape, mode=mode, boundary=boundary, fillvalue=-1.25,
                method=method, precision="fp32")
    host = p(image)
    dev = cp.asnumpy(p(cp.asarray(image)))
    assert isinstance(host, np.ndarray) and host.shape == dev.shape
    if method == "naive_shmem":
        np.testing.assert_array_equal(host, dev)
    else:
        assert relative_l2(host, dev) <= rel_l2_bound(method, "fp32")
    ref = scipy.signal.correlate2d(image.astype(np.float64), kernel, mode, boundary, -1.25)
    assert relative_l2(host, ref) <= rel_l2_bound(method, "fp32")


@pytest.mark.gpu
def test_gpu_host_stack_of_banded_images():
    require_available("naive_shmem")
    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(7)
    stack = rng.standard_normal((2, 1600, 4096)).astype(np.float32)
    kernel = rng.standard_normal((5, 5))
    p = tc.plan(kernel, stack.shape[1:], mode="same", method="naive_shmem", precision="fp32")
    host = p(stack)
    np.testing.assert_array_equal(host, cp.asnumpy(p(cp.asarray(stack))))
    np.testing.assert_array_equal(host[1], p(stack[1]))


@pytest.mark.gpu
def test_gpu_host_non_finite_and_fp16():
    """Host images with NaN keep them local through the staged path too (fft's device repair, or
    the method auto picked); fp16 storage."""
    rng = np.random.default_rng(8)
    image = rng.random((300, 400)).astype(np.float32)
    image[100, 100] = np.nan
    kernel = rng.random((17, 17))  # area > 225: auto picks cuFFT for fp32
    p = tc.plan(kernel, image.shape, method="auto", precision="fp32", device="cuda")
    out = p(image)
    ref = scipy.signal.correlate2d(image.astype(np.float64), kernel)
    assert np.array_equal(np.isnan(out), np.isnan(ref))
    ok = np.isfinite(ref)
    assert relative_l2(out[ok], ref[ok]) <= rel_l2_bound(p.method, "fp32")
    h = rng.random((2, 64, 80)).astype(np.float16)
    out = tc.correlate2d(h, kernel[:5, :5], "same", method="naive_shmem", precision="fp16fp32",
                         batch=True)
    ref = _scipy_stack(h.astype(np.float64), kernel[:5, :5], "same", "fill")
    assert out.dtype == np.float16
    assert relative_l2(out, ref) <= rel_l2_bound("naive_shmem", "fp16fp32")


@pytest.mark.gpu
def test_gpu_host_calls_from_threads():
    """One plan's host staging is shared: calls from several threads (the GIL is released) wait
    for each other instead of mixing their chunks."""
    from concurrent.futures import ThreadPoolExecutor

    require_available("naive_shmem")
    rng = np.random.default_rng(9)
    images = [rng.standard_normal((300, 500)).astype(np.float32) for _ in range(8)]
    p = tc.plan(rng.standard_normal((7, 7)), (300, 500), mode="same", method="naive_shmem",
                precision="fp32")
    want = [p(x) for x in images]
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(p, images * 3))
    for i, g in enumerate(got):
        np.testing.assert_array_equal(g, want[i % 8])


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["cupy", "torch"])
@pytest.mark.parametrize("boundary", BOUNDARIES)
@pytest.mark.parametrize("mode", ["same", "full"])
def test_gpu_device_gather_every_boundary(kind, boundary, mode):
    """Device images padded by the gather kernel (device_pad.cu) in groups: a 2-D image, a
    strided view, and a stack of several groups (fp16, 300 images of 130 KB padded: three
    groups of <= 16 MB) equal the host path bit for bit (naive_shmem) and scipy."""
    require_available("naive_shmem")
    rng = np.random.default_rng(10)
    kernel = rng.standard_normal((5, 4))
    host = rng.standard_normal((300, 70, 61)).astype(np.float16)
    stack, back = _device_arrays(kind, host)
    p = tc.plan(kernel, (70, 61), mode=mode, boundary=boundary, fillvalue=0.75,
                method="naive_shmem", precision="fp16fp32")
    out = back(p(stack))
    np.testing.assert_array_equal(out, p(host))
    np.testing.assert_array_equal(back(p(stack[7])), out[7])
    big = rng.standard_normal((90, 150)).astype(np.float32)
    dbig, _ = _device_arrays(kind, big)
    q = tc.plan(kernel, (90, 75), mode=mode, boundary=boundary, fillvalue=-2.0,
                method="naive_shmem", precision="fp32")
    view = dbig[:, ::2]  # a strided view: made contiguous in storage first
    np.testing.assert_array_equal(back(q(view)), q(big[:, ::2]))
    ref = scipy.signal.correlate2d(big[:, ::2].astype(np.float64), kernel, mode, boundary, -2.0)
    assert relative_l2(back(q(view)), ref) <= rel_l2_bound("naive_shmem", "fp32")
    ref16 = _scipy_stack(host[:3].astype(np.float64), kernel, mode, boundary, 0.75)
    assert relative_l2(out[:3], ref16) <= rel_l2_bound("naive_shmem", "fp16fp32")


@pytest.mark.gpu
def test_gpu_host_results_pinned_and_kept():
    """Host results come from the pinned pool (the card writes them directly): a result that
    is kept is never reused for the next call, one that is dropped is; both stay right."""
    require_available("naive_shmem")
    from tensorconv import _core

    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal((1200, 2048)).astype(np.float32) for _ in range(2))
    p = tc.plan(rng.standard_normal((9, 9)), a.shape, mode="same", method="naive_shmem",
                precision="fp32")
    ra = p(a)
    want_a = ra.copy()
    assert _core.pinned_held_bytes() >= ra.nbytes
    rb = p(b)
    assert ra.ctypes.data != rb.ctypes.data
    np.testing.assert_array_equal(ra, want_a)
    ref_b = scipy.signal.correlate2d(b.astype(np.float64), p._k64, "same")
    assert relative_l2(rb, ref_b) <= rel_l2_bound("naive_shmem", "fp32")
    del ra
    held = _core.pinned_held_bytes()
    rc = p(a)  # a dropped result's block comes back from the pool: nothing new is pinned
    assert _core.pinned_held_bytes() == held
    np.testing.assert_array_equal(rc, want_a)


def test_host_cast_in_blocks_equals_numpy(monkeypatch):
    """to_storage's cast of a large host array, in row (or column, or plane) blocks on a thread
    pool, gives np.ascontiguousarray's bits: every dtype pair the plans use, strided views,
    NaN/inf, stacks with few images."""
    from tensorconv import _arrays

    monkeypatch.setattr(_arrays, "_PARALLEL_CAST_BYTES", 1)
    monkeypatch.setattr(_arrays, "_CAST_POOL", None)  # a pool of this test's size, dropped after
    monkeypatch.setattr(_arrays.os, "cpu_count", lambda: 4)
    rng = np.random.default_rng(5)
    base = rng.standard_normal((3, 67, 45)) * 1e3
    base[0, 5, 7], base[1, 2, 3], base[2, 60, 44] = np.nan, np.inf, -np.inf
    for x in [base, base[1], base[1].T, base[:, ::2, 1:], base[:2, :3, :],
              (np.nan_to_num(base, posinf=9, neginf=-9) * 10).astype(np.int32), base > 0,
              base.astype(np.float32)]:
        for dt in ("float16", "float32", "float64"):
            got = _arrays.NumpyBackend().to_storage(x, dt)
            want = np.ascontiguousarray(x, dtype=_arrays._NP_DTYPES[dt])
            assert got.flags.c_contiguous and got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    same = base.astype(np.float32)
    assert _arrays.host_cast(same, np.float32) is same  # nothing to do: no copy
    if hasattr(os, "fork"):  # a forked child makes its own pool (the parent's threads are gone)
        import warnings

        big = np.arange(64 * 40, dtype=np.float64).reshape(64, 40)
        with warnings.catch_warnings():  # 3.12+: "multi-threaded, fork() may deadlock": the point
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            ok = np.array_equal(_arrays.host_cast(big, np.float32), big.astype(np.float32))
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


def test_staging_team_runs_each_piece_once(tmp_path):
    """The staging team (csrc/cuda/runtime/staging_team.hpp, plain C++) under many short jobs: every
    piece exactly once, none after run() returns (tests/native/staging_team_check.cpp)."""
    import os
    import shutil
    import subprocess

    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler on PATH to build tests/native/staging_team_check.cpp")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.exists(os.path.join(root, "csrc", "cuda", "runtime", "staging_team.hpp")):
        pytest.skip("csrc/ is not beside tests/ (an installed package without sources)")
    exe = str(tmp_path / "staging_team_check")
    subprocess.run([cxx, "-O2", "-std=c++17", "-pthread", "-I", os.path.join(root, "csrc"),
                    os.path.join(root, "tests", "native", "staging_team_check.cpp"), "-o", exe],
                   check=True, capture_output=True)
    r = subprocess.run([exe, "200000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
