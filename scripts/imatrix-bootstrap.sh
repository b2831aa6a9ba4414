#!/usr/bin/env bash
# The field's bootstrap order for an importance-tuned GGUF, with our own tools only:
#   1. convert the official checkpoint without an imatrix (the quantizers' plain error);
#   2. run calibration text through that model with our engine and collect the imatrix;
#   3. convert again with --imatrix: the IQ2_XXS/Q2_K/Q4_K tensors are re-quantized with the
#      per-column importance it holds (its hash is bound into the artifact id and recorded).
# Usage: scripts/imatrix-bootstrap.sh SRC_DIR OUT_DIR CALIBRATION.txt
# Env: DS4CTL (default: build/ds4ctl/ds4ctl), RECIPE (default q2), THREADS (default: nproc),
#      CHUNK (tokens per imatrix chunk, default 512).
set -euo pipefail
if [ $# -ne 3 ]; then echo "usage: $0 SRC_DIR OUT_DIR CALIBRATION.txt" >&2; exit 2; fi
SRC=$1 OUT=$2 TEXT=$3
DS4CTL=${DS4CTL:-$(dirname "$0")/../build/ds4ctl/ds4ctl}
RECIPE=${RECIPE:-q2} THREADS=${THREADS:-$(nproc)} CHUNK=${CHUNK:-512}
mkdir -p "$OUT"
echo "== 1/3 convert without imatrix" >&2
"$DS4CTL" convert "$SRC" -o "$OUT/bootstrap.gguf" --recipe "$RECIPE" --threads "$THREADS"
echo "== 2/3 collect the imatrix with the engine" >&2
"$DS4CTL" imatrix -m "$OUT/bootstrap.gguf" --text "$TEXT" -o "$OUT/imatrix.dat" --chunk "$CHUNK" --threads "$THREADS"
echo "== 3/3 convert with the imatrix" >&2
"$DS4CTL" convert "$SRC" -o "$OUT/model.gguf" --recipe "$RECIPE" --threads "$THREADS" --imatrix "$OUT/imatrix.dat"
echo "$OUT/model.gguf (audit: $OUT/model.audit.txt)" >&2
