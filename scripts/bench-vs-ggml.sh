#!/usr/bin/env bash
# Our dot kernels against GGML's, format by format, one thread, in cache (512 KiB) and streamed
# (256 MiB), measured side by side in one run: our benchmarks/kernels_bench (Fast and Exact
# orders) and benchmarks/ggml/vec_dot_harness.c built against a GGML source tree given by path.
# Nothing of GGML is committed; without the path only our side runs. docs/benchmarks.md §vs-ggml.
#   scripts/bench-vs-ggml.sh [GGML_SOURCE_TREE]
# GGML is built with the ISA our kernels use (x86-64: AVX2+FMA+F16C, no AVX-512; arm64: the
# host's features), so the comparison is kernel against kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
GGML_SRC=${1:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cmake --build "$BUILD_DIR" --target kernels_bench >/dev/null
if [ -n "$GGML_SRC" ]; then
  [ -f "$GGML_SRC/include/ggml-cpu.h" ] || { echo "bench-vs-ggml: $GGML_SRC is not a GGML source tree" >&2; exit 2; }
  ggml_build="$BUILD_DIR/ggml-bench"
  isa_flags=(-DGGML_NATIVE=ON)
  if [ "$(uname -m)" = x86_64 ]; then
    isa_flags=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  fi
  cmake -S "$GGML_SRC" -B "$ggml_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF -DGGML_OPENMP=OFF "${isa_flags[@]}" >/dev/null
  cmake --build "$ggml_build" --target ggml-cpu ggml-base -j "${JOBS:-$(nproc)}" >/dev/null
  libs=$(find "$ggml_build" -name 'libggml-cpu.a' -o -name 'libggml-base.a' | sort -r)
  cc -O2 -I"$GGML_SRC/include" benchmarks/ggml/vec_dot_harness.c $libs -lstdc++ -lm -lpthread -o "$out/ggml_harness"
fi

# Alternate the two sides twice and keep each one's best, so drift in the machine's state
# (other load, frequency) falls on both.
for round in 1 2; do
  "$BUILD_DIR/benchmarks/kernels_bench" --threads 1 --benchmark_filter='^(read_bandwidth|matmul/)' \
    --benchmark_min_time=0.3s --benchmark_format=json >"$out/ours$round.json" 2>/dev/null
  if [ -x "$out/ggml_harness" ]; then "$out/ggml_harness" >"$out/ggml$round.txt"; fi
done

python3 - "$out" <<'PY'
import glob, json, os, sys
d = sys.argv[1]
ours, ggml, read_bw = {}, {}, 0.0
for f in sorted(glob.glob(os.path.join(d, "ours*.json"))):
    text = open(f).read()  # kernels_bench prints its setup line before the JSON
    for b in json.loads(text[text.index("{"):])["benchmarks"]:
        if b["name"].startswith("read_bandwidth"):
            read_bw = max(read_bw, b["GB/s"])
            continue
        _, fmt, where, isa = b["name"].split("/")[:4]
        ours[(fmt, where, isa)] = max(ours.get((fmt, where, isa), 0.0), b["GB/s"])
for f in sorted(glob.glob(os.path.join(d, "ggml*.txt"))):
    for line in open(f):
        _, fmt, where, gbs = line.split()
        ggml[(fmt, where)] = max(ggml.get((fmt, where), 0.0), float(gbs))
isas = sorted({k[2] for k in ours})
fast = [i for i in isas if not i.endswith("exact") and i != "scalar"]
fast = fast[0] if fast else "scalar"
exact = fast + "-exact" if fast != "scalar" else "scalar"
head_line = open(sorted(glob.glob(os.path.join(d, "ours*.json")))[0]).readline().strip()
print(f"{head_line}")
print(f"one thread; GB/s of weight bytes; best of two alternating rounds per side")
head = "| format | Fast cache | Fast stream | Exact stream | GGML cache | GGML stream | Fast/GGML cache | Fast/GGML stream | Fast stream / read bw |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
for fmt in ["iq2_xxs", "q2_K", "q4_K", "q8_0", "mxfp4", "f16", "bf16", "f32"]:
    fc, fs = ours.get((fmt, "cache", fast), 0), ours.get((fmt, "stream", fast), 0)
    es = ours.get((fmt, "stream", exact), 0)
    gc, gs = ggml.get((fmt, "cache")), ggml.get((fmt, "stream"))
    r = lambda a, b: f"{a / b:.2f}" if b else "-"
    g = lambda v: f"{v:.2f}" if v else "-"
    print(f"| {fmt} | {fc:.2f} | {fs:.2f} | {es:.2f} | {g(gc)} | {g(gs)} | {r(fc, gc)} | {r(fs, gs)} | {fs / read_bw:.2f} |")
PY
