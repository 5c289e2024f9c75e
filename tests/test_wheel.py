"""A built wheel, installed into a fresh virtual environment (the CUDA toolkit hidden where
../shared/tools/hide-cuda-toolkit.sh can hide it), imports, reports its GPU methods' reasons and
passes the CPU test suite. Skipped unless TENSORCONV_WHEEL=path/to/tensorconv-*.whl:

    TENSORCONV_WHEEL=dist/cpu/tensorconv-...whl pytest -m wheel tests/test_wheel.py

The fresh environment gets only the wheel (pip --no-deps, no compiler on PATH); its dependencies
(numpy, scipy, pytest ...) come from this environment through a .pth placed after its own
site-packages, so the wheel's tensorconv is the one imported. TENSORCONV_WHEEL_EXTRA: more wheels
to install beside it (e.g. the NVIDIA ones); TENSORCONV_WHEEL_PYTEST: the suite's arguments
(default: every test not marked gpu, slow or wheel); TENSORCONV_WHEEL_HIDE=0 keeps the toolkit
visible (a GPU machine's run)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

WHEEL = os.environ.get("TENSORCONV_WHEEL", "")
REPO = Path(__file__).resolve().parents[1]
# ../shared of the checkout (or of the folder holding it: git worktrees)
HIDE = next((p / "shared" / "tools" / "hide-cuda-toolkit.sh" for p in REPO.parents
             if (p / "shared" / "tools" / "hide-cuda-toolkit.sh").is_file()), None)

if not WHEEL:
    pytest.skip("TENSORCONV_WHEEL=path/to/wheel not given", allow_module_level=True)


def _hidden(cmd):
    if os.environ.get("TENSORCONV_WHEEL_HIDE", "1") == "0":
        return cmd
    if HIDE is None or os.geteuid() != 0:  # the toolkit stays visible: say so, do not fail
        print("note: CUDA toolkit not hidden (needs root and ../shared/tools/hide-cuda-toolkit.sh)")
        return cmd
    return [shutil.which("bash") or "/bin/bash", str(HIDE)] + cmd


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheelenv")
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        text=True).strip())
    wheels = [str(Path(WHEEL).resolve())] + shlex.split(os.environ.get("TENSORCONV_WHEEL_EXTRA", ""))
    tools = root / "tools"  # PATH: the venv and what hiding the toolkit runs, no compiler
    tools.mkdir()
    for tool in ("sh", "readlink", "unshare", "mount"):
        if shutil.which(tool):
            (tools / tool).symlink_to(shutil.which(tool))
    t0 = time.perf_counter()
    subprocess.run(_hidden([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                            "--no-deps", "--no-index", *wheels]),
                   check=True, env={"PATH": f"{env_dir / 'bin'}:{tools}", "HOME": str(root)})
    print(f"\nwheel installed in {time.perf_counter() - t0:.1f} s (no compiler on PATH)")
    # then this environment's packages, after the fresh one's own (tensorconv: the wheel's)
    (site / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return py


def _run(py, code):
    out = subprocess.run(_hidden([str(py), "-c", code]), check=True, capture_output=True,
                         text=True, cwd="/", env={**os.environ, "PYTHONPATH": ""})
    return out.stdout


PROBE = r"""
import json, tensorconv as tc
rows = {m.name: (m.device, m.available, m.reason) for m in tc.methods()}
err = ""
try:
    tc.correlate2d([[1.0, 2.0], [3.0, 4.0]], [[1.0]], method="fft")
except ValueError as e:
    err = str(e)
print(json.dumps({"file": tc.__file__, "cuda": tc.WITH_CUDA, "rows": rows, "fft_error": err,
                  "table": tc.methods_table()}))
"""


def test_wheel_imports_and_explains(venv):
    info = json.loads(_run(venv, PROBE))
    assert str(venv.parent.parent) in info["file"], info["file"]  # the wheel's copy, not a checkout
    core = next(Path(info["file"]).parent.glob("_core*.so"))
    needed = subprocess.run(["readelf", "-d", str(core)], capture_output=True, text=True).stdout
    assert "libcufft" not in needed and "libcublas" not in needed and "libcudart" not in needed
    rows = info["rows"]
    for name, (device, available, reason) in rows.items():
        if device == "cpu":
            assert available, (name, reason)
        else:
            assert available or reason, name
    print(info["table"])
    if not info["cuda"]:
        return
    fft, cublas = rows["fft"], rows["im2tensor_cublas"]
    if not fft[1] and "libcufft" in fft[2]:  # no cuFFT here: the reason names its pip package
        assert "nvidia-cufft" in fft[2]
        assert "libcufft.so.12" in info["fft_error"] and "nvidia-cufft" in info["fft_error"]
    if not cublas[1] and "libcublas" in cublas[2]:
        assert "nvidia-cublas" in cublas[2]
    if os.environ.get("TENSORCONV_WHEEL_EXPECT_NO_CUDA_LIBS") == "1":
        assert "libcufft.so.12 not found" in fft[2], fft
        assert "libcublas.so.13 not found" in cublas[2], cublas


def test_wheel_cpu_suite(venv):
    args = shlex.split(os.environ.get("TENSORCONV_WHEEL_PYTEST",
                                      "-q -m 'not gpu and not slow and not wheel' tests"))
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("TENSORCONV_WHEEL", None)
    res = subprocess.run(_hidden([str(venv), "-m", "pytest", "-p", "no:cacheprovider", *args]),
                         cwd=REPO, env=env)
    assert res.returncode == 0
