// Safetensors shards and checkpoints; see safetensors.hpp for the format and the checks.
#include "toolchain/convert/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "toolchain/convert/convert_error.hpp"

namespace ds4::convert {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

struct DtypeInfo {
  Dtype d;
  std::string_view name;
  size_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {Dtype::F32, "F32", 4},         {Dtype::F16, "F16", 2},         {Dtype::BF16, "BF16", 2},
    {Dtype::F8_E4M3, "F8_E4M3", 1}, {Dtype::F8_E8M0, "F8_E8M0", 1}, {Dtype::I8, "I8", 1},
    {Dtype::U8, "U8", 1},           {Dtype::I32, "I32", 4},         {Dtype::I64, "I64", 8},
};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == name) return &d;
  return nullptr;
}

uint64_t as_u64(const json::value& v, const std::string& path, const std::string& tensor, const char* what) {
  if (v.is_uint64()) return v.as_uint64();
  if (v.is_int64() && v.as_int64() >= 0) return static_cast<uint64_t>(v.as_int64());
  throw ConvertError(path, tensor, std::string(what) + " must be a non-negative integer");
}

}  // namespace

std::string_view dtype_name(Dtype d) {
  for (const DtypeInfo& i : kDtypes)
    if (i.d == d) return i.name;
  return "?";
}
size_t dtype_size(Dtype d) {
  for (const DtypeInfo& i : kDtypes)
    if (i.d == d) return i.size;
  return 0;
}

uint64_t SourceTensor::n_elements() const {
  uint64_t n = 1;
  for (uint64_t x : shape) n *= x;
  return n;
}

std::unique_ptr<Shard> Shard::open(const std::string& path) {
  std::unique_ptr<Shard> s(new Shard());
  s->path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ConvertError(path, "", std::string("cannot open shard: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw ConvertError(path, "", std::string("cannot stat: ") + std::strerror(e));
  }
  s->size_ = static_cast<uint64_t>(st.st_size);
  if (s->size_ < 8) {
    ::close(fd);
    throw ConvertError(path, "",
                       "truncated: " + std::to_string(s->size_) + " bytes, shorter than the 8-byte header length");
  }
  void* p = ::mmap(nullptr, s->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw ConvertError(path, "", std::string("cannot map: ") + std::strerror(e));
  s->base_ = static_cast<const std::byte*>(p);

  uint64_t hlen = 0;
  std::memcpy(&hlen, s->base_, 8);
  if (hlen > s->size_ - 8)
    throw ConvertError(path, "",
                       "truncated: header length " + std::to_string(hlen) + " runs past the end of the " +
                           std::to_string(s->size_) + "-byte file");
  s->header_len_ = hlen;
  json::value root;
  try {
    root = json::parse(s->header_json());
  } catch (const std::exception& ex) {
    throw ConvertError(path, "", std::string("header is not valid JSON: ") + ex.what());
  }
  if (!root.is_object()) throw ConvertError(path, "", "header is not a JSON object");
  const uint64_t data_start = 8 + hlen, data_len = s->size_ - data_start;
  for (const auto& kv : root.as_object()) {
    const std::string name(kv.key());
    if (name == "__metadata__") continue;
    if (!kv.value().is_object()) throw ConvertError(path, name, "header entry is not an object");
    const json::object& o = kv.value().as_object();
    const json::value* dt = o.if_contains("dtype");
    const json::value* sh = o.if_contains("shape");
    const json::value* off = o.if_contains("data_offsets");
    if (!dt || !dt->is_string() || !sh || !sh->is_array() || !off || !off->is_array() || off->as_array().size() != 2)
      throw ConvertError(path, name,
                         "header entry needs dtype (string), shape (array) and data_offsets ([begin, end])");
    const DtypeInfo* di = find_dtype(std::string_view(dt->as_string()));
    if (!di) throw ConvertError(path, name, "unknown dtype '" + std::string(dt->as_string()) + "'");
    SourceTensor t;
    t.name = name;
    t.dtype = di->d;
    for (const json::value& d : sh->as_array()) t.shape.push_back(as_u64(d, path, name, "shape entry"));
    const uint64_t b = as_u64(off->as_array()[0], path, name, "data_offsets[0]");
    const uint64_t en = as_u64(off->as_array()[1], path, name, "data_offsets[1]");
    if (en < b) throw ConvertError(path, name, "data_offsets end before they begin");
    uint64_t n = 1;
    for (uint64_t d : t.shape) {
      if (d != 0 && n > (uint64_t(1) << 62) / d) throw ConvertError(path, name, "shape overflows");
      n *= d;
    }
    if (n * di->size != en - b)
      throw ConvertError(path, name,
                         "holds " + std::to_string(en - b) + " bytes, but shape and dtype " + std::string(di->name) +
                             " need " + std::to_string(n * di->size));
    if (en > data_len)
      throw ConvertError(path, name,
                         "truncated file: the tensor's data [" + std::to_string(b) + ", " + std::to_string(en) +
                             ") runs past the end of the data section (" + std::to_string(data_len) + " bytes)");
    t.n_bytes = en - b;
    t.file_offset = data_start + b;
    t.data = s->base_ + t.file_offset;
    s->tensors_.push_back(std::move(t));
  }
  std::vector<const SourceTensor*> by_off;
  for (const SourceTensor& t : s->tensors_) by_off.push_back(&t);
  std::sort(by_off.begin(), by_off.end(), [](auto* a, auto* b) { return a->file_offset < b->file_offset; });
  for (size_t i = 1; i < by_off.size(); ++i)
    if (by_off[i]->file_offset < by_off[i - 1]->file_offset + by_off[i - 1]->n_bytes)
      throw ConvertError(path, by_off[i]->name, "data overlaps tensor '" + by_off[i - 1]->name + "'");
  return s;
}

Shard::~Shard() {
  if (base_) ::munmap(const_cast<std::byte*>(base_), size_);
}

std::string_view Shard::header_json() const {
  return {reinterpret_cast<const char*>(base_) + 8, static_cast<size_t>(header_len_)};
}

void Shard::release(uint64_t offset, uint64_t len) const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t b = (offset + page - 1) / page * page, e = (offset + len) / page * page;
  if (e > b) ::madvise(const_cast<std::byte*>(base_) + b, e - b, MADV_DONTNEED);
}

Checkpoint Checkpoint::open(const std::string& dir) {
  Checkpoint c;
  c.dir_ = dir;
  if (!fs::is_directory(dir)) throw ConvertError(dir, "", "not a directory");
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::map<std::string, std::string> placed;  // tensor -> shard file name, from the index
  std::vector<std::string> files;
  if (fs::exists(index)) {
    std::ifstream in(index);
    std::stringstream ss;
    ss << in.rdbuf();
    json::value root;
    try {
      root = json::parse(ss.str());
    } catch (const std::exception& ex) {
      throw ConvertError(index.string(), "", std::string("not valid JSON: ") + ex.what());
    }
    const json::value* wm = root.is_object() ? root.as_object().if_contains("weight_map") : nullptr;
    if (!wm || !wm->is_object()) throw ConvertError(index.string(), "", "has no weight_map object");
    for (const auto& kv : wm->as_object()) {
      if (!kv.value().is_string())
        throw ConvertError(index.string(), std::string(kv.key()), "weight_map value is not a file name");
      const std::string f(kv.value().as_string());
      placed[std::string(kv.key())] = f;
      if (std::find(files.begin(), files.end(), f) == files.end()) files.push_back(f);
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files)
      if (!fs::exists(fs::path(dir) / f)) {
        std::string example;
        for (const auto& [t, sf] : placed)
          if (sf == f) {
            example = t;
            break;
          }
        throw ConvertError((fs::path(dir) / f).string(), example,
                           "missing shard: model.safetensors.index.json places this tensor (and others) in it");
      }
  } else {
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".safetensors") files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw ConvertError(dir, "", "no *.safetensors files and no model.safetensors.index.json");
  }
  for (const std::string& f : files) {
    c.shards_.push_back(Shard::open((fs::path(dir) / f).string()));
    const size_t si = c.shards_.size() - 1;
    for (const SourceTensor& t : c.shards_.back()->tensors()) {
      const_cast<SourceTensor&>(t).shard = si;
      auto [it, fresh] = c.by_name_.emplace(t.name, &t);
      if (!fresh)
        throw ConvertError(c.shards_[si]->path(), t.name,
                           "duplicate tensor: also in " + c.shards_[it->second->shard]->path());
      if (!placed.empty()) {
        auto p = placed.find(t.name);
        if (p == placed.end())
          throw ConvertError(c.shards_[si]->path(), t.name, "not listed in model.safetensors.index.json");
        if (p->second != f)
          throw ConvertError(c.shards_[si]->path(), t.name, "model.safetensors.index.json places it in " + p->second);
      }
    }
  }
  for (const auto& [t, f] : placed)
    if (!c.by_name_.count(t))
      throw ConvertError((fs::path(dir) / f).string(), t,
                         "listed in model.safetensors.index.json but not in the shard");
  return c;
}

const SourceTensor* Checkpoint::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<const SourceTensor*> Checkpoint::tensors() const {
  std::vector<const SourceTensor*> v;
  for (const auto& [n, t] : by_name_) v.push_back(t);
  return v;
}

uint64_t Checkpoint::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [k, t] : by_name_) n += t->n_bytes;
  return n;
}

void write_shard(const std::string& path, const std::vector<ShardEntry>& tensors) {
  json::object hdr;
  uint64_t off = 0;
  for (const ShardEntry& t : tensors) {
    json::array shape;
    for (uint64_t d : t.shape) shape.push_back(d);
    hdr[t.name] = json::object{{"dtype", std::string(dtype_name(t.dtype))},
                               {"shape", std::move(shape)},
                               {"data_offsets", json::array{off, off + t.bytes.size()}}};
    off += t.bytes.size();
  }
  hdr["__metadata__"] = json::object{{"format", "pt"}};
  std::string h = json::serialize(hdr);
  while ((h.size() + 8) % 8) h.push_back(' ');
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp, std::ios::binary);
  if (!out) throw ConvertError(tmp, "", "cannot create");
  const uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const ShardEntry& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()));
  out.close();
  if (!out) throw ConvertError(tmp, "", "write failed");
  fs::rename(tmp, path);
}

}  // namespace ds4::convert
