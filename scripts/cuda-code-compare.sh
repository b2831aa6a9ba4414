#!/usr/bin/env bash
# Does a change to the CUDA kernels change the machine code? Compiles
# engine/cuda/kernels/device_kernels.cu of REV (default HEAD) and of the working tree to cubins for
# sm_90 and sm_121a with the build's nvcc flags, then compares every kernel's code section
# (.text.<kernel>) and ptxas's registers, spills and shared memory per kernel. Identical code runs at the
# same speed, so a refactor that keeps it needs no GPU to check (docs/cuda.md §gemm-tile).
# Needs nvcc (/usr/local/cuda) and readelf; no GPU. Exit 0: the same code; 1: it differs.
#   scripts/cuda-code-compare.sh [REV]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
NVCC=${DS4D_NVCC:-/usr/local/cuda/bin/nvcc}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/base" "$rev"
compile() {  # tree out-prefix arch
  (cd "$1" && "$NVCC" -ccbin="${CXX:-c++}" -std=c++20 -O3 --fmad=false -cubin -arch="$3" -Xptxas -v -I. \
    -o "$2.cubin" engine/cuda/kernels/device_kernels.cu 2>"$2.ptxas")
  # The resource lines, without the per-build hash of internal names and the compile times.
  sed -e 's/_INTERNAL_[0-9a-f]*_/_INTERNAL_/g' -e '/Compile time/d' "$2.ptxas" >"$2.resources"
}
status=0
for arch in sm_90 sm_121a; do
  compile "$work/base" "$work/base-$arch" "$arch"
  compile "$PWD" "$work/tree-$arch" "$arch"
  python3 - "$work/base-$arch.cubin" "$work/tree-$arch.cubin" "$arch" <<'EOF' || status=1
import re, subprocess, sys
def text_sections(path):
    listing = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True, check=True).stdout
    data = open(path, "rb").read()
    out = {}
    for line in listing.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\.text\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            off, size = int(m.group(2), 16), int(m.group(3), 16)
            out[m.group(1)[len(".text."):]] = data[off:off + size]
    return out
base, tree, arch = text_sections(sys.argv[1]), text_sections(sys.argv[2]), sys.argv[3]
changed = sorted(k for k in base.keys() & tree.keys() if base[k] != tree[k])
gone, new = sorted(base.keys() - tree.keys()), sorted(tree.keys() - base.keys())
print(f"{arch}: {len(tree)} kernels, {len(tree) - len(changed) - len(new)} with the same code, "
      f"{len(changed)} changed, {len(new)} new, {len(gone)} gone")
for k in changed: print(f"  changed: {k} ({len(base[k])} -> {len(tree[k])} bytes)")
for k in new: print(f"  new: {k}")
for k in gone: print(f"  gone: {k}")
sys.exit(1 if changed or new or gone else 0)
EOF
  if ! diff -q "$work/base-$arch.resources" "$work/tree-$arch.resources" >/dev/null; then
    echo "$arch: ptxas resources differ:"
    diff "$work/base-$arch.resources" "$work/tree-$arch.resources" | head -40 || true
    status=1
  else
    echo "$arch: ptxas registers, spills and shared memory the same for every kernel"
  fi
done
exit "$status"
