#!/usr/bin/env bash
# The GPU check (docs/cuda.md §gpu-check): on a machine with an NVIDIA GPU, its driver and CUDA 13
# at /usr/local/cuda, configures and builds ONLY the CUDA parts (-DDS4D_CUDA_CHECK_ONLY=ON: the
# quant formats, the thread pool, the CUDA backend, ds4-cuda-check and, when GoogleTest is
# installed, the GPU tests) -- that configuration needs no Boost, spdlog, systemd or anything else
# the full build does, because such a machine may lack the project's packages and cannot fetch
# them. Then runs the GPU tests (where GoogleTest exists), the device forward on ds4-tiny (where the
# full configuration builds), ds4-cuda-check (device facts, matvec and GEMM bits vs the CPU, copy
# bandwidth, the kernels' GB/s and int8 TOPS over the measured peaks) and `ds4ctl bench` on a forged
# model with --backend cuda and cpu. About ten minutes on 16 cores.
#
#   scripts/gpu-check.sh            # build in build-gpu/, write the log and summary to $OUT or ./gpu-check-out
# Exit status: 0 when every comparison was bit-identical, else non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${OUT:-$PWD/gpu-check-out}
mkdir -p "$OUT_DIR"
LOG=$OUT_DIR/gpu-check.log
BUILD_DIR=${BUILD_DIR:-build-gpu}
NVCC=${DS4D_NVCC:-/usr/local/cuda/bin/nvcc}
exec > >(tee "$LOG") 2>&1
status=0
step() { echo "== $* ($(date -u +%T))"; }

step "machine"
nproc; uname -r
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$NVCC" --version | tail -1

step "configure (CUDA parts only)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DDS4D_CUDA_CHECK_ONLY=ON -DDS4D_CUDA=ON \
  -DDS4D_NVCC="$NVCC" || { echo "configure failed"; exit 10; }

step "build"
targets=(ds4-cuda-check)
# The GoogleTest suites exist only where GoogleTest is installed (find_package(GTest QUIET)).
cmake --build "$BUILD_DIR" --target help 2>/dev/null | grep -q cuda_gpu_tests && targets+=(cuda_tests cuda_gpu_tests)
cmake --build "$BUILD_DIR" -j "$(nproc)" --target "${targets[@]}" || { echo "build failed"; exit 11; }

if [[ " ${targets[*]} " == *" cuda_gpu_tests "* ]]; then
  step "GPU tests (GoogleTest)"
  "$BUILD_DIR/tests/engine/cuda/cuda_tests" --gtest_brief=1 || status=1
  "$BUILD_DIR/tests/engine/cuda/cuda_gpu_tests" || status=1
else
  step "GPU tests: GoogleTest not installed here; ds4-cuda-check below makes the same comparisons"
fi

# The device forward and contexts on the real ds4-tiny model (model_device_gpu_tests) and the
# served replies of the embedded model (device_serving_gpu_tests) need the full
# configuration (the GGUF reader, xxHash, ...): run where the project's packages and the vectors
# are present, else say why not (the emulator runs the same tests in CI).
VECTORS=${DS4D_DS4_VECTORS:-}
for v in ../shared/vectors/ds4-tiny shared/vectors/ds4-tiny; do
  [ -z "$VECTORS" ] && [ -f "$v/model.gguf" ] && VECTORS=$PWD/$v
done
if [ -n "$VECTORS" ] && cmake -S . -B "$BUILD_DIR-full" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DDS4D_CUDA=ON \
     -DDS4D_NVCC="$NVCC" >"$OUT_DIR/configure-full.log" 2>&1; then
  step "device forward on ds4-tiny (model_device_gpu_tests)"
  if cmake --build "$BUILD_DIR-full" -j "$(nproc)" --target model_device_gpu_tests device_serving_gpu_tests \
       >"$OUT_DIR/build-full.log" 2>&1; then
    DS4D_DS4_VECTORS=$VECTORS timeout 300 "$BUILD_DIR-full/tests/engine/model/model_device_gpu_tests" || status=1
    step "served replies on the device (device_serving_gpu_tests)"
    timeout 120 "$BUILD_DIR-full/tests/gateway/e2e/device_serving_gpu_tests" || status=1
  else
    echo "build failed (tail of $OUT_DIR/build-full.log):"; tail -20 "$OUT_DIR/build-full.log"; status=1
  fi
else
  step "device forward on ds4-tiny: skipped (no vectors at \$DS4D_DS4_VECTORS or ../shared, or the full configuration failed: $OUT_DIR/configure-full.log)"
fi

step "ds4-cuda-check"
timeout 300 "$BUILD_DIR/tools/cuda_check/ds4-cuda-check" | tee "$OUT_DIR/summary.txt"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] || status=$rc

# The whole engine on both backends (docs/cuda.md §gpu-check): a forged bench model (1.1 GiB,
# 470 MiB read per token: several times any L2), `ds4ctl bench` with --backend cuda (which runs
# the self-check first) and --backend cpu on every core; decode GB/s over the copy bandwidth above.
if [ -d "$BUILD_DIR-full" ] && cmake --build "$BUILD_DIR-full" -j "$(nproc)" --target ds4ctl >>"$OUT_DIR/build-full.log" 2>&1; then
  CTL=$BUILD_DIR-full/ds4ctl/ds4ctl
  step "forge the bench model"
  timeout 240 "$CTL" forge --preset bench -o "$OUT_DIR/bench.gguf" >/dev/null || status=1
  for b in cuda cpu; do
    step "ds4ctl bench --backend $b"
    timeout 240 "$CTL" bench -m "$OUT_DIR/bench.gguf" --backend "$b" --contexts 512,2048 --decode-tokens 32 \
      | tee "$OUT_DIR/bench-$b.txt" || status=1
  done
  copy=$(sed -n 's/^summary: .*copy \([0-9.]*\) GB\/s/\1/p' "$OUT_DIR/summary.txt")
  awk -v copy="$copy" '$1 == 2048 && copy > 0 { printf "decode at 2048 on the GPU: %s GB/s = %.3f of copy bandwidth (goal 0.85); kernel launches per token prefill/decode %s; CUDA graphs speed decode up %s\n", $5, $5 / copy, $7, $8 }' \
    "$OUT_DIR/bench-cuda.txt" | tee -a "$OUT_DIR/summary.txt"
  rm -f "$OUT_DIR/bench.gguf"
else
  step "ds4ctl bench: skipped (no full configuration, or ds4ctl did not build: $OUT_DIR/build-full.log)"
fi

step "done: status $status"
exit "$status"
