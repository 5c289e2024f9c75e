#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer over the C++ core, CPU-only (no CUDA needed).
#
# Builds tensorconv with -fsanitize=address,undefined into a separate folder (the installed
# package is left alone), then runs the CPU tests against that build with libasan preloaded
# (the Python interpreter itself is not instrumented). ASAN_OPTIONS=detect_leaks=0: the
# interpreter's own allocations at exit are not ours; UBSan halts on the first report
# (halt_on_error=1, and -fno-sanitize-recover so no check is only a warning).
#
#   tests/sanitize/host_asan.sh [pytest args...]      (default: the CPU test files below)
#
# Environment: PYTHON (default: python), ASAN_BUILD (default: /tmp/tensorconv-asan).
# Exit status: the build's or pytest's; any sanitizer report aborts the test process (non-zero).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python}
ROOT=${ASAN_BUILD:-/tmp/tensorconv-asan}
SITE="$ROOT/site"
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
rm -rf "$SITE"
"$PYTHON" -m pip install -q --no-build-isolation --no-deps --target "$SITE" \
  -C cmake.define.TENSORCONV_CUDA=OFF \
  -C cmake.define.CMAKE_CXX_FLAGS="$FLAGS" \
  -C cmake.define.CMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -C build-dir="$ROOT/build" .
so=$(ls "$SITE"/tensorconv/_core*.so)
if ! ldd "$so" | grep -q libasan; then
  echo "host_asan: $so is not linked against libasan (CMAKE_CXX_FLAGS ignored?)" >&2
  exit 2
fi
LIBASAN=$(${CXX:-g++} -print-file-name=libasan.so)
LIBUBSAN=$(${CXX:-g++} -print-file-name=libubsan.so)
# libstdc++ preloaded too: the interpreter does not link it, and without it ASan's __cxa_throw
# interceptor finds no real __cxa_throw (a CHECK failure at the first C++ exception, not ours)
LIBSTDCXX=$(${CXX:-g++} -print-file-name=libstdc++.so)
if [ $# -eq 0 ]; then
  set -- tests/test_api.py tests/test_errors.py tests/test_empty.py tests/test_scipy_compat.py \
    tests/test_cpu_float.py tests/test_direct_avx2.py tests/test_translation_invariance.py \
    tests/test_nonfinite.py tests/test_stacks.py tests/test_plan_options.py \
    tests/test_filter2d_u8.py tests/test_filters.py tests/test_auto_cpu.py tests/test_properties.py \
    tests/test_workspace.py tests/test_methods.py
fi
echo "host_asan: running $* against $SITE"
# reports go to files (pytest captures the process's stderr, so a halting report would
# otherwise vanish with it): $ROOT/report.<pid>
rm -f "$ROOT"/report.*
set +e
env PYTHONPATH="$SITE" LD_PRELOAD="$LIBASAN $LIBUBSAN $LIBSTDCXX" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:log_path="$ROOT/report" \
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path="$ROOT/report" \
  "$PYTHON" -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
reports=$( (ls "$ROOT"/report.* 2>/dev/null || true) | wc -l)
for f in "$ROOT"/report.*; do [ -e "$f" ] && { echo "== $f"; head -40 "$f"; }; done
echo "host_asan: pytest exit $rc, sanitizer reports: $reports"
[ "$reports" -eq 0 ] && exit $rc
exit 1
