"""method='auto': the measured cost model (_autotune) behind choose_method, checked against a
registry where every method is available (so it runs without a GPU too), with synthetic models
and with the shipped H100 defaults."""

import json

import numpy as np
import pytest

import tensorconv as tc
from tensorconv import _api, _autotune, _bounds
from tensorconv.methods import MethodInfo

ALL = ("fp16", "fp16fp32", "bf16", "tf32", "fp32", "fp64")


@pytest.fixture
def every_method_available(monkeypatch):
    rows = [MethodInfo(m.name, m.device, m.precisions, True, "", m.summary, m.entry)
            for m in tc.methods()]
    names = {r.name for r in rows}
    for needed in ("naive_shmem", "separable", "fft", "im2tensor_fused", "im2tensor_atomic"):
        if needed not in names:
            pytest.skip(f"{needed} is not in this build's registry")
    monkeypatch.setattr(_api, "_methods", lambda: rows)


def gaussian(k):
    g = np.exp(-0.5 * ((np.arange(k) - k // 2) / (k / 6)) ** 2)
    return np.outer(g, g)


def random_kernel(k):
    return np.random.default_rng(k).random((k, k))


def point(prec, n, k, ms, mape=None):
    return {"precision": prec, "image": [n, n], "k": k, "ms": ms, "mape": mape or {}}


@pytest.fixture
def model(monkeypatch):
    """A synthetic model: at 4096, k=3 naive_shmem is fastest, k=55 fft; atomic is fastest of
    all everywhere; 'naive' is fast but measured over the bound; separable rank-1 is fastest."""
    pts = []
    for prec in ALL:
        ok = {m: _bounds.MAPE_PCT[prec] / 10 for m in
              ("naive_shmem", "fft", "im2tensor_fused", "separable", "separable:rank1",
               "im2tensor_atomic")}
        bad = {**ok, "naive": _bounds.MAPE_PCT[prec] * 10}
        pts.append(point(prec, 4096, 3, {"naive_shmem": 1.0, "fft": 4.0, "im2tensor_fused": 2.0,
                                         "im2tensor_atomic": 0.1, "naive": 0.2, "separable": 3.0,
                                         "separable:rank1": 0.5}, bad))
        pts.append(point(prec, 4096, 55, {"naive_shmem": 40.0, "fft": 4.0, "im2tensor_fused": 8.0,
                                          "im2tensor_atomic": 0.1, "naive": 0.2, "separable": 90.0,
                                          "separable:rank1": 1.0}, bad))
        pts.append(point(prec, 256, 3, {"naive_shmem": 0.01, "fft": 0.05, "im2tensor_fused": 0.02},
                         ok))
        pts.append(point(prec, 256, 55, {"naive_shmem": 0.2, "fft": 0.05, "im2tensor_fused": 0.1},
                         ok))
    m = {"format": _autotune.FORMAT, "device": "Test GPU", "points": pts}
    monkeypatch.setattr(_autotune, "models", lambda: [("synthetic", m)])
    return m


def pick(prec, kernel, n=4096):
    k = kernel.shape[0]
    return _api.choose_method(prec, True, 1e12, kernel, (n + k - 1, n + k - 1))


@pytest.mark.parametrize("precision", ALL)
def test_fastest_measured_method(every_method_available, model, precision):
    # the model holds fft in every precision: auto only picks what the registry declares
    has_fft = precision in {m.name: m for m in tc.methods()}["fft"].precisions
    assert pick(precision, random_kernel(3)) == "naive_shmem"
    assert pick(precision, random_kernel(55)) == ("fft" if has_fft else "im2tensor_fused")
    # between grid points: log-linear in k (k=15: naive_shmem ~2.5 ms, fused ~3 ms, fft 4 ms)
    assert pick(precision, random_kernel(15)) == "naive_shmem"
    # the image size nearest in log area: 256 -> its own grid
    assert pick(precision, random_kernel(3), 300) == "naive_shmem"


def test_never_atomic_never_over_bound(every_method_available, model):
    for p in ALL:
        for k in (3, 15, 55):
            assert pick(p, random_kernel(k)) not in ("im2tensor_atomic", "naive")


@pytest.mark.parametrize("precision", ALL)
def test_rank1_uses_separable_rank1_time(every_method_available, model, precision):
    assert pick(precision, gaussian(25)) == "separable"
    assert pick(precision, gaussian(3)) == "separable"


def test_naive_shmem_fixed_variant_ranks_only_the_kernels_it_takes(every_method_available):
    """naive_shmem's fp32 rows on odd square kernels of 3..17 taps are its fixed-shape variant's
    (naive_fixed.cu): model_from_rows keeps them apart, and a kernel the variant does not take
    (even, non-square) is not ranked on them."""
    def row(impl, k, ms):
        return {"impl": impl, "precision": "fp32", "image": [4096, 4096], "kernel": [k, k],
                "timing": "kernel", "median_ms": ms, "mape_pct": 1e-6}
    rows = [row("naive_shmem", 3, 0.07), row("naive_shmem", 15, 0.22),
            row("naive_shmem", 25, 0.92), row("naive_shmem", 55, 4.0),
            row("fft", 3, 0.25), row("fft", 15, 0.26), row("fft", 25, 0.27), row("fft", 55, 0.3)]
    m = _autotune.model_from_rows(rows, "Test GPU", "synthetic")
    ms = {p["k"]: p["ms"] for p in m["points"]}
    assert ms[15] == {_autotune.FIXED: 0.22, "fft": 0.26} and "naive_shmem" in ms[25]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_autotune, "models", lambda: [("synthetic", m)])
        order, t, excluded, _ = _autotune.rank("fp32", (15, 15), (4110, 4110),
                                               ["naive_shmem", "fft"])
        assert order == ["naive_shmem", "fft"]
        assert t["naive_shmem"] / t["fft"] == pytest.approx(0.22 / 0.26)
        for shape in ((15, 14), (16, 16)):  # not the variant's: no generic time below k = 25
            order, t, excluded, _ = _autotune.rank("fp32", shape, (4110, 4110),
                                                   ["naive_shmem", "fft"])
            assert order == ["fft"] and "not measured" in excluded["naive_shmem"], shape
        order, t, excluded, _ = _autotune.rank("fp64", (15, 15), (4110, 4110), ["naive_shmem"])
        assert order == [] or "naive_shmem" not in t  # fp64 rows: none in this model


def test_non_finite_kernel_never_spectral(every_method_available, model):
    k = random_kernel(55)
    k[3, 3] = np.nan
    assert pick("fp32", k) == "im2tensor_fused"


def test_methods_missing_at_the_nearest_size_come_from_smaller_grids(every_method_available,
                                                                      model):
    """16384² rows for two methods only: they rank there on their own times, a method measured
    at 4096² only competes at its time scaled by the pixels (16x), and a 256² query does not
    borrow 4096² times scaled down."""
    for prec in ALL:
        model["points"].append(point(prec, 16384, 3, {"naive_shmem": 30.0, "fft": 20.0}))
        model["points"].append(point(prec, 16384, 55, {"naive_shmem": 900.0, "fft": 70.0}))
    order, ms, excluded, where = _autotune.rank(
        "fp32", (3, 3), (16386, 16386), ["naive_shmem", "fft", "im2tensor_fused"])
    assert order == ["fft", "naive_shmem", "im2tensor_fused"], ms  # fused: 2.0 x 16 = 32 ms
    assert ms["im2tensor_fused"] == pytest.approx(2.0 * 16386**2 / 4096**2)
    assert ms["fft"] == pytest.approx(20.0 * 16386**2 / 16384**2)
    assert "others at the grid sizes nearest" in where
    order, ms, excluded, _ = _autotune.rank("fp32", (3, 3), (258, 258),
                                            ["naive_shmem", "separable"])
    assert order == ["naive_shmem"] and "not measured" in excluded["separable"]


def test_explain_says_why(every_method_available, model):
    e = tc.explain((4096, 4096), (55, 55), "fp32", "cuda", mode="valid")
    assert e.method == "fft" and e.device == "cuda"
    assert "synthetic" in e.reason
    assert "non-deterministic" in e.excluded["im2tensor_atomic"] or \
        "deterministic" in e.excluded["im2tensor_atomic"]
    assert "bound" in e.excluded["naive"]
    assert "fft" in str(e)
    assert e.predicted_ms["fft"] == pytest.approx(4.0)


def test_explain_bad_input():
    with pytest.raises(ValueError, match="unknown precision"):
        tc.explain((64, 64), (3, 3), "fp8")
    with pytest.raises(ValueError, match="valid devices"):
        tc.explain((64, 64), (3, 3), "fp32", "tpu")
    with pytest.raises(ValueError, match="image_shape must be a pair"):
        tc.explain((64,), (3, 3))


def test_explain_cpu_on_small_host_problem():
    e = tc.explain((64, 64), (3, 3), "fp64")
    assert e.device == "cpu" and e.method in ("direct", "fft_cpu")


def test_tuned_model_in_cache_comes_first(every_method_available, monkeypatch, tmp_path):
    monkeypatch.setenv("TENSORCONV_CACHE", str(tmp_path))
    monkeypatch.setattr(_autotune, "device_name", lambda: "Test GPU 2")
    rows = [{"impl": "im2tensor_fused", "precision": "fp32", "image": [1024, 1024],
             "kernel": [k, k], "kernel_kind": "random", "timing": "kernel", "median_ms": 0.1,
             "mape_pct": 1e-6} for k in (3, 55)]
    rows += [{**r, "impl": "naive_shmem", "median_ms": 0.5} for r in rows]
    model = _autotune.model_from_rows(rows, "Test GPU 2", "test")
    path = _autotune.save(model)
    assert path == _autotune.model_path() and path.is_relative_to(tmp_path)
    assert json.loads(path.read_text())["device"] == "Test GPU 2"
    assert _autotune.models()[0][0].startswith("tuned on this device")
    assert pick("fp32", random_kernel(3), 1024) == "im2tensor_fused"


def test_shipped_defaults_cover_the_goal_grid():
    m = json.loads(_autotune.DEFAULTS.read_text())
    assert "H100" in m["device"]
    for prec in ALL:
        ks = {p["k"] for p in m["points"] if p["precision"] == prec and p["image"] == [4096, 4096]}
        assert {3, 15, 25, 35, 55} <= ks, (prec, sorted(ks))

    # rank-1 kernels: separable's one-pass time up to 55 taps, not its rank > 1 time past the
    # tune grid (which had sent 27..55-tap Gaussians to fft at 3x separable's time)
    for prec in ("tf32", "fp32", "fp64"):
        ks = {p["k"] for p in m["points"] if p["precision"] == prec and p["image"] == [4096, 4096]
              and "separable:rank1" in p["ms"]}
        assert {3, 15, 25, 35, 55} <= ks, (prec, sorted(ks))


def test_shipped_defaults_send_large_gaussians_to_separable(every_method_available, monkeypatch):
    monkeypatch.setattr(_autotune, "models",
                        lambda: [("shipped", json.loads(_autotune.DEFAULTS.read_text()))])
    for prec in ("tf32", "fp32", "fp64"):
        for k in (27, 35, 55):
            assert pick(prec, gaussian(k)) == "separable", (prec, k)
        assert pick(prec, random_kernel(55)) != "separable", prec

def test_host_arrays_stay_on_cpu_when_small(every_method_available, model):
    assert _api.choose_method("fp64", False, 1e3, random_kernel(3), (66, 66)) == "direct"
    assert _api.choose_method("fp64", False, 1e12, random_kernel(3), (4098, 4098)) \
        == "naive_shmem"


def test_no_model_falls_back_to_registry_order_within_bounds(every_method_available,
                                                              monkeypatch):
    monkeypatch.setattr(_autotune, "models", lambda: [])
    # fp16: naive, naive_shmem, separable and fft have looser bounds than fp16's
    assert pick("fp16", random_kernel(15)) == "im2tensor"
    assert pick("fp32", random_kernel(15)) == "naive"


def test_no_method_for_device(monkeypatch):
    monkeypatch.setattr(_api, "_methods", lambda: [m for m in tc.methods() if m.device == "cpu"])
    with pytest.raises(ValueError, match="no available CUDA method supports precision 'bf16'"):
        _api.choose_method("bf16", True)


def test_tune_needs_a_gpu():
    if tc.cuda_available():
        pytest.skip("a CUDA device is present (tune runs in the bench's device call)")
    with pytest.raises(ValueError, match="CUDA device"):
        tc.tune()


H100 = {"sm_count": 132, "sm_clock_mhz": 1980.0, "memory_bandwidth_gbs": 3352.0}


def test_a_model_from_another_gpu_is_scaled_to_this_one(monkeypatch):
    """Measured on an H100, ranked on a GPU with a tenth of its bandwidth and half its compute:
    the transform (bound by memory) slows by more than the direct method does, and the order
    turns; on the GPU the model was measured on, or for a model without its GPU's speed, times
    are as measured."""
    image, kernel = (4096 + 24, 4096 + 24), (25, 25)
    ok = {"naive_shmem": 1e-7, "fft": 1e-7}
    m = {"format": _autotune.FORMAT, "device": "Test GPU",
         "points": [point("fp32", 4096, 25, {"naive_shmem": 0.30, "fft": 0.28}, ok)]}
    monkeypatch.setattr(_autotune, "models", lambda: [("synthetic", m)])
    monkeypatch.setattr(_autotune, "device_name", lambda: "Other GPU")
    monkeypatch.setattr(_autotune, "device_speed", lambda: dict(H100))
    order, plain, _, where = _autotune.rank("fp32", kernel, image, ["naive_shmem", "fft"])
    assert order == ["fft", "naive_shmem"] and "scaled" not in where  # no speed in the model
    m["speed"] = dict(H100)
    slow = {"sm_count": 66, "sm_clock_mhz": 1980.0, "memory_bandwidth_gbs": 335.2}
    monkeypatch.setattr(_autotune, "device_speed", lambda: dict(slow))
    order, ms, _, where = _autotune.rank("fp32", kernel, image, ["naive_shmem", "fft"])
    assert "scaled from its 132 SMs" in where and "this GPU's 66" in where
    assert order == ["naive_shmem", "fft"], ms
    for name in order:
        want = _autotune.scale_to_device(plain[name], name, "fp32", image, kernel, H100, slow)
        assert ms[name] == pytest.approx(want)
        assert 2 * plain[name] < ms[name] < 10 * plain[name], name  # compute's and memory's ratio
    monkeypatch.setattr(_autotune, "device_name", lambda: "Test GPU")  # the model's own GPU
    assert _autotune.rank("fp32", kernel, image, ["naive_shmem", "fft"])[1] == plain


def test_shipped_defaults_record_their_gpus_speed():
    m = json.loads(_autotune.DEFAULTS.read_text())
    assert m["speed"]["sm_count"] == 132 and m["speed"]["memory_bandwidth_gbs"] > 3000
    speed = _autotune.device_speed()
    assert speed is None or speed["sm_count"] > 0  # None without a usable GPU


def test_rank1_screen_agrees_with_the_svd():
    """is_rank1's minor bound only ever answers where the SVD would answer the same: random,
    rank-1 and nearly rank-1 kernels (perturbed around each precision's tolerance), both
    precisions, sizes on both sides of where the screen applies."""
    rng = np.random.default_rng(11)

    def by_svd(k, precision):
        s = np.linalg.svd(k, compute_uv=False)
        return bool(s[0] > 0 and s[1] <= (1e-13 if precision == "fp64" else 1e-6) * s[0])

    seen = set()
    for n in (5, 19, 20, 31, 55):
        for _ in range(20):
            r1 = np.outer(rng.random(n), rng.standard_normal(n))
            cases = [rng.random((n, n)), rng.standard_normal((n, n)), r1]
            cases += [r1 + e * np.abs(r1).max() * rng.standard_normal((n, n))
                      for e in (1e-14, 1e-13, 3e-13, 1e-8, 3e-7, 1e-6, 3e-6, 1e-3)]
            for k in cases:
                for precision in ("fp32", "fp64"):
                    got = _autotune.is_rank1(k, precision)
                    assert got == by_svd(k, precision), (n, precision)
                    seen.add(got)
    assert seen == {True, False}


@pytest.mark.gpu
def test_this_gpus_speed_is_read():
    """What the scaling reads of the GPU: SMs, a clock in MHz and a bandwidth in GB/s of any
    GPU the package runs on (A100 1.6 TB/s ... H200 4.9 TB/s; L4 0.3 TB/s)."""
    speed = _autotune.device_speed()
    assert speed is not None, tc._core.cuda_device_speed()
    assert 10 <= speed["sm_count"] <= 1000
    assert 500 <= speed["sm_clock_mhz"] <= 5000
    assert 100 <= speed["memory_bandwidth_gbs"] <= 20000
