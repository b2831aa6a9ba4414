// GGML legacy imatrix files; see imatrix_file.hpp.
#include "toolchain/convert/imatrix_file.hpp"

#include <xxhash.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert {

Imatrix read_imatrix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConvertError(path, "", "cannot open the imatrix file");
  auto i32 = [&](const char* what) {
    int32_t v;
    if (!in.read(reinterpret_cast<char*>(&v), 4))
      throw ConvertError(path, "", std::string("truncated imatrix: reading ") + what);
    return v;
  };
  Imatrix m;
  const int32_t n = i32("the entry count");
  if (n < 1 || n > (1 << 20)) throw ConvertError(path, "", "implausible entry count " + std::to_string(n));
  for (int32_t i = 0; i < n; ++i) {
    ImatrixEntry e;
    const int32_t len = i32("a name length");
    if (len <= 0 || len > 4096)
      throw ConvertError(path, "", "bad name length " + std::to_string(len) + " at entry " + std::to_string(i));
    e.name.resize(size_t(len));
    if (!in.read(e.name.data(), len))
      throw ConvertError(path, "", "truncated imatrix name at entry " + std::to_string(i));
    e.ncall = i32("a call count");
    const int32_t nval = i32("a value count");
    if (nval < 1 || nval > (1 << 28)) throw ConvertError(path, e.name, "bad value count " + std::to_string(nval));
    e.values.resize(size_t(nval));
    if (!in.read(reinterpret_cast<char*>(e.values.data()), std::streamsize(nval) * 4))
      throw ConvertError(path, e.name, "truncated imatrix values");
    for (float v : e.values)
      if (!std::isfinite(v) || v < 0) throw ConvertError(path, e.name, "non-finite or negative importance value");
    m.entries.push_back(std::move(e));
  }
  int32_t chunks;
  if (in.read(reinterpret_cast<char*>(&chunks), 4)) {
    m.chunks = chunks;
    int32_t dl;
    if (in.read(reinterpret_cast<char*>(&dl), 4) && dl > 0 && dl < (1 << 20)) {
      m.dataset.resize(size_t(dl));
      in.read(m.dataset.data(), dl);
    }
  }
  return m;
}

void write_imatrix(const std::string& path, const Imatrix& m) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  if (!out) throw ConvertError(tmp, "", "cannot create");
  auto i32 = [&](int32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  i32(int32_t(m.entries.size()));
  for (const ImatrixEntry& e : m.entries) {
    i32(int32_t(e.name.size()));
    out.write(e.name.data(), std::streamsize(e.name.size()));
    i32(e.ncall);
    i32(int32_t(e.values.size()));
    out.write(reinterpret_cast<const char*>(e.values.data()), std::streamsize(e.values.size() * 4));
  }
  i32(m.chunks);
  i32(int32_t(m.dataset.size()));
  out.write(m.dataset.data(), std::streamsize(m.dataset.size()));
  out.close();
  if (!out) throw ConvertError(tmp, "", "write failed");
  std::rename(tmp.c_str(), path.c_str());
}

std::string file_hash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConvertError(path, "", "cannot open");
  const std::string b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH3_64bits(b.data(), b.size())));
  return buf;
}

}  // namespace ds4::convert
