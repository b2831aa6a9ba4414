// Streaming shard writer; see shard_stream.hpp.
#include "toolchain/convert/surgery/shard_stream.hpp"

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert::surgery {

void write_stream_shard(const std::string& path, const std::vector<OutTensor>& tensors) {
  namespace json = boost::json;
  json::object hdr;
  uint64_t off = 0;
  for (const OutTensor& t : tensors) {
    const uint64_t n = t.src ? t.n_bytes : t.made.size();
    uint64_t want = dtype_size(t.dtype);
    for (uint64_t d : t.shape) want *= d;
    if (want != n)
      throw ConvertError(path, t.name,
                         "holds " + std::to_string(n) + " bytes, its shape needs " + std::to_string(want));
    json::array shape;
    for (uint64_t d : t.shape) shape.push_back(d);
    hdr[t.name] = json::object{{"dtype", std::string(dtype_name(t.dtype))},
                               {"shape", std::move(shape)},
                               {"data_offsets", json::array{off, off + n}}};
    off += n;
  }
  hdr["__metadata__"] = json::object{{"format", "pt"}};
  std::string h = json::serialize(hdr);
  while (h.size() % 8) h.push_back(' ');  // keeps the data section 8-byte aligned
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  if (!out) throw ConvertError(tmp, "", "cannot create");
  const uint64_t hl = h.size();
  out.write(reinterpret_cast<const char*>(&hl), 8);
  out.write(h.data(), std::streamsize(h.size()));
  for (const OutTensor& t : tensors) {
    if (t.src) out.write(reinterpret_cast<const char*>(t.src), std::streamsize(t.n_bytes));
    else out.write(reinterpret_cast<const char*>(t.made.data()), std::streamsize(t.made.size()));
  }
  out.close();
  if (!out) throw ConvertError(tmp, "", "write failed");
  std::filesystem::rename(tmp, path);
}

}  // namespace ds4::convert::surgery
