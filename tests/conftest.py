"""Shared fixtures: registry enumeration, GPU skipping, USC-SIPI images, cached scipy references,
and the accuracy report written at the end of the session."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import scipy
import scipy.signal

import tensorconv as tc
from tensorconv import _core
from tensorconv.datasets import cache_dir, load_usc_sipi

sys.path.insert(0, str(Path(__file__).parent))

ACCURACY_ROWS: list[dict] = []

# A checkout beside ../shared (developers, CI) finds the images there without any setting.
_SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not os.environ.get("TENSORCONV_DATA") and _SHARED_DATA.is_dir():
    os.environ["TENSORCONV_DATA"] = str(_SHARED_DATA)


def float_method_params():
    """Every (method, precision) the registry declares for correlate2d, available or not;
    unavailable ones are skipped with the registry's reason."""
    from tensorconv import _core

    params = []
    for m in tc.methods():
        if m.entry != "correlate2d":  # e.g. the bilateral rows (tensorconv.filters.bilateral)
            continue
        # a precision this GPU is too old for is not in m.precisions: skipped, with the reason
        newer = [p for p, _ in m.precision_min_cc if p not in m.precisions]
        for p in [q for q in tc.PRECISIONS if q in m.precisions or q in newer]:
            marks = [pytest.mark.gpu] if m.device == "cuda" else []
            if not m.available:
                marks.append(pytest.mark.skip(reason=f"{m.name}: {m.reason}"))
            elif p in newer:
                why = _core.precision_unavailable_reason(m.name, p)
                marks.append(pytest.mark.skip(reason=f"{m.name}: {why}"))
            params.append(pytest.param(m.name, p, marks=marks, id=f"{m.name}-{p}"))
    return params

def require_available(method, precision=None):
    """Skips (with the registry's reason) when the method, or that precision of it (a GPU too
    old for it: MethodInfo.precision_min_cc), cannot run here."""
    m = {x.name: x for x in tc.methods()}[method]
    if not m.available:
        pytest.skip(f"{method}: {m.reason}")
    if precision is not None and precision not in m.precisions:
        from tensorconv import _core

        pytest.skip(f"{method}: {_core.precision_unavailable_reason(method, precision)}")


def runnable_precisions(method):
    """The precisions of `method` this GPU runs (a GPU too old for some runs the others)."""
    return {x.name: x for x in tc.methods()}[method].precisions


def check_vs_scipy(method, precision, rng, ishape, kshape, options=None):
    """One valid correlation against scipy in float64: MAPE (eq. 20) on the papers' data (image
    and kernel uniform in [0, 1)), then relative L2 on signed data (cancellation). `options`:
    the method's plan options (tensorconv.plan_options())."""
    from bounds import mape_bound, rel_l2_bound

    from tensorconv.metrics import mape, relative_l2

    image, kernel = rng.random(ishape), rng.random(kshape)
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision,
                         options=options)
    assert out.shape == ref.shape
    assert np.isfinite(np.asarray(out, dtype=np.float64)).all(), (ishape, kshape)
    err = mape(out, ref)
    assert err <= mape_bound(method, precision), (ishape, kshape, err)
    image, kernel = rng.standard_normal(ishape), rng.standard_normal(kshape)
    ref = scipy.signal.correlate2d(image, kernel, "valid")
    out = tc.correlate2d(image, kernel, "valid", method=method, precision=precision,
                         options=options)
    err = relative_l2(out, ref)
    assert err <= rel_l2_bound(method, precision), (ishape, kshape, err)


def cupy_device():
    """CuPy, or the test skipped: CuPy not installed, or no CUDA device for it."""
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # pragma: no cover
        pytest.skip("no CUDA device")
    return cp


def use_cpu_calibration(monkeypatch, tmp_path, constants):
    """The CPU cost model reads `constants` (None: no calibration file, the shipped defaults)
    from a fresh cache directory in tmp_path; cached plans are dropped."""
    from tensorconv import _cpu_constants

    monkeypatch.setenv("TENSORCONV_CACHE", str(tmp_path))
    monkeypatch.setattr(_cpu_constants, "_loaded", None)
    if constants is not None:
        f = _cpu_constants.cost_file()
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps({"machine": _cpu_constants.machine(), "constants": constants}))
    tc.clear_plan_cache()


def run_threads(worker, args):
    """worker(a) for each of `args` on a thread of its own, all started, then all joined."""
    threads = [threading.Thread(target=worker, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def fail_first_call(monkeypatch, owner, name, error=None):
    """owner.name raises a simulated out-of-memory error on its first call (error(): that
    exception, e.g. CuPy's; default MemoryError), then works; the calls are counted in the list
    returned."""
    real = getattr(owner, name)
    calls = []

    def once(self, *a, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise error() if error is not None else MemoryError("simulated: out of memory")
        return real(self, *a, **kw)

    monkeypatch.setattr(owner, name, once)
    return calls


def pytest_configure(config):
    """Register the markers of scipy's own test classes, which tests/test_scipy_signal.py runs
    against tensorconv (--strict-markers would refuse them): every `mark.<name>` scipy's test
    module, conftest and array-API helpers use, whatever the installed scipy's version."""
    import re
    from importlib.util import find_spec

    known = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}
    names = set()
    for mod in ("scipy.signal.tests.test_signaltools", "scipy.conftest", "scipy._lib._array_api",
                "scipy._lib._testutils", "scipy._lib.array_api_extra.testing"):
        try:
            spec = find_spec(mod)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        text = Path(spec.origin).read_text()
        names |= set(re.findall(r"\bmark\.([A-Za-z_]\w*)", text))
        # scipy's conftest registers its own: config.addinivalue_line("markers", "name...")
        names |= set(re.findall(r"\"markers\",\s*\(?\s*[\"']([A-Za-z_]\w*)", text))
    for name in sorted(names - known):
        config.addinivalue_line("markers", f"{name}: a marker of scipy's own tests")


def pytest_runtest_logreport(report):
    """With TENSORCONV_FAILURE_LOG=FILE, each failure's test id and traceback is appended to FILE
    as it happens: a run stopped by a time limit keeps what failed."""
    path = os.environ.get("TENSORCONV_FAILURE_LOG")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n")


def pytest_collection_modifyitems(config, items):
    if tc.cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: " + _core.cuda_unavailable_reason())
    for item in items:
        if item.get_closest_marker("gpu") is not None:  # not keywords: a folder named gpu matches
            item.add_marker(skip)


@pytest.fixture(scope="session")
def usc_images():
    """All USC-SIPI misc images as (name, float64 array in [0, 1]). Skips when the images are
    not found, unless TENSORCONV_REQUIRE_DATA is set (CI), where that is a failure."""
    try:
        images = list(load_usc_sipi())
    except FileNotFoundError as e:
        if os.environ.get("TENSORCONV_REQUIRE_DATA"):
            raise
        pytest.skip(str(e))
    return images


# the accuracy suite's kernels and cached scipy references live in the package (shared with
# `python -m tensorconv.accuracy`); re-exported for the tests that import them from here
from tensorconv.accuracy import accuracy_kernel, reference_dir, scipy_reference  # noqa: E402,F401


@pytest.fixture(scope="session")
def accuracy_rows():
    return ACCURACY_ROWS


def _report_dir() -> Path:
    env = os.environ.get("TENSORCONV_REPORT_DIR")
    return Path(env) if env else cache_dir() / "report"


def pytest_sessionstart(session):
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        for part in _report_dir().glob("accuracy.part-*.json"):
            part.unlink()


def pytest_sessionfinish(session, exitstatus):
    out = _report_dir()
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # under pytest-xdist each worker leaves its rows for the controller to merge
        if ACCURACY_ROWS:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"accuracy.part-{worker}.json").write_text(json.dumps(ACCURACY_ROWS))
        return
    for part in sorted(out.glob("accuracy.part-*.json")):
        ACCURACY_ROWS.extend(json.loads(part.read_text()))
        part.unlink()
    if not ACCURACY_ROWS:
        return
    from tensorconv.accuracy import report  # the same writer as python -m tensorconv.accuracy

    report(ACCURACY_ROWS, out, {"cuda_available": tc.cuda_available()})
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"accuracy report: {out / 'accuracy.md'}")
