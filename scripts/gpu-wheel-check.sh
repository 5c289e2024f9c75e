#!/usr/bin/env bash
# On a CUDA machine, from the repository root: install a CUDA wheel into a fresh venv whose cuFFT
# and cuBLAS come from the NVIDIA pip wheels' layout (site-packages/nvidia/cu13/lib), with the
# toolkit off the library path, check where they were loaded from, run the GPU tests from the
# installed wheel, then again with CUDA_FORCE_PTX_JIT=1 (the driver compiles the wheel's PTX,
# compute_80, instead of running its sm_90a code).
#   scripts/gpu-wheel-check.sh [WHEEL] [OUTDIR]     (default: the newest dist/cuda/*.whl, ./wheel-check-out)
# The NVIDIA wheels: .whl/nvidia_{cufft,cublas,nvjitlink}-*.whl when carried, else copies of the
# toolkit's libcufft.so.12, libcublas.so.13, libcublasLt.so.13 put where those wheels put them.
# Settings: STAGES ("probe gpu ptx"; each under 10 minutes, so one call may take some), PYTHON
# (python3), VENV (/tmp/tc-wheel-venv), GPU_S / PTX_S (time limits, 480 / 420 s), PYTEST_ARGS
# (-m gpu -q -x tests), PTX_ARGS (the PTX run's tests: test_gpu_core, test_im2tensor, test_fir,
# test_toeplitz_tc). Failures are written as they happen to OUTDIR/{gpu,ptx}-failures.txt, so a
# stage cut by its time limit still says what failed.
# CUDA_FORCE_PTX_JIT=1 applies to the whole process (CuPy's and the libraries' code too). To JIT
# only tensorconv's code, build a PTX-only wheel and run its GPU tests without it:
#   CUDA_ARCHS=80-virtual OUT=dist-ptx BUILD_ROOT=build/wheels-ptx scripts/build-wheels.sh cuda
#   STAGES="probe gpu" scripts/gpu-wheel-check.sh dist-ptx/cuda/tensorconv-*.whl ptx-wheel-out
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
whl=${1:-$(ls -t dist/cuda/tensorconv-*.whl 2>/dev/null | head -1)}
out=${2:-wheel-check-out}
py=${PYTHON:-python3}
venv=${VENV:-/tmp/tc-wheel-venv}
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -f "$whl" ] || { echo "no wheel (build one: JOBS=16 scripts/build-wheels.sh cuda)"; exit 2; }
echo "wheel: $whl ($(du -h "$whl" | cut -f1))" | tee "$out/summary.txt"

rm -rf "$venv"
"$py" -m venv --system-site-packages "$venv"  # numpy, scipy, pytest ... from the machine
t0=$(date +%s%N)
PATH="$venv/bin" "$venv/bin/python" -m pip install -q --no-index --no-deps --ignore-installed "$whl"
echo "install: $(( ($(date +%s%N) - t0) / 1000000 )) ms (no compiler on PATH)" | tee -a "$out/summary.txt"
site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# the machine's packages (numpy, scipy, pytest, torch ...) behind the wheel's, also where PYTHON
# is itself a venv (whose packages --system-site-packages does not reach)
"$py" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" > "$site/_machine.pth"
ls .whl/*.whl > /dev/null 2>&1 && "$venv/bin/python" -m pip install -q --no-index --find-links .whl \
  astropy dask distributed > "$out/pip-extras.txt" 2>&1 || echo "astropy/dask from .whl: not installed (see $out/pip-extras.txt)" | tee -a "$out/summary.txt"
if ls .whl/nvidia_cufft-*.whl > /dev/null 2>&1; then
  "$venv/bin/python" -m pip install -q --no-index --no-deps .whl/nvidia_*.whl
else  # the same files, where nvidia-cufft / nvidia-cublas put them
  tk=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}")/lib64
  mkdir -p "$site/nvidia/cu13/lib"
  cp -L "$tk"/libcufft.so.12 "$tk"/libcublas.so.13 "$tk"/libcublasLt.so.13 "$site/nvidia/cu13/lib/"
fi
# the toolkit off the library path (the driver's libcuda stays where the system has it)
ldp=$(echo "${LD_LIBRARY_PATH:-}" | tr ':' '\n' | grep -v -i cuda | paste -sd: -)
run() { env LD_LIBRARY_PATH="$ldp" PYTHONPATH= CUDA_HOME= CUDA_PATH= "$@"; }

stages=" ${STAGES:-probe gpu ptx} "
export CUDA_CACHE_MAXSIZE=4294967296  # the PTX run's JIT output kept for the next one
if [[ $stages == *" probe "* ]]; then
run "$venv/bin/python" - > "$out/probe.txt" 2>&1 <<'PY'
import time, resource
t = time.perf_counter()
import tensorconv as tc
print(f"import: {time.perf_counter() - t:.3f} s, RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
from tensorconv import _core
import numpy as np
print("file", tc.__file__, "archs", _core.CUDA_ARCHS, "device", _core.cuda_device_name(),
      "cuda_available", tc.cuda_available())
x = np.random.rand(256, 256).astype(np.float32); k = np.random.rand(9, 9).astype(np.float32)
for m, prec in (("fft", "fp32"), ("im2tensor_cublas", "fp32"), ("naive", "fp32"),
                ("toeplitz_tc", "fp16fp32")):  # (toeplitz_tc's fp32 needs sm_90 code)
    try:
        tc.correlate2d(x, k, method=m, precision=prec); print(m, prec, "ran")
    except Exception as e:
        print(m, prec, "failed:", e)
print("cufft from", _core.cuda_library_path("cufft"))
print("cublas from", _core.cuda_library_path("cublas"))
print(tc.methods_table())
PY
cat "$out/probe.txt" | head -12 | tee -a "$out/summary.txt"
grep -q "cufft from $site/nvidia/cu13/lib" "$out/probe.txt" && echo "cuFFT from the pip layout: ok" \
  | tee -a "$out/summary.txt" || echo "cuFFT NOT from the pip layout" | tee -a "$out/summary.txt"
fi

if [[ $stages == *" gpu "* ]]; then
timeout "${GPU_S:-480}" env LD_LIBRARY_PATH="$ldp" PYTHONPATH= \
  TENSORCONV_FAILURE_LOG="$out/gpu-failures.txt" "$venv/bin/python" -m pytest \
  -p no:cacheprovider ${PYTEST_ARGS:--m gpu -q -x tests} > "$out/gpu-tests.txt" 2>&1
echo "gpu tests: rc=$? $(tail -1 "$out/gpu-tests.txt")" | tee -a "$out/summary.txt"
fi

if [[ $stages == *" ptx "* ]]; then
# One process loads every module first (EAGER), so the driver compiles the PTX once into its
# cache (CUDA_CACHE_MAXSIZE above) instead of in each test worker at once.
t0=$SECONDS
CUDA_FORCE_PTX_JIT=1 CUDA_MODULE_LOADING=EAGER run "$venv/bin/python" -c \
  "import tensorconv as tc, numpy as np; tc.correlate2d(np.ones((64, 64), np.float32), np.ones((3, 3)), method='naive')" \
  > "$out/ptx-jit.txt" 2>&1
echo "PTX JIT of every module: rc=$? $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
timeout "${PTX_S:-420}" env CUDA_FORCE_PTX_JIT=1 LD_LIBRARY_PATH="$ldp" PYTHONPATH= \
  TENSORCONV_FAILURE_LOG="$out/ptx-failures.txt" "$venv/bin/python" -m pytest -p no:cacheprovider -q -m gpu \
  ${PTX_ARGS:-tests/test_gpu_core.py tests/test_im2tensor.py tests/test_fir.py tests/test_toeplitz_tc.py} \
  > "$out/ptx-tests.txt" 2>&1
echo "CUDA_FORCE_PTX_JIT=1 tests: rc=$? $(tail -1 "$out/ptx-tests.txt")" | tee -a "$out/summary.txt"
CUDA_FORCE_PTX_JIT=1 run "$venv/bin/python" -c "import tensorconv as tc; print(tc.methods_table())" \
  > "$out/ptx-methods.txt" 2>&1
fi
