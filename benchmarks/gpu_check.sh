#!/usr/bin/env bash
# The whole GPU check in one call, on a fresh GPU machine with no network: builds luminal with
# the machine's python3 (its pip, scikit-build-core, nanobind, cmake, ninja; falls back to a
# plain CMake build), runs the tests marked gpu, then benchmarks/gpu.py. Logs go under $OUT
# (default ./gpu-out); the last lines printed are the test and benchmark summaries.
# Usage: bash benchmarks/gpu_check.sh   (budget ~8 min: build ~1.5, tests <=3, benchmark <=3)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
SITE=/tmp/luminal-site
export PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
T0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - T0 )) s"; }

{
  echo "== machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  "$PY" -VV
  "$PY" -m pip list 2>/dev/null | grep -iE "^(torch|numpy|pytest|nanobind|scikit.build.core|cmake|ninja|nvidia-cuda-nvrtc) "
  ldconfig -p | grep -E "libcuda\.so\.1|libnvrtc" || true
  nproc
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

# The driver library: the loader's default name, else wherever the driver is mounted.
if ! ldconfig -p | grep -q "libcuda\.so\.1"; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    if [ -e "$d/libcuda.so.1" ]; then export LUMINAL_CUDA_DRIVER="$d/libcuda.so.1"; break; fi
  done
fi
echo "driver: ${LUMINAL_CUDA_DRIVER:-libcuda.so.1 (loader default)}"

echo "== build ($(elapsed))"
rm -rf "$SITE"
if "$PY" -m pip install --no-build-isolation --no-deps --no-index -q --target "$SITE" \
     -Cbuild-dir=build/gpu-wheel . \
     > "$OUT/build.txt" 2>&1; then
  export PYTHONPATH="$SITE"
  echo "built with pip ($(elapsed))"
else
  tail -25 "$OUT/build.txt"
  echo "pip build failed; plain CMake build ($(elapsed))"
  NB=$("$PY" -m nanobind --cmake_dir)
  if cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSKBUILD=ON \
       -DPython_EXECUTABLE="$(command -v "$PY")" -Dnanobind_DIR="$NB" >> "$OUT/build.txt" 2>&1 &&
     cmake --build build/gpu -j "$(nproc)" --target _core >> "$OUT/build.txt" 2>&1; then
    mkdir -p "$SITE"
    cp -r python/luminal "$SITE/"
    cp build/gpu/_core*.so "$SITE/luminal/"
    export PYTHONPATH="$SITE"
    echo "built with cmake ($(elapsed))"
  else
    tail -40 "$OUT/build.txt"
    echo "BUILD FAILED"
    exit 1
  fi
fi
"$PY" - <<'PYEOF' 2>&1 | tee -a "$OUT/machine.txt"
import luminal as lm
from luminal import cuda
print("luminal from", lm.__file__)
print("nvrtc:", cuda.find_nvrtc())
rt = lm.CudaRuntime(cache_dir="")
print("device:", rt.device_name, rt.arch)
cx = lm.Graph()
x = cx.tensor((4,))
y = (x * 2 + 1).output()
rt = cx.search(rt, 1)
rt.set_data(x, [1.0, 2.0, 3.0, 4.0])
rt.execute()
print("smoke:", rt.get(y).tolist(), "(want [3, 5, 7, 9])")
PYEOF

echo "== tests marked gpu ($(elapsed))"
XDIST=""
if "$PY" -c "import xdist" 2>/dev/null; then XDIST="-n 16"; fi  # 16 processes share the GPU
timeout 180 "$PY" -m pytest -m gpu -q -rfE -p no:cacheprovider $XDIST tests \
  --junitxml="$OUT/pytest.xml" > "$OUT/pytest.txt" 2>&1
echo "pytest exit: $? ($(elapsed))"
grep -E "^(FAILED|ERROR)" "$OUT/pytest.txt" | head -40
tail -3 "$OUT/pytest.txt"

echo "== benchmark ($(elapsed))"
timeout 180 "$PY" benchmarks/gpu.py --json "$OUT/bench.json" > "$OUT/bench.txt" 2>&1
echo "benchmark exit: $? ($(elapsed))"
grep -B2 -A40 "^summary" "$OUT/bench.txt" || tail -40 "$OUT/bench.txt"
grep -E "FAILED|Error" "$OUT/bench.txt" | head -10
echo "== done ($(elapsed))"
