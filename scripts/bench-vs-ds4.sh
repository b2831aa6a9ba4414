#!/usr/bin/env bash
# Our engine against the reference engine (antirez/ds4) on the CPU, ds4-tiny, measured side by
# side in one run: `ds4ctl bench` and ds4's own ds4-bench, same prompt length, decode steps and
# threads, the two sides alternating ROUNDS times (best of the rounds per side). The reference
# tree given by path is copied to a scratch dir, its fixed dimensions adapted to ds4-tiny as in
# the vectors' README, and built with its Makefile's default CPU flags (`make cpu`); the adaptation
# is first checked against the vectors' logits. Nothing of ds4 is committed.
#   scripts/bench-vs-ds4.sh DS4_SOURCE_TREE     docs/benchmarks.md §vs-ds4
# Environment: BUILD_DIR (ours, already built; default build), VECTORS (default
# /work/shared/vectors/ds4-tiny), THREADS (default "1 2"), PROMPT (512), GEN (64), ROUNDS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
VECTORS=${VECTORS:-/work/shared/vectors/ds4-tiny}
THREADS=${THREADS:-1 2}
PROMPT=${PROMPT:-512}
GEN=${GEN:-64}
ROUNDS=${ROUNDS:-5}
DS4_SRC=${1:-}
die() { echo "bench-vs-ds4: $*" >&2; exit 2; }

[ -n "$DS4_SRC" ] || die "usage: scripts/bench-vs-ds4.sh DS4_SOURCE_TREE (an antirez/ds4 checkout)"
for f in ds4.c ds4.h ds4_bench.c Makefile; do
  [ -f "$DS4_SRC/$f" ] || die "$DS4_SRC is not an antirez/ds4 source tree: no $f"
done
ours="$BUILD_DIR/ds4ctl/ds4ctl"
[ -x "$ours" ] || die "no $ours: build ours first (scripts/build.sh) or set BUILD_DIR"
model="$VECTORS/model.gguf"
for f in model.gguf cases.bin; do
  [ -f "$VECTORS/$f" ] || die "no $VECTORS/$f: set VECTORS to the ds4-tiny vectors directory"
done
command -v python3 >/dev/null || die "python3 is needed to patch the reference and read the results"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ref="$out/ds4"
mkdir "$ref"
# Top-level files only: the CPU build needs nothing below them.
find "$DS4_SRC" -maxdepth 1 -type f -exec cp {} "$ref/" \;

# The adaptation of docs/benchmarks.md §vs-ds4: the dimension enum takes ds4-tiny's sizes, and the
# literal q-LoRA width, output group count and output rank become the enum names. Every pattern
# must match exactly as often as at commit 8d57664, else the script stops.
python3 - "$ref/ds4.c" <<'PY'
import re, sys
path = sys.argv[1]
src = open(path).read()
tiny = dict(LAYER=6, EMBD=256, VOCAB=1024, HEAD=4, HEAD_KV=1, HEAD_DIM=512, VALUE_DIM=512, ROT=64,
            OUT_GROUP=2, LORA_Q=128, LORA_O=128, EXPERT=16, EXPERT_USED=6, EXPERT_SHARED=1,
            FF_EXP=256, HASH_LAYER=3, SWA=128, INDEXER_HEAD=4, INDEXER_HEAD_DIM=128,
            INDEXER_TOP_K=8, HC=4, HC_SINKHORN_ITER=20)
def sub(pattern, repl, count, flags=0):
    global src
    src, n = re.subn(pattern, repl, src, flags=flags)
    if n != count:
        sys.exit(f"bench-vs-ds4: patching ds4.c: {pattern!r} matched {n} times, expected {count}; "
                 "this ds4 revision differs from the one the adaptation was written for (8d57664)")
for name, value in tiny.items():
    sub(rf"^(\s*DS4_N_{name}\s*=\s*)\d+,", rf"\g<1>{value},", 1, re.M)
sub(r"xmalloc\(1024 \* sizeof\(", "xmalloc(DS4_N_LORA_Q * sizeof(", 6)
sub(r"q_a_norm, 1024, DS4_RMS_EPS", "q_a_norm, DS4_N_LORA_Q, DS4_RMS_EPS", 3)
sub(r"\(size_t\)n_tok \* 1024 \* sizeof\(", "(size_t)n_tok * DS4_N_LORA_Q * sizeof(", 2)
sub(r"\(uint64_t\)t \* 1024\b", "(uint64_t)t * DS4_N_LORA_Q", 3)
sub(r"q_a_norm,\n(\s*)1024,\n", r"q_a_norm,\n\g<1>DS4_N_LORA_Q,\n", 1)
sub(r"\(size_t\)8u \* 1024u \* sizeof", "(size_t)DS4_N_OUT_GROUP * DS4_N_LORA_O * sizeof", 1)
sub(r"const uint32_t n_groups = 8;", "const uint32_t n_groups = DS4_N_OUT_GROUP;", 3)
sub(r"const uint32_t rank = 1024;", "const uint32_t rank = DS4_N_LORA_O;", 3)
open(path, "w").write(src)
PY

echo "building the reference (make cpu, its default flags) in a scratch dir" >&2
make -C "$ref" -j "${JOBS:-$(nproc)}" cpu >"$out/make.log" 2>&1 || { tail -30 "$out/make.log" >&2; die "make cpu failed"; }
# shellcheck disable=SC2016  # $(CFLAGS) is make's, not the shell's
cflags=$(make -C "$ref" -s -f Makefile -f - print-cflags <<<'print-cflags: ; @echo $(CFLAGS)' 2>/dev/null || echo '?')

# Sanity check of the adaptation against the vectors' prefill logits. The same source compiled
# strictly (no fast-math, no FMA contraction, no -march=native: how the vectors were made) must
# give them bit for bit on x86-64; the speed build (fast-math) must meet the vectors README's
# statistical thresholds.
cat >"$out/check.c" <<'C'
#include "ds4.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned rd32(FILE *f) { unsigned v; if (fread(&v, 4, 1, f) != 1) exit(3); return v; }
int main(int argc, char **argv) {
    const int exact = argc > 3 && !strcmp(argv[3], "exact");
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 3;
    unsigned magic = rd32(f), version = rd32(f), n_vocab = rd32(f), n_cases = rd32(f);
    if (magic != 0x54345344u || version != 1) return 3;
    ds4_engine_options opt = {.model_path = argv[1], .backend = DS4_BACKEND_CPU, .n_threads = 1};
    ds4_engine *e = NULL;
    if (ds4_engine_open(&e, &opt) != 0) return 4;
    int bad = 0;
    for (unsigned c = 0; c < n_cases; c++) {
        char name[17] = {0};
        if (fread(name, 16, 1, f) != 1) return 3;
        unsigned n = rd32(f);
        ds4_tokens p = {0};
        for (unsigned i = 0; i < n; i++) ds4_tokens_push(&p, (int)rd32(f));
        float *want = malloc(n_vocab * sizeof(float)), *got = malloc(n_vocab * sizeof(float));
        if (fread(want, sizeof(float), n_vocab, f) != n_vocab) return 3;
        unsigned n_gen = rd32(f);  /* skip gen ids and gen logits, then the prefixes */
        fseek(f, (long)n_gen * 4 + (long)n_gen * n_vocab * 4, SEEK_CUR);
        unsigned n_prefix = rd32(f);
        fseek(f, (long)n_prefix * (4 + (long)n_vocab * 4), SEEK_CUR);
        ds4_session *s = NULL;
        char err[256];
        if (ds4_session_create(&s, e, (int)n + 8) != 0 || ds4_session_sync(s, &p, err, sizeof err) != 0) return 5;
        double sw = 0, sg = 0, sww = 0, sgg = 0, swg = 0, d2 = 0, maxd = 0, maxw = 0;
        int aw = 0, ag = 0;
        for (unsigned i = 0; i < n_vocab; i++) {
            ds4_token_score t;
            if (!ds4_session_token_logprob(s, (int)i, &t)) return 5;
            double w = want[i], g = got[i] = t.logit;
            sw += w; sg += g; sww += w * w; sgg += g * g; swg += w * g; d2 += (g - w) * (g - w);
            if (fabs(g - w) > maxd) maxd = fabs(g - w);
            if (fabs(w) > maxw) maxw = fabs(w);
            if (w > want[aw]) aw = (int)i;
            if (g > got[ag]) ag = (int)i;
        }
        double m2 = -INFINITY;
        for (unsigned i = 0; i < n_vocab; i++) if ((int)i != aw && want[i] > m2) m2 = want[i];
        const double N = n_vocab, cov = swg / N - sw * sg / N / N;
        const double vw = sww / N - sw * sw / N / N, vg = sgg / N - sg * sg / N / N;
        const double r = cov / sqrt(vw * vg), rms = sqrt(d2 / N) / sqrt(vw);
        const int ok = exact ? maxd == 0.0
                             : r >= 0.98 && rms <= 0.2 && maxd <= 0.25 * maxw && (aw == ag || want[aw] - m2 <= 1.0);
        printf("  %-8s %3u tokens: Pearson %.4f, rms/std %.3f, max|d| %.3g, argmax %d/%d %s\n", name, n, r,
               rms, maxd, ag, aw, ok ? "ok" : "FAIL");
        bad += !ok;
        ds4_session_free(s);
        ds4_tokens_free(&p);
        free(want);
        free(got);
    }
    ds4_engine_close(e);
    return bad ? 1 : 0;
}
C
cc -O2 -std=c99 -D_GNU_SOURCE -DDS4_NO_GPU -ffp-contract=off -c "$ref/ds4.c" -o "$out/ds4_strict.o"
strict_mode=stat
[ "$(uname -m)" = x86_64 ] && strict_mode=exact
for build in strict fast; do
  obj="$out/ds4_strict.o" mode=$strict_mode
  [ "$build" = fast ] && obj="$ref/ds4_cpu.o" mode=stat
  cc -O2 -std=c99 -D_GNU_SOURCE -I"$ref" "$out/check.c" "$obj" -lm -pthread -o "$out/check_$build"
  echo "adapted reference, $build build, prefill logits against the vectors ($mode):" >&2
  "$out/check_$build" "$model" "$VECTORS/cases.bin" "$mode" >&2 2>"$out/check.err" || {
    tail -5 "$out/check.err" >&2; die "the adapted reference ($build build) does not reproduce the vectors"; }
done

# Raw text for ds4-bench, which slices its tokenization at --ctx-max: our docs, repeated until
# long enough (the tiny BPE gives ~2-3 bytes per token; ds4-bench refuses a short prompt).
for _ in 1 2 3 4; do cat README.md docs/*.md; done >"$out/prompt.txt"

load_before=$(uptime | sed 's/.*load average/load average/')
# Alternate the sides so drift in the machine's state (other load, frequency) falls on both.
for round in $(seq "$ROUNDS"); do
  for t in $THREADS; do
    "$ours" bench -m "$model" -t "$t" --contexts "$PROMPT" --decode-tokens "$GEN" 2>/dev/null |
      awk -v p="$PROMPT" '$1 == p { print $2, $3 }' >"$out/ours.$t.$round"
    "$ref/ds4-bench" -m "$model" --cpu -t "$t" --prompt-file "$out/prompt.txt" --ctx-start "$PROMPT" \
      --ctx-max "$PROMPT" --gen-tokens "$GEN" 2>"$out/ref.err" |
      awk -F, -v p="$PROMPT" '$1 == p { print $3, $5 }' >"$out/ref.$t.$round"
    [ -s "$out/ours.$t.$round" ] || die "ds4ctl bench printed no row for context $PROMPT"
    [ -s "$out/ref.$t.$round" ] || { tail -5 "$out/ref.err" >&2; die "ds4-bench printed no row"; }
  done
done

load_after=$(uptime | sed 's/.*load average/load average/')
python3 - "$out" "$THREADS" "$PROMPT" "$GEN" "$ROUNDS" "$cflags" "$load_before" "$load_after" <<'PY'
import glob, os, statistics, sys
d, threads, prompt, gen, rounds, cflags, load_before, load_after = sys.argv[1:]
print(f"ds4-tiny, prefill {prompt} tokens then {gen} greedy decode steps; tok/s, best of {rounds} "
      f"alternating rounds per side; {os.cpu_count()} CPUs")
print(f"before: {load_before}; after: {load_after}")
print(f"reference: make cpu, CFLAGS {cflags}")
print("| threads | ours prefill | ds4 prefill | prefill ours/ds4 | ours decode | ds4 decode | decode ours/ds4 |")
print("|---|---|---|---|---|---|---|")
rows = {}
for t in threads.split():
    for side in ("ours", "ref"):
        rows[t, side] = [tuple(map(float, open(f).read().split()))
                         for f in glob.glob(os.path.join(d, f"{side}.{t}.*"))]
def line(pick):
    for t in threads.split():
        (op, od), (rp, rd) = pick(rows[t, "ours"]), pick(rows[t, "ref"])
        print(f"| {t} | {op:.1f} | {rp:.1f} | {op / rp:.2f} | {od:.1f} | {rd:.1f} | {od / rd:.2f} |")
line(lambda r: (max(x[0] for x in r), max(x[1] for x in r)))
print("medians of the rounds:")
line(lambda r: (statistics.median(x[0] for x in r), statistics.median(x[1] for x in r)))
PY
