"""Interrupts and faults: a SIGINT during a long call leaves the process usable (the interrupt
arrives as KeyboardInterrupt, the next call is right, the process exits: no worker or staging
thread hangs); device out-of-memory in the middle of a stack presents no half-written result.
(A Dask worker killed mid-run: tests/test_dask.py::test_worker_killed_mid_run.)

Each scenario runs in a child process, so a hang is a timeout here rather than a stuck suite."""

import os
import subprocess
import sys
import textwrap

import pytest

import tensorconv as tc

_CHILD = r"""
import os, signal, sys, threading, time
import numpy as np
import scipy.signal as ss
import tensorconv as tc

method, n, k, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rng = np.random.default_rng(0)
x = rng.random((n, n)).astype(np.float32)
kern = rng.random((k, k)).astype(np.float32)
small_x, small_k = rng.random((40, 50)), rng.random((5, 4))
# Python raises KeyboardInterrupt only where SIGINT was not ignored when it started (a
# background job of a non-interactive shell inherits it ignored): as in a terminal
signal.signal(signal.SIGINT, signal.default_int_handler)
tc.correlate2d(small_x, small_k, method=method)  # plans, threads and pools exist before
threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
try:
    # one long call; or (repeat) calls back to back for up to 30 s, each spending nearly all of
    # its time in C++ (staging and the device), where the signal lands
    while True:
        tc.correlate2d(x, kern, "valid", method=method)
        if not repeat or time.perf_counter() - t0 > 30:
            break
    print("NOINTERRUPT")
except KeyboardInterrupt:
    print("INTERRUPTED %.3f" % (time.perf_counter() - t0))
# the process is usable: the next calls are right
out = tc.correlate2d(small_x, small_k, method=method)
ref = ss.correlate2d(small_x, small_k)
assert np.abs(out - ref).max() <= 1e-10 * np.abs(ref).max(), "wrong result after interrupt"
if method != "direct":
    info = getattr(tc._core, "pinned_pool_info", None)
    if info is not None:
        print("PINNED", info())
print("OK")
"""


def _run_child(method, n, k, timeout, repeat=False):
    p = subprocess.run([sys.executable, "-c", _CHILD, method, str(n), str(k), str(int(repeat))],
                       capture_output=True, text=True, timeout=timeout,
                       env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "OK" in p.stdout.split(), p.stdout + p.stderr
    return p.stdout


def test_sigint_during_long_cpu_call():
    """direct on 6144^2 with a 63 x 63 kernel (about 0.6 s on 2 AVX-512 cores), repeated until
    the signal comes (at most 30 s); SIGINT 0.3 s in: a KeyboardInterrupt (at the latest when the C++ call returns: the core does
    not poll for signals), then right results, and the child exits (its worker threads do not
    hang: the timeout would catch them)."""
    out = _run_child("direct", 6144, 63, timeout=300, repeat=True)
    assert "INTERRUPTED" in out and "NOINTERRUPT" not in out, out


@pytest.mark.gpu
def test_sigint_during_long_host_array_gpu_call():
    """A host (NumPy) array on a CUDA method: staged through pinned buffers by a staging team.
    After SIGINT the process is usable, exits (no staging thread hangs) and, where the core
    reports its pinned pool, holds no more pinned memory than its cap. (One 8192^2 call takes
    tens of milliseconds on an H200, so the child repeats it until the signal comes.)"""
    out = _run_child("naive_shmem", 8192, 31, timeout=300, repeat=True)
    assert "INTERRUPTED" in out and "NOINTERRUPT" not in out, out


@pytest.mark.gpu
def test_out_of_memory_mid_stack_leaves_no_half_result():
    """CuPy's memory pool capped just above a device stack (a limit of this process only, so
    tests running beside it keep the device's memory): the stack's output does not fit, the
    call raises MemoryError (after the cache is emptied and the call retried) and presents no
    result; a host stack either raises or returns every image complete and right; with the cap
    lifted, the next call is right."""
    code = textwrap.dedent(r"""
        import numpy as np, scipy.signal as ss, tensorconv as tc
        cp = __import__("cupy")
        k = np.random.default_rng(0).random((9, 9)).astype(np.float32)
        n = 2048
        ref = ss.correlate2d(np.ones((n, n)), k.astype(np.float64), "valid")
        xd = cp.ones((8, n, n), cp.float32)  # 128 MB on the device
        pool = cp.get_default_memory_pool()
        pool.set_limit(size=pool.total_bytes() + (16 << 20))
        out = None
        try:
            out = tc.correlate2d(xd, k, "valid", method="naive_shmem", batch=True)
        except MemoryError as e:
            print("RAISED device stack:", str(e)[:160])
        assert out is None, "a device stack beyond the free memory returned a result"
        raised = False
        xh = np.ones((16, n, n), np.float32)  # 256 MB on the host
        try:
            out = tc.correlate2d(xh, k, "valid", method="naive_shmem", batch=True)
        except MemoryError as e:
            raised = True
            print("RAISED host stack:", str(e)[:160])
        if not raised:  # staged in bands: then every image must be complete and right
            for i in range(xh.shape[0]):
                assert np.abs(out[i] - ref).max() <= 1e-5 * np.abs(ref).max(), i
        pool.set_limit(size=0)  # no cap
        out = tc.correlate2d(xd, k, "valid", method="naive_shmem", batch=True)
        assert float(cp.abs(out - cp.asarray(ref, cp.float32)).max()) <= 1e-5 * np.abs(ref).max()
        s = np.random.default_rng(1).random((64, 64)).astype(np.float32)
        r = tc.correlate2d(s, k, method="naive_shmem")
        ref = ss.correlate2d(s.astype(np.float64), k.astype(np.float64))
        assert np.abs(r - ref).max() <= 1e-5 * np.abs(ref).max()
        print("OK")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0 and "OK" in p.stdout, p.stdout + p.stderr


def test_interrupted_child_scenario_detects_wrong_results(tmp_path):
    """The child's check is live: a wrong result after the interrupt would fail it."""
    bad = _CHILD.replace("ref = ss.correlate2d(small_x, small_k)",
                         "ref = ss.correlate2d(small_x, small_k) + 1")
    p = subprocess.run([sys.executable, "-c", bad, "direct", "64", "3", "0"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "wrong result after interrupt" in p.stderr
    assert tc.correlate2d is not None
