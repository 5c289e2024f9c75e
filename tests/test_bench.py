"""python -m tensorconv.bench and python -m tensorconv.accuracy on the CPU: bad input names the
valid choices (no traceback), a small sweep writes design.md's JSON with its tables and figures,
the u8 preset runs against OpenCV, --report redraws from a results file and fills the README
block, and a missing peer library is one line."""

import json

import numpy as np
import pytest

import tensorconv as tc
from bounds import MAPE_PCT
from tensorconv.bench import _peers, _report, _torch
from tensorconv.bench.cli import _torch_grid, main, parser


@pytest.mark.parametrize("args,needle", [
    (["--preset", "nope"], "valid presets: im2tensor, kondo, kelefouras, separable, cpu-float, gpu-core, tc-fp"),
    (["--methods", "nope"], "valid methods: direct"),
    (["--precisions", "fp8"], "valid precisions: fp16, fp16fp32"),
    (["--peers", "matlab"], "valid peers: torch_conv2d"),
    (["--kernels", "a,b"], "--kernels takes integers"),
    (["--preset", "im2tensor", "--quick"], "--quick applies only to --preset stacks"),
    (["--cv2-rs", "3"], "--cv2-rs applies only to --preset filters"),
    (["--preset", "kondo", "--parts", "nope"], "valid parts: general, fig5"),
    (["--preset", "filters", "--parts", "fig4"], "valid parts: gaussian, fig5, bilateral"),
    (["--preset", "filters", "--rs", "0"], "--rs must list positive integers"),
    (["--preset", "stacks", "--host-only", "--skip-host"], "exclude each other"),
    (["--preset", "stacks", "--peers", "none"], "takes no --tune, --timing or --peers"),
    (["--preset", "dask", "--gpus", "0"], "--gpus must be at least 1"),
    (["--preset", "dask", "--device", "cpu", "--methods", "direct,fft_cpu"],
     "takes one --methods value"),
    (["--preset", "dask", "--sizes", "64,128"], "takes one --sizes value"),
    (["--preset", "dask", "--device", "cpu", "--halos", "nope"],
     "--halos takes gather, map_overlap"),
    (["--shapes", "1x1x8x8"], "--shapes applies only to --preset torch"),
    (["--preset", "oneshot", "--shapes", "1x1x8x8"], "--shapes applies only to --preset torch"),
    (["--preset", "torch", "--shapes", "8x64x224"], "--shapes takes NxCxHxW such as"),
    (["--preset", "torch", "--shapes", "0x1x8x8"], "--shapes takes NxCxHxW such as"),
    (["--preset", "torch", "--sizes", "224"], "--preset torch takes --shapes NxCxHxW"),
    (["--preset", "torch", "--methods", "fft"], "--preset torch takes --shapes NxCxHxW"),
    (["--preset", "torch", "--precisions", "fp32,fp64"],
     "--preset torch takes precisions fp16, bf16, fp32; got fp64"),
    (["--preset", "torch", "--kernels", "0"], "--kernels must list positive integers"),
    (["--preset", "torch", "--peers", "none"], "takes no --tune, --timing or --peers"),
    (["--preset", "torch", "--timing", "kernel"], "takes no --tune, --timing or --peers"),
])
def test_bad_input_names_the_choices(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        main(args + ["--no-progress"])
    assert needle in str(e.value)


def test_small_cpu_sweep(tmp_path, capsys):
    assert main(["--sizes", "48", "--kernels", "3,5", "--precisions", "fp32,fp64", "--methods",
                 "direct,fft_cpu,auto", "--peers", "scipy_signal,scipy_ndimage",
                 "--out", str(tmp_path), "--no-progress", "--runs", "3"]) == 0
    files = sorted(p.name for p in tmp_path.iterdir())
    js = next(tmp_path.glob("bench_*.json"))
    doc = json.loads(js.read_text())
    for key in ("device", "created", "tensorconv", "versions", "rows"):
        assert key in doc
    assert doc["versions"]["numpy"] == np.__version__
    impls = {r["impl"] for r in doc["rows"]}
    assert {"direct", "fft_cpu", "auto", "peer:scipy_signal"} <= impls
    for r in doc["rows"]:
        assert r["median_ms"] > 0 and r["runs"] == 3, r
        assert r["image"] == [48, 48] and r["kernel"][0] in (3, 5)
    direct = [r for r in doc["rows"] if r["impl"] == "direct" and r["precision"] == "fp64"]
    assert all(r["mape_pct"] < 1e-10 for r in direct)
    md = next(tmp_path.glob("bench_*.md")).read_text()
    assert "| impl | k=3 | k=5 |" in md and "auto within 10 %" in md
    assert any(f.endswith(".png") for f in files) or pytest.importorskip("matplotlib") is None


@pytest.mark.parametrize("preset", ["gpu-core", "tc-fp", "workspace-nonfinite"])
def test_gpu_family_presets_anywhere(preset, tmp_path, capsys):
    """The GPU family presets (formerly benchmarks/gpu_core.py, tc_fp.py and
    workspace_nonfinite.py) run on any machine: without a usable GPU every row is skipped with
    the probe's reason in one line; with one, the preset's methods are timed ('call' timing for
    tc-fp: no sleep kernel in front; workspace-nonfinite: images with NaN/inf and plan-only
    workspace rows too)."""
    assert main(["--preset", preset, "--sizes", "64", "--kernels", "3", "--precisions", "fp32",
                 "--runs", "3", "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob(f"{preset}_*.json")).read_text())
    if not tc.cuda_available():
        assert "GPU methods and peers are skipped: " in capsys.readouterr().err
        assert doc["rows"] == []
        return
    timings = {"gpu-core": {"kernel", "end_to_end"}, "tc-fp": {"call"},
               "workspace-nonfinite": {"kernel"}}[preset]
    plan_only = [r for r in doc["rows"] if r["timing"] == "plan"]
    ours = [r for r in doc["rows"] if not r["impl"].startswith("peer:") and r["timing"] != "plan"]
    assert {"fft", "naive_shmem" if preset != "workspace-nonfinite" else "im2tensor_fused"} <= \
        {r["impl"] for r in ours}
    assert {r["timing"] for r in ours} == timings
    assert all(r["median_ms"] > 0 and r["precision"] == "fp32" for r in ours)
    if preset == "workspace-nonfinite":
        bad = [r for r in ours if r.get("data") == "nonfinite"]
        assert bad and all(r["mape_pct"] is None for r in bad)  # NaN/inf in their windows
        assert plan_only and all(r.get("extra_bytes", 0) >= 0 for r in plan_only)
    else:
        assert not plan_only


def test_scipy_compat_preset_small(tmp_path):
    """--preset scipy-compat (formerly benchmarks/scipy_compat.py) at a tiny size: complex128
    `direct` against scipy.signal.correlate2d in the same run, its error beside it."""
    assert main(["--preset", "scipy-compat", "--sizes", "40", "--kernels", "5", "--runs", "3",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("scipy-compat_*.json")).read_text())
    cpu = {r["impl"]: r for r in doc["rows"] if r["dtype"] == "complex128"}
    assert set(cpu) == {"direct", "peer:scipy_signal"}
    assert all(r["median_ms"] > 0 and r["image"] == [40, 40] for r in cpu.values())
    assert cpu["direct"]["rel_l2"] <= 1e-13
    gpu = [r for r in doc["rows"] if r["dtype"] != "complex128"]
    assert all(r.get("rel_l2", 0) <= 1e-5 for r in gpu)


def test_astropy_preset_small(tmp_path):
    """--preset astropy (formerly benchmarks/astropy_conv.py) at a tiny size: our convolve and
    convolve_fft beside astropy's in the same run, with and without NaN, float32 and float64,
    each of ours with its error against astropy's convolve."""
    pytest.importorskip("astropy", reason="astropy is the preset's peer")
    assert main(["--preset", "astropy", "--sizes", "48", "--kernels", "5", "--runs", "3",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("astropy_*.json")).read_text())
    cpu = [r for r in doc["rows"] if r["timing"] == "end_to_end"]
    assert {r["impl"] for r in cpu} == {"tensorconv.astropy.convolve",
                                        "tensorconv.astropy.convolve_fft",
                                        "peer:astropy_convolve", "peer:astropy_convolve_fft"}
    assert {(r["dtype"], r["nan_frac"]) for r in cpu} == {
        (d, f) for d in ("float32", "float64") for f in (0.0, 0.01)}
    for r in cpu:
        assert r["median_ms"] > 0
        if r["impl"].startswith("tensorconv"):
            assert r["max_rel_vs_astropy"] <= (1e-12 if r["dtype"] == "float64" else 1e-5), r


def test_call_timing_on_the_cpu(tmp_path):
    """--timing call: host methods are timed as they are for the other timings, the rows say
    'call' and the Markdown has the call table."""
    assert main(["--sizes", "48", "--kernels", "3", "--precisions", "fp64", "--methods",
                 "direct", "--peers", "none", "--timing", "call", "--runs", "3", "--out",
                 str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("bench_*.json")).read_text())
    assert [r["timing"] for r in doc["rows"]] == ["call"] and doc["rows"][0]["median_ms"] > 0
    assert "· call · 48x48 · fp64" in next(tmp_path.glob("bench_*.md")).read_text()


def test_missing_peer_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(_peers.PEER_MODULE, "opencv", "no_such_module_tc")
    lines = []
    assert _peers.usable(["opencv", "scipy_signal"], lines.append) == ["scipy_signal"]
    assert len(lines) == 1 and lines[0].startswith("peer opencv skipped: no_such_module_tc")


def test_kelefouras_preset_small(tmp_path):
    pytest.importorskip("cv2", reason="OpenCV is the preset's peer")
    assert main(["--preset", "kelefouras", "--sizes", "64x48", "--kernels", "3", "--out",
                 str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("kelefouras_*.json")).read_text())
    ours = [r for r in doc["rows"] if r["impl"] == "simd_u8"]
    assert ours and all(r["image"] == [48, 64] and r["precision"] == "uint8" for r in ours)
    assert all(r["max_abs_diff_vs_opencv"] <= 1 for r in ours)
    assert {r["kernel_kind"] for r in ours} == {"filter2d16", "filter2d32", "gaussian"}
    assert all(r["algorithm"] and r["median_ms"] > 0 and r["cps"] > 0 for r in ours)
    assert {r["impl"] for r in doc["rows"]} == {"simd_u8", "peer:opencv",
                                                "peer:opencv_gaussianblur"}
    md = next(tmp_path.glob("kelefouras_*.md")).read_text()
    assert "| gaussian vs opencv_gaussianblur (>= 1.5x) |" in md


def test_cpu_float_preset_small(tmp_path, capsys):
    """--preset cpu-float at a tiny size: auto, direct and fft_cpu rows; every CPU peer either
    has rows or was skipped with a line naming it; FMA peak, load average and the 32x32
    small-call rows in the JSON; the speed-up table in the Markdown."""
    assert main(["--preset", "cpu-float", "--sizes", "64", "--kernels", "3", "--budget-s", "20",
                 "--runs", "3", "--out", str(tmp_path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    doc = json.loads(next(tmp_path.glob("cpu-float_*.json")).read_text())
    grid = [r for r in doc["rows"] if r["part"] == "cpu_float"]
    impls = {r["impl"] for r in grid}
    assert {"auto", "direct", "fft_cpu"} <= impls
    for r in grid:
        assert r["image"] == [64, 64] and r["kernel"] == [3, 3] and r["timing"] == "end_to_end"
        assert r["precision"] in ("fp32", "fp64") and r["median_ms"] > 0
        if r["impl"] == "auto":
            assert r["chose"] in ("direct", "fft_cpu")
    for peer in ("scipy_signal", "scipy_fftconvolve", "scipy_oaconvolve", "scipy_ndimage",
                 "opencv"):
        assert "peer:" + peer in impls or f"peer {peer} skipped" in err, peer
    assert {"peer:scipy_fftconvolve", "peer:scipy_oaconvolve"} <= impls  # scipy is required
    for r in grid:  # every method and peer agrees with the float64 reference
        assert r["mape_pct"] is not None and r["mape_pct"] <= MAPE_PCT[r["precision"]], r
    assert doc["fma_peak_gflops"].get("fp64", 0) > 0 and all("load1" in r for r in grid)
    assert len(doc["load_average_start"]) == 3 and len(doc["load_average_end"]) == 3
    small = [r for r in doc["rows"] if r["part"] == "small_call"]
    assert {(r["impl"], r["mode"]) for r in small} == {
        (i, m) for i in ("auto", "peer:scipy_signal") for m in ("full", "same", "valid")}
    md = next(tmp_path.glob("cpu-float_*.md")).read_text()
    assert "speed-up of auto over the fastest peer" in md and "small calls: 32x32" in md


def _gpu_rows_possible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return tc.cuda_available() and torch.cuda.is_available()


def test_filters_preset_small(tmp_path, capsys):
    """--preset filters (formerly benchmarks/filters.py + plot_filters.py) at a tiny size: the
    host cv2 peers of the Gaussian and the bilateral at the --cv2-rs radii; without a GPU the
    GPU rows are skipped with one line each; with one, filters.gaussian / .bilateral beside
    their GPU peers, the Gaussian's error against cupyx's float64 result within the fp32
    bound. --report redraws the Markdown (the Gaussian table) and the PNGs."""
    pytest.importorskip("cv2", reason="cv2.GaussianBlur / bilateralFilter are the host peers")
    assert main(["--preset", "filters", "--sizes", "64", "--rs", "1,3", "--cv2-rs", "1,3",
                 "--kornia-max-r", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    err = capsys.readouterr().err
    js = next(tmp_path.glob("filters_*.json"))
    doc = json.loads(js.read_text())
    assert doc["preset"] == "filters" and "errors" not in doc
    host = [r for r in doc["rows"] if r["timing"] == "host" and r["impl"].startswith("peer:")]
    assert {(r["impl"], r["kernel"][0]) for r in host} == {
        (i, k) for i in ("peer:cv2_GaussianBlur", "peer:cv2_bilateralFilter") for k in (3, 7)}
    assert all(r["median_ms"] > 0 and r["image"] == [64, 64] for r in host)
    if not _gpu_rows_possible():
        for part in ("gaussian", "fig5", "bilateral"):
            assert f"{part} GPU rows skipped" in err or f"{part} rows skipped" in err, part
        assert len(doc["rows"]) == 4
    else:
        g = [r for r in doc["rows"] if r["impl"] == "filters.gaussian" and "mape_pct" in r]
        assert g and all(r["mape_pct"] <= MAPE_PCT["fp32"] for r in g)
        assert {"bilateral_cuda", "bilateral_tc_32x8x16", "bilateral_tc_16x16x16"} <= {
            r["impl"] for r in doc["rows"] if r["part"] == "fig5"}
        assert "filters.gaussian against its peers" in js.with_suffix(".md").read_text()
    js.with_suffix(".md").unlink()
    assert main(["--report", str(js)]) == 0
    assert "| gaussian | peer:cv2_GaussianBlur |" in js.with_suffix(".md").read_text()


def test_kondo_fig5_part(tmp_path, capsys):
    """--preset kondo --parts fig5: Kondo's Fig. 5 alone (the bilateral plans: both tensor-core
    layouts and the CUDA-core kernel, fp64 at r = 7 only); skipped with its reason without a
    GPU."""
    assert main(["--preset", "kondo", "--parts", "fig5", "--sizes", "64", "--rs", "1,7",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("kondo_*.json")).read_text())
    if not _gpu_rows_possible():
        assert doc["rows"] == [] and "fig5 rows skipped: no usable CUDA device" in \
            capsys.readouterr().err
        return
    got = {(r["impl"], r["precision"], r["kernel"][0]) for r in doc["rows"]}
    assert got == {(m, p, k) for m, p in (("bilateral_cuda", "fp32"),
                                          ("bilateral_tc_32x8x16", "fp16fp32"),
                                          ("bilateral_tc_16x16x16", "fp16fp32"))
                   for k in (3, 15)} | {("bilateral_cuda", "fp64", 15)}
    assert all(r["part"] == "fig5" and r["median_ms"] > 0 and r["max_rel_err"] is not None
               for r in doc["rows"])
    assert any(p.name.endswith("_fig5.png") for p in tmp_path.iterdir()) or \
        pytest.importorskip("matplotlib") is None


def test_stacks_preset_cpu_branch(tmp_path, capsys):
    """--preset stacks (formerly benchmarks/stacks.py) without a GPU: the stack call against a
    loop of plan calls on the CPU, the GPU rows skipped with the probe's reason (on a GPU the
    preset's ~45 s rows run with BENCH_PRESETS=stacks bash scripts/gpu-check.sh)."""
    if _gpu_rows_possible():
        pytest.skip("a CUDA device is present: the GPU rows run with BENCH_PRESETS=stacks bash scripts/gpu-check.sh")
    assert main(["--preset", "stacks", "--quick", "--runs", "2", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    assert "GPU methods and peers are skipped" in capsys.readouterr().err
    doc = json.loads(next(tmp_path.glob("stacks_*.json")).read_text())
    assert {r["variant"] for r in doc["rows"]} == {"stack", "loop_of_plan_calls"}
    for r in doc["rows"]:
        assert r["part"] == "stacks" and r["batch"] == 8 and r["images_per_s"] > 0
    assert doc["rows"][0]["mape_pct"] < 1e-10
    assert main(["--preset", "stacks", "--host-only", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    assert json.loads(next(tmp_path.glob("stacks_host_*.json")).read_text())["rows"] == []


def test_dask_preset_cpu(tmp_path):
    """--preset dask --device cpu (formerly benchmarks/dask_multi_gpu.py's CPU check): a
    2-process LocalCluster on a tiny image, one call and tensorconv.dask timed, every result
    chunk's SHA-1 equal to the one call's slice, for two boundaries; --overhead rows."""
    pytest.importorskip("distributed", reason="the preset's cluster")
    assert main(["--preset", "dask", "--device", "cpu", "--sizes", "200", "--chunk", "96",
                 "--kernels", "5", "--boundary", "fill,symm", "--overhead", "--runs", "1",
                 "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("dask_*.json")).read_text())
    peers = [(r["peer"], r["boundary"]) for r in doc["rows"]]
    assert peers == [(p, b) for b in ("fill", "symm")
                     for p in ("one_call", "overhead", "tensorconv.dask")]
    for r in doc["rows"]:
        assert r["image"] == [200, 200] and r["seconds"] > 0 and r["impl"] in (
            "direct", "dask_halo_and_copy_only")
        if r["peer"] == "tensorconv.dask":
            assert r["equal"] is True and r["workers"] == 2 and r["chunk"] == [96, 96]


def test_dask_preset_cpu_both_halo_paths(tmp_path):
    """--halos gather,map_overlap: both tensorconv.dask paths timed and checked in one run."""
    pytest.importorskip("distributed", reason="the preset's cluster")
    assert main(["--preset", "dask", "--device", "cpu", "--sizes", "160", "--chunk", "64",
                 "--kernels", "5", "--boundary", "wrap", "--halos", "gather,map_overlap",
                 "--runs", "1", "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads(next(tmp_path.glob("dask_*.json")).read_text())
    got = [(r["peer"], r.get("halos")) for r in doc["rows"]]
    assert got == [("one_call", None), ("tensorconv.dask", "gather"),
                   ("tensorconv.dask", "map_overlap")]
    assert all(r["equal"] for r in doc["rows"] if r["peer"] == "tensorconv.dask")


def test_report_and_readme_block(tmp_path):
    rows = []
    for impl, ms in (("naive_shmem", 1.0), ("fft", 0.5), ("auto", 0.52),
                     ("im2tensor_atomic", 0.1)):
        rows.append({"impl": impl, "precision": "fp32", "image": [4096, 4096], "kernel": [55, 55],
                     "kernel_kind": "random", "timing": "kernel", "median_ms": ms, "runs": 20,
                     "mape_pct": 1e-6, "part": "table3", "extra_bytes": 0,
                     **({"chose": "fft"} if impl == "auto" else {})})
    doc = {"device": "Test GPU", "created": "2026-11-25T00:00:00+00:00", "tensorconv": "0",
           "rows": rows}
    js = tmp_path / "im2tensor_test.json"
    js.write_text(json.dumps(doc))
    readme = tmp_path / "README.md"
    readme.write_text("a\n<!-- bench-report:begin -->\nold\n<!-- bench-report:end -->\nb\n")
    assert main(["--report", str(js), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old" not in text and text.startswith("a\n") and text.endswith("b\n")
    assert "| 4096 | fp32 | 55 | random | 0.52 (fft) | fft | 0.5 | 1.04 |" in text
    assert "auto within 10 % of the best at 1 of 1 points." in text
    res = _report.auto_rows(rows)
    assert res[0]["best"] == "fft" and res[0]["fastest"] == "im2tensor_atomic"


def test_tune_option_without_gpu(capsys):
    if tc.cuda_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(SystemExit, match="tensorconv-bench: error: tune.. times methods on a CUDA"):
        main(["--tune", "--no-progress"])


def test_accuracy_cli_bad_input():
    from tensorconv.accuracy.cli import main as acc

    with pytest.raises(SystemExit, match="valid methods: direct"):
        acc(["--methods", "nope"])
    with pytest.raises(SystemExit, match="valid precisions"):
        acc(["--precisions", "fp8"])


def test_accuracy_cli_small(tmp_path, usc_images):
    from tensorconv.accuracy.cli import main as acc

    assert acc(["--methods", "direct", "--precisions", "fp64", "--kernels", "3",
                "--out", str(tmp_path), "--no-progress"]) == 0
    doc = json.loads((tmp_path / "accuracy.json").read_text())
    (row,) = doc["rows"]
    assert row["images"] == 39 and row["mape_median"] <= row["bound"]
    assert "| direct | fp64 |" in (tmp_path / "accuracy.md").read_text()


def test_torch_preset_grid():
    """--preset torch's grid: the full one, --quick's, and --shapes / --kernels / --precisions
    over either."""
    def grid(*args):
        return _torch_grid(parser().parse_args(["--preset", "torch", *args]), tuple(
            args[args.index("--precisions") + 1].split(",")) if "--precisions" in args else ())

    assert grid() == {"shapes": ((32, 128, 56, 56), (8, 64, 224, 224), (1, 16, 1024, 1024)),
                      "ks": (3, 7, 15, 31, 51, 63), "precisions": ("fp16", "bf16", "fp32")}
    assert grid("--precisions", "all") == grid()
    assert grid("--quick") == {"shapes": ((8, 64, 224, 224), (1, 16, 1024, 1024)),
                               "ks": (7, 31, 51), "precisions": ("fp32", "fp16")}
    assert grid("--quick", "--shapes", "2x3x40x50", "--kernels", "3,5", "--precisions",
                "bf16") == {"shapes": ((2, 3, 40, 50),), "ks": (3, 5), "precisions": ("bf16",)}


def test_torch_preset_without_cuda_is_one_line(monkeypatch, tmp_path):
    """Without a CUDA device (or tensorconv's CUDA methods) --preset torch stops with one line
    naming the reason, before anything is timed or written."""
    if _torch.unavailable() is None:
        monkeypatch.setattr(_torch, "unavailable", lambda: "PyTorch sees no CUDA device")
    with pytest.raises(SystemExit) as e:
        main(["--preset", "torch", "--quick", "--out", str(tmp_path), "--no-progress"])
    msg = str(e.value)
    assert msg.startswith("tensorconv-bench: error: --preset torch times CUDA tensors: ")
    assert "\n" not in msg and msg.split(": ", 2)[2]
    assert not any(tmp_path.iterdir())


def _torch_rows(speedups):
    """Synthetic --preset torch rows: cuDNN at 10 ms (forward) and 30 ms (forward + backward),
    ours faster by speedups[k] = (forward x, forward + backward x), two shapes, fp32 and fp16."""
    rows = []
    for shape in ((8, 64, 224, 224), (1, 16, 1024, 1024)):
        for prec in ("fp32", "fp16"):
            for k, (fx, bx) in speedups.items():
                base = {"part": "torch", "precision": prec, "dtype": _torch.DTYPES[prec],
                        "shape": list(shape), "batch": shape[0], "channels": shape[1],
                        "image": list(shape[2:]), "kernel": [k, k], "mode": "same",
                        "boundary": "fill", "timing": "call", "runs": 20}
                for impl, f, b in ((_torch.CUDNN, 10.0, 30.0),
                                   (_torch.OURS, 10.0 / fx, 30.0 / bx)):
                    rows.append({"impl": impl, "variant": "forward", **base, "median_ms": f,
                                 "mape_pct": 1e-5})
                    rows.append({"impl": impl, "variant": "fwd_bwd", **base, "median_ms": b,
                                 "mape_pct": 1e-5, "mape_grad_input_pct": 2e-5,
                                 "mape_grad_weight_pct": 3e-5})
    return rows


def test_torch_rows_to_report(tmp_path):
    """Synthetic --preset torch rows through _report.write: JSON, the Markdown goal table (the
    goal: forward + backward >= 5x from k = 15, forward >= 5x from k = 15 and >= 1x at k = 7;
    no goal at k = 3), one PNG per shape; --report redraws the same."""
    rows = _torch_rows({3: (0.5, 0.5), 7: (1.2, 0.8), 15: (6.0, 5.5), 31: (8.0, 4.0)})
    rows.append({"impl": _torch.OURS, "variant": "forward", "part": "torch", "precision": "fp32",
                 "shape": [1, 16, 1024, 1024], "image": [1024, 1024], "kernel": [63, 63],
                 "timing": "call", "median_ms": None, "error": "OutOfMemoryError()"})
    doc = {"device": "Test GPU", "created": "2026-11-25T00:00:00+00:00", "tensorconv": "0",
           "preset": "torch", "rows": rows}
    files = _report.write(doc, tmp_path, "torch_test")
    assert json.loads((tmp_path / "torch_test.json").read_text())["rows"] == rows
    md = (tmp_path / "torch_test.md").read_text()
    assert "### tensorconv.torch against cuDNN depthwise" in md
    assert "| 8x64x224x224 | fp16 | 3 | 20 | 10 | 0.5 | 60 | 30 | 0.5 | " in md
    assert "| 8x64x224x224 | fp32 | 7 | 8.333 | 10 | 1.2 | 37.5 | 30 | 0.8 | " \
           "1e-05 / 2e-05 / 3e-05 | 1e-05 / 2e-05 / 3e-05 | yes |" in md
    assert "| 1x16x1024x1024 | fp32 | 15 | 1.667 | 10 | 6 | 5.455 | 30 | 5.5 |" in md
    assert "| 1x16x1024x1024 | fp32 | 31 | 1.25 | 10 | 8 | 7.5 | 30 | 4 |" in md
    lines = [l for l in md.splitlines() if l.startswith("| 8x64x224x224 | fp32 |")]
    assert [l.rsplit("|", 2)[1].strip() for l in lines] == ["—", "yes", "yes", "no"]
    assert "torch goals met at 8 of 12 points." in md  # k = 7 and 15 of 2 shapes x 2 precisions
    assert "error=OutOfMemoryError()" in md  # the flat table keeps the failed row
    if pytest.importorskip("matplotlib"):
        pngs = sorted(f.name for f in files if f.suffix == ".png")
        assert pngs == ["torch_test_1x16x1024x1024.png", "torch_test_8x64x224x224.png"]
    (tmp_path / "torch_test.md").unlink()
    assert main(["--report", str(tmp_path / "torch_test.json")]) == 0
    assert (tmp_path / "torch_test.md").read_text() == md


@pytest.mark.parametrize("k,fx,bx,ok", [(3, 0.1, 0.1, None), (7, 1.0, 0.1, True),
                                        (7, 0.99, 9.0, False), (15, 5.0, 5.0, True),
                                        (51, 9.0, 4.99, False), (63, 4.9, 9.0, False),
                                        (31, 9.0, None, False)])
def test_torch_goal(k, fx, bx, ok):
    assert _torch.goal(k, fx, bx) is ok


def test_torch_rows_on_the_cpu(monkeypatch):
    """The preset's rows on CPU tensors (a host timer in place of CUDA events): both impls,
    forward and forward + backward per point, every error against the float64 conv2d within
    the precision's bound, ours and cuDNN's conv2d alike; the budget cut counts the points
    left."""
    torch = pytest.importorskip("torch", reason="the torch preset's rows need PyTorch")

    from tensorconv.bench._sweep import Sweep
    from tensorconv.bench._timing import Device, time_host

    monkeypatch.setattr(_torch, "time_device", lambda dev, fn, runs, warm, cap, sleep:
                        time_host(fn, runs, warm, cap))
    dev = Device()
    dev.lib, dev.torch = "torch", torch  # its MAPE on CPU tensors
    sweep = Sweep(dev, float("inf"), 10.0, log=lambda s: None)
    g = _torch.grid(shapes=((2, 3, 20, 24),), ks=(3, 7), precisions=("fp32", "bf16"))
    rows = _torch.torch_rows(sweep, g, runs=2, device="cpu")
    assert [(r["precision"], r["kernel"][0], r["impl"], r["variant"]) for r in rows] == [
        (p, k, i, v) for p in ("fp32", "bf16") for k in (3, 7)
        for i in (_torch.OURS, _torch.CUDNN) for v in _torch.PASSES]
    bound = {"fp32": 1e-4, "bf16": 2.0}
    for r in rows:
        assert r["median_ms"] > 0 and r["runs"] == 2 and r["shape"] == [2, 3, 20, 24], r
        errs = [r["mape_pct"]] + ([r["mape_grad_input_pct"], r["mape_grad_weight_pct"]]
                                  if r["variant"] == "fwd_bwd" else [])
        assert all(e is not None and e <= bound[r["precision"]] for e in errs), r
    assert {r["tc_precision"] for r in rows if r["impl"] == _torch.OURS} == {"fp32", "bf16"}
    assert _torch.goals_table(rows)[-2].startswith("torch goals met at ")
    sweep = Sweep(dev, 0.0, 10.0, log=lambda s: None)
    assert _torch.torch_rows(sweep, g, runs=2, device="cpu") == []
    assert sweep.skipped_for_time == 4


def test_sigterm_writes_the_rows_measured(tmp_path, monkeypatch):
    """A time limit's SIGTERM mid-sweep (timeout(1)) still writes the rows measured so far, and
    the file says it was cut short."""
    import os
    import signal

    from tensorconv.bench import _sweep

    add = _sweep.Sweep._add
    sent = []

    def add_then_stop(self, row):
        add(self, row)
        if not sent:
            sent.append(row)
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(_sweep.Sweep, "_add", add_then_stop)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["--sizes", "48", "--kernels", "3,5,7", "--precisions", "fp64", "--methods",
                 "direct", "--peers", "scipy_signal", "--out", str(tmp_path), "--no-progress",
                 "--runs", "3"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back
    doc = json.loads(next(tmp_path.glob("bench_*.json")).read_text())
    assert "SIGTERM" in doc["cut_short"]
    assert 1 <= len(doc["rows"]) < 6 and doc["rows"][0]["impl"] == sent[0]["impl"]
