/* GGML's side of scripts/bench-vs-ggml.sh: the same decode-shaped problem as our kernels_bench
 * (one activation row against a weight matrix of 4096-column rows; 512 KiB in cache, 256 MiB
 * streamed from memory), run through GGML's own CPU vec_dot on one thread, so the two can be
 * compared format by format in one run. Built by the script against a GGML source tree given by
 * path; nothing of GGML is committed here. The weight rows are 16 properly quantized random rows
 * (GGML's quantizer, an all-ones importance where the format requires one) repeated to size, as
 * ours are. Prints one line per measurement:  ggml <type> <cache|stream> <GB/s of weights>. */
#include <ggml-cpu.h>
#include <ggml.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kCols = 4096, kSeedRows = 16 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Deterministic heavy-ish tailed floats (sum of uniforms, scaled), no libc rand state. */
static float next_value(unsigned long long* s) {
  float acc = 0.0f;
  for (int i = 0; i < 4; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    acc += (float)((*s >> 40) & 0xffffff) / 16777216.0f - 0.5f;
  }
  return acc;
}

static double measure(enum ggml_type type, size_t target_bytes) {
  const struct ggml_type_traits_cpu* cpu = ggml_get_type_traits_cpu(type);
  const size_t row_bytes = ggml_row_size(type, kCols);
  const size_t rows = target_bytes / row_bytes > 0 ? target_bytes / row_bytes : 1;
  unsigned long long seed = 1234 + (unsigned long long)type;

  float* src = malloc(sizeof(float) * kCols * kSeedRows);
  float* imatrix = malloc(sizeof(float) * kCols);
  for (size_t i = 0; i < (size_t)kCols * kSeedRows; i++) src[i] = next_value(&seed);
  for (int i = 0; i < kCols; i++) imatrix[i] = 1.0f;
  unsigned char* seed_rows = malloc(row_bytes * kSeedRows);
  ggml_quantize_chunk(type, src, seed_rows, 0, kSeedRows, kCols, ggml_quantize_requires_imatrix(type) ? imatrix : NULL);
  unsigned char* w = malloc(row_bytes * rows);
  for (size_t r = 0; r < rows; r++) memcpy(w + r * row_bytes, seed_rows + (r % kSeedRows) * row_bytes, row_bytes);

  const enum ggml_type vt = cpu->vec_dot_type;
  const struct ggml_type_traits_cpu* vcpu = ggml_get_type_traits_cpu(vt);
  unsigned char* act = malloc(ggml_row_size(vt, kCols));
  float* x = malloc(sizeof(float) * kCols);
  for (int i = 0; i < kCols; i++) x[i] = next_value(&seed);
  if (vt == GGML_TYPE_F32)
    memcpy(act, x, sizeof(float) * kCols);
  else
    vcpu->from_float(x, act, kCols);

  float* out = malloc(sizeof(float) * rows);
  double best = 0.0;
  for (int rep = 0; rep < 3; rep++) { /* best of three ~0.3 s runs */
    size_t passes = 0;
    const double t0 = now_s();
    double t = t0;
    do {
      for (size_t r = 0; r < rows; r++) cpu->vec_dot(kCols, &out[r], 0, w + r * row_bytes, 0, act, 0, 1);
      passes++;
      t = now_s();
    } while (t - t0 < 0.3);
    const double gbs = (double)(row_bytes * rows) * (double)passes / (t - t0) / 1e9;
    if (gbs > best) best = gbs;
  }
  volatile float sink = out[rows - 1];
  (void)sink;
  free(src), free(imatrix), free(seed_rows), free(w), free(act), free(x), free(out);
  return best;
}

int main(int argc, char** argv) {
  static const struct {
    const char* name;
    enum ggml_type type;
  } kTypes[] = {{"iq2_xxs", GGML_TYPE_IQ2_XXS}, {"q2_K", GGML_TYPE_Q2_K}, {"q4_K", GGML_TYPE_Q4_K},
                {"q8_0", GGML_TYPE_Q8_0},       {"mxfp4", GGML_TYPE_MXFP4}, {"f16", GGML_TYPE_F16},
                {"bf16", GGML_TYPE_BF16},       {"f32", GGML_TYPE_F32}};
  ggml_cpu_init();
  for (size_t i = 0; i < sizeof kTypes / sizeof kTypes[0]; i++) {
    if (argc > 1 && strstr(argv[1], kTypes[i].name) == NULL) continue; /* optional filter */
    printf("ggml %s cache %.3f\n", kTypes[i].name, measure(kTypes[i].type, (size_t)512 << 10));
    printf("ggml %s stream %.3f\n", kTypes[i].name, measure(kTypes[i].type, (size_t)256 << 20));
    fflush(stdout);
  }
  return 0;
}
