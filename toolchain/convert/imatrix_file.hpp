#pragma once
// GGML's legacy importance-matrix file (imatrix.dat, as llama.cpp's imatrix tool and ds4's
// collector write it and ds4's quantizer reads it), little-endian:
//   i32 n_entries
//   n_entries x { i32 name_len; char name[name_len]; i32 ncall; i32 nval; f32 values[nval] }
//   i32 chunks; i32 dataset_len; char dataset[dataset_len]      (trailer)
// values[i] / ncall is the mean squared activation of input column i. A routed-expert tensor
// has one entry whose nval = n_expert x ne0: the experts' vectors one after another.
#include <cstdint>
#include <string>
#include <vector>

namespace ds4::convert {

struct ImatrixEntry {
  std::string name;  // GGUF tensor name
  int32_t ncall = 0;
  std::vector<float> values;
};

struct Imatrix {
  std::vector<ImatrixEntry> entries;
  int32_t chunks = 0;
  std::string dataset;
};

// Throws ConvertError naming the file (and entry) on a malformed file or non-finite value.
Imatrix read_imatrix(const std::string& path);
void write_imatrix(const std::string& path, const Imatrix& m);
// XXH3-64 of the file's bytes, 16 hex digits (bound into the converted model's artifact id).
std::string file_hash(const std::string& path);

}  // namespace ds4::convert
