// Serialisation of GgufWriter's contents; see gguf_writer.hpp for the layout and guarantees.
#include "engine/gguf/gguf_writer.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "engine/gguf/gguf_error.hpp"
#include "engine/gguf/gguf_reader.hpp"

namespace ds4::gguf {
namespace {

uint64_t pad_to(uint64_t n, uint64_t align) { return n + (align - n % align) % align; }

class Bytes {
 public:
  template <class T>
  void put(T x) {
    const auto* p = reinterpret_cast<const std::byte*>(&x);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out.insert(out.end(), p, p + s.size());
  }
  void put_value(const Value& v) {
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(x);
          } else if constexpr (std::is_same_v<T, Array>) {
            put<uint32_t>(static_cast<uint32_t>(x.elem_type));
            put<uint64_t>(x.items.size());
            for (const Value& item : x.items) {
              if (item.type() != x.elem_type)
                throw GgufError("", std::nullopt,
                                "array element of type " + item.type_description() + " in an array of " +
                                    std::string(value_type_name(x.elem_type)));
              put_value(item);
            }
          } else if constexpr (std::is_same_v<T, bool>) {
            put<uint8_t>(x ? 1 : 0);
          } else {
            put<T>(x);
          }
        },
        v.v);
  }
  std::vector<std::byte> out;
};

}  // namespace

void GgufWriter::set(std::string key, Value value) {
  if (key == "general.alignment") {
    const uint32_t* a = std::get_if<uint32_t>(&value.v);
    if (!a || *a == 0 || (*a & (*a - 1)) != 0)
      throw GgufError("", std::nullopt, "general.alignment must be a power-of-two u32");
    alignment_ = *a;
  }
  for (Entry& e : kvs_)
    if (e.key == key) {
      e.value = std::move(value);
      return;
    }
  kvs_.push_back({std::move(key), std::move(value)});
}

void GgufWriter::add(Tensor t) {
  const std::string where = "tensor '" + t.name + "': ";
  if (t.dims.empty() || t.dims.size() > kMaxDims)
    throw GgufError("", std::nullopt, where + std::to_string(t.dims.size()) + " dimensions (must be 1..4)");
  uint64_t n = 1;
  for (uint64_t d : t.dims) {
    if (d == 0 || __builtin_mul_overflow(n, d, &n) || n > static_cast<uint64_t>(INT64_MAX))
      throw GgufError("", std::nullopt, where + "zero or overflowing dimension");
  }
  t.n_bytes = quant::row_bytes(t.type, t.dims[0]) * (n / t.dims[0]);
  if (!t.fill && t.data.size() != t.n_bytes)
    throw GgufError("", std::nullopt,
                    where + "data has " + std::to_string(t.data.size()) + " bytes, shape and type need " +
                        std::to_string(t.n_bytes));
  for (const Tensor& o : tensors_)
    if (o.name == t.name) throw GgufError("", std::nullopt, "duplicate tensor name '" + t.name + "'");
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor(std::string name, quant::Type type, std::vector<uint64_t> dims,
                            std::span<const std::byte> data) {
  add({std::move(name), type, std::move(dims), 0, data, nullptr});
}

void GgufWriter::add_tensor(std::string name, quant::Type type, std::vector<uint64_t> dims, TensorFill fill) {
  add({std::move(name), type, std::move(dims), 0, {}, std::move(fill)});
}

GgufWriter GgufWriter::copy_of(const GgufFile& src) {
  GgufWriter w;
  for (const KeyValue& kv : src.metadata()) w.set(kv.key, kv.value);
  // Offsets are laid out again in table order; for GGML-written files that is the same layout.
  for (const TensorInfo& t : src.tensors()) w.add_tensor(t.name, t.type, t.dims, src.bytes(t));
  return w;
}

std::vector<std::byte> GgufWriter::header() const {
  Bytes b;
  b.put<uint32_t>(kGgufMagic);
  b.put<uint32_t>(3);
  b.put<uint64_t>(tensors_.size());
  b.put<uint64_t>(kvs_.size());
  for (const Entry& e : kvs_) {
    b.put_string(e.key);
    b.put<uint32_t>(static_cast<uint32_t>(e.value.type()));
    b.put_value(e.value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    b.put_string(t.name);
    b.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) b.put<uint64_t>(d);
    b.put<uint32_t>(static_cast<uint32_t>(t.type));
    b.put<uint64_t>(offset);
    offset += pad_to(t.n_bytes, alignment_);
  }
  b.out.resize(pad_to(b.out.size(), alignment_), std::byte{0});
  return std::move(b.out);
}

GgufWriter::Layout GgufWriter::layout() const {
  Layout l;
  l.header = header();
  uint64_t off = l.header.size();
  for (const Tensor& t : tensors_) {
    l.tensor_offsets.push_back(off);
    off += pad_to(t.n_bytes, alignment_);
  }
  l.file_size = off;
  return l;
}

uint64_t GgufWriter::file_size() const {
  uint64_t n = header().size();
  for (const Tensor& t : tensors_) n += pad_to(t.n_bytes, alignment_);
  return n;
}

template <class Sink>
void GgufWriter::emit(Sink& sink) const {
  const std::vector<std::byte> h = header();
  sink(std::span<const std::byte>(h));
  static const std::byte zeros[256] = {};
  std::vector<std::byte> buf;
  for (const Tensor& t : tensors_) {
    if (t.fill) {
      buf.assign(t.n_bytes, std::byte{0});
      t.fill(std::span<std::byte>(buf));
      sink(std::span<const std::byte>(buf));
    } else {
      sink(t.data);
    }
    uint64_t pad = pad_to(t.n_bytes, alignment_) - t.n_bytes;
    while (pad > 0) {
      uint64_t k = std::min<uint64_t>(pad, sizeof zeros);
      sink(std::span<const std::byte>(zeros, k));
      pad -= k;
    }
  }
}

std::vector<std::byte> GgufWriter::write_to_memory() const {
  std::vector<std::byte> out;
  auto sink = [&](std::span<const std::byte> s) { out.insert(out.end(), s.begin(), s.end()); };
  emit(sink);
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw GgufError(tmp, std::nullopt, std::string("cannot create: ") + std::strerror(errno));
  uint64_t written = 0;
  auto sink = [&](std::span<const std::byte> s) {
    if (!s.empty() && std::fwrite(s.data(), 1, s.size(), f) != s.size()) {
      throw GgufError(tmp, written, std::string("write failed: ") + std::strerror(errno));
    }
    written += s.size();
  };
  try {
    emit(sink);
  } catch (...) {
    // A fill callback or a write failed: do not leave a partial file.
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::remove(tmp.c_str());
    throw GgufError(tmp, std::nullopt, std::string("close failed: ") + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw GgufError(path, std::nullopt, "cannot rename " + tmp + ": " + ec.message());
}

}  // namespace ds4::gguf
