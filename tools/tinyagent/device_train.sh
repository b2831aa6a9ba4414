#!/usr/bin/env bash
# The tiny agent model's two training stages from scratch on a GPU, in one call of the device
# tool (a lent GPU machine: 15 minutes of device time a session, its start included, one command
# of at most 10 minutes). Why: on this project's 2-core CPU machines the shipped model saw 7.8M
# training tokens in 100 minutes, and every attempt to teach it to pick a tool it has never seen
# by its description failed at that scale (README.md). A GPU gives the same recipe many times the
# tokens inside one call. What comes back is the float32 GGUF, quantized and evaluated here.
#
# From the repository root, through the device tool:
#   bash tools/tinyagent/device_train.sh            (writes under $OUT, which the tool returns)
# Then here:
#   cat $FILES/f32.gguf.part* > /tmp/f32.gguf && tar -xf $FILES/runs.tar -C /tmp
#   build/ds4ctl/ds4ctl quantize -i /tmp/f32.gguf -o /tmp/q2.gguf --recipe q2 --dequantized /tmp/deq.gguf
#   build/ds4ctl/ds4ctl eval-agent -m /tmp/q2.gguf --cases eval.jsonl   (make_eval.py, README.md)
#
# Settings (environment; the defaults are meant to fit one 10-minute command: data ~1-2 min,
# the stages 6.5 min, export seconds; the first run on a GPU measures them):
#   MINUTES_A / MINUTES_B   wall time of stage A (copy drills) / stage B (CORPUS_B)   1.5 / 5
#   CONV_A / CONV_B         conversations generated for each stage                    60000 / 60000
#   BATCH_A / BATCH_B       tokens per batch                                           8192 / 16384
#   LR_A / LR_B             peak learning rates (cosine to a tenth)                    3e-3 / 2.5e-3
#   CORPUS_B                stage B's corpus (train.py --corpus)                       v5
#   DEVICE                  torch device; `cpu` runs the same pipeline here (a check)  cuda
#   WORKERS                 tokenizing processes                                       nproc
#   PYTHON                  the interpreter that has torch                             python3
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:?OUT must name the folder the results go to}
WORKERS=${WORKERS:-$(nproc)}
W=$(mktemp -d /tmp/tinyagent-device.XXXXXX)
T=tools/tinyagent/train.py

if [ "$DEVICE" = cuda ]; then
  "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "device_train: torch sees no GPU")'
  "$PY" -c 'import torch; print("device_train: torch", torch.__version__, torch.cuda.get_device_name(0))'
fi
common=(--tie-output 0.05 --device "$DEVICE" --workers "$WORKERS" --ckpt-every 1000000000)

# The tokenizer the shipped model uses (deterministic: digest 5db8e93e... in the manifest).
"$PY" $T --out "$W/T" --conversations 6000 --steps 0 --workers "$WORKERS" > "$W/T.log"
"$PY" $T --out "$W/A" --corpus drills --seed 11 --tokenizer "$W/T/tokenizer.json" \
  --conversations "${CONV_A:-60000}" --max-len 400 --batch-tokens "${BATCH_A:-8192}" --lr "${LR_A:-3e-3}" \
  --minutes "${MINUTES_A:-1.5}" "${common[@]}" > "$W/A.log"
tail -n 2 "$W/A.log"
"$PY" $T --out "$W/B" --corpus "${CORPUS_B:-v5}" --seed 13 --tokenizer "$W/T/tokenizer.json" --init "$W/A/checkpoint.pt" \
  --conversations "${CONV_B:-60000}" --max-len 760 --batch-tokens "${BATCH_B:-16384}" --lr "${LR_B:-2.5e-3}" \
  --copy-weight 3 --minutes "${MINUTES_B:-5}" "${common[@]}" > "$W/B.log"
tail -n 2 "$W/B.log"
"$PY" tools/tinyagent/export.py --run "$W/B" --out "$W/f32.gguf"

# Back under the device tool's limits (16 MiB a file, 8 files): the GGUF in 15 MiB parts, the
# logs, learning-rate schedules and corpus records of both stages in one tar.
mkdir -p "$OUT"
split -b 15M -d "$W/f32.gguf" "$OUT/f32.gguf.part"
tar -cf "$OUT/runs.tar" -C "$W" T.log A.log B.log T/tokenizer.json A/lr_schedule.json A/corpus.json \
  B/lr_schedule.json B/corpus.json
ls -l "$OUT"
