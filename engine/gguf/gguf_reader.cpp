// GGUF parsing and validation. The file layout (all little-endian):
//   u32 magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
//   n_kv x { string key, u32 value_type, value },
//   n_tensors x { string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset },
//   padding to general.alignment, then the data section; tensor offsets are relative to it.
// A string is a u64 byte count followed by the bytes; an array is u32 element type, u64 count,
// then the elements. Every read goes through Cursor, which checks the bounds first, so no input
// can make the parser read past the buffer; counts are checked against the bytes left before
// anything is reserved, so no input can make it allocate absurd amounts either.
#include "engine/gguf/gguf_reader.hpp"

#include <algorithm>
#include <cstring>

namespace ds4::gguf {
namespace {

constexpr uint32_t kMaxArrayDepth = 4;
// Smallest encodings, used to reject counts the remaining bytes cannot possibly hold.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // empty key, type, one u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // empty name, 1 dim, type, offset

class Cursor {
 public:
  Cursor(const std::byte* base, uint64_t size, const std::string& path) : base_(base), size_(size), path_(path) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  [[noreturn]] void fail(uint64_t at, const std::string& msg) const { throw GgufError(path_, at, msg); }

  void need(uint64_t n, const char* what) const {
    if (n > left())
      fail(pos_, std::string("truncated header: ") + what + " needs " + std::to_string(n) + " bytes, only " +
                     std::to_string(left()) + " left in the file");
  }

  template <class T>
  T read(const char* what) {
    need(sizeof(T), what);
    T x;
    std::memcpy(&x, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return x;
  }

  std::string read_string(const char* what) {
    uint64_t at = pos_;
    uint64_t n = read<uint64_t>(what);
    if (n > left())
      fail(at, std::string(what) + " length " + std::to_string(n) + " runs past the end of the file (" +
                   std::to_string(left()) + " bytes left)");
    std::string s(reinterpret_cast<const char*>(base_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  const std::byte* base_;
  uint64_t size_;
  const std::string& path_;
  uint64_t pos_ = 0;
};

uint64_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL: return 1;
    case ValueType::U16:
    case ValueType::I16: return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32: return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64: return 8;
    case ValueType::STRING: return 8;
    case ValueType::ARRAY: return 4 + 8;
  }
  return 1;
}

Value read_value(Cursor& c, ValueType t, const std::string& key, uint32_t depth) {
  switch (t) {
    case ValueType::U8: return c.read<uint8_t>("u8 value");
    case ValueType::I8: return c.read<int8_t>("i8 value");
    case ValueType::U16: return c.read<uint16_t>("u16 value");
    case ValueType::I16: return c.read<int16_t>("i16 value");
    case ValueType::U32: return c.read<uint32_t>("u32 value");
    case ValueType::I32: return c.read<int32_t>("i32 value");
    case ValueType::F32: return c.read<float>("f32 value");
    case ValueType::U64: return c.read<uint64_t>("u64 value");
    case ValueType::I64: return c.read<int64_t>("i64 value");
    case ValueType::F64: return c.read<double>("f64 value");
    case ValueType::BOOL: {
      uint64_t at = c.pos();
      uint8_t b = c.read<uint8_t>("bool value");
      if (b > 1) c.fail(at, "metadata key '" + key + "': bool value " + std::to_string(b) + " is neither 0 nor 1");
      return b == 1;
    }
    case ValueType::STRING: return c.read_string("string value");
    case ValueType::ARRAY: {
      uint64_t at = c.pos();
      if (depth >= kMaxArrayDepth)
        c.fail(at, "metadata key '" + key + "': arrays nested deeper than " + std::to_string(kMaxArrayDepth));
      uint32_t et = c.read<uint32_t>("array element type");
      if (!is_known_value_type(et))
        c.fail(at, "metadata key '" + key + "': unknown array element type " + std::to_string(et));
      uint64_t n_at = c.pos();
      uint64_t n = c.read<uint64_t>("array length");
      ValueType elem = static_cast<ValueType>(et);
      if (n > c.left() / min_encoded_size(elem))
        c.fail(n_at, "metadata key '" + key + "': array of " + std::to_string(n) + " " +
                         std::string(value_type_name(elem)) + " elements cannot fit in the " +
                         std::to_string(c.left()) + " bytes left");
      Array a;
      a.elem_type = elem;
      a.items.reserve(n);
      for (uint64_t i = 0; i < n; ++i) a.items.push_back(read_value(c, elem, key, depth + 1));
      return Value(std::move(a));
    }
  }
  c.fail(c.pos(), "metadata key '" + key + "': unknown value type");
}

}  // namespace

GgufFile GgufFile::open(const std::string& path, MapOptions options) {
  GgufFile f;
  f.path_ = path;
  f.map_ = MappedFile::open(path, options);
  f.base_ = f.map_.data();
  f.size_ = f.map_.size();
  f.parse();
  return f;
}

GgufFile GgufFile::from_memory(std::span<const std::byte> bytes, std::string name) {
  GgufFile f;
  f.path_ = std::move(name);
  f.base_ = bytes.data();
  f.size_ = bytes.size();
  f.parse();
  return f;
}

void GgufFile::parse() {
  Cursor c(base_, size_, path_);
  if (size_ < 4) c.fail(0, "not a GGUF file: only " + std::to_string(size_) + " bytes (truncated header)");
  uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kGgufMagic) {
    char m[5] = {};
    std::memcpy(m, &magic, 4);
    for (char& ch : m)
      if (ch && (ch < 32 || ch > 126)) ch = '?';
    c.fail(0, std::string("bad magic \"") + m + "\": not a GGUF file");
  }
  version_ = c.read<uint32_t>("version");
  if (version_ != 2 && version_ != 3) {
    uint32_t swapped = __builtin_bswap32(version_);
    if (swapped == 2 || swapped == 3) c.fail(4, "big-endian GGUF files are not supported");
    c.fail(4, "unsupported GGUF version " + std::to_string(version_) + " (this reader handles v3, and v2 read-only)");
  }
  uint64_t n_tensors_at = c.pos();
  uint64_t n_tensors = c.read<uint64_t>("tensor count");
  uint64_t n_kv_at = c.pos();
  uint64_t n_kv = c.read<uint64_t>("metadata count");
  if (n_kv > c.left() / kMinKvBytes)
    c.fail(n_kv_at, "metadata count " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(c.left()) +
                        " bytes left (absurd count or truncated header)");
  if (n_tensors > c.left() / kMinTensorInfoBytes)
    c.fail(n_tensors_at, "tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                             std::to_string(c.left()) + " bytes left (absurd count or truncated header)");

  kvs_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    kv.offset = c.pos();
    kv.key = c.read_string("metadata key");
    uint64_t type_at = c.pos();
    uint32_t t = c.read<uint32_t>("metadata value type");
    if (!is_known_value_type(t))
      c.fail(type_at, "metadata key '" + kv.key + "': unknown value type " + std::to_string(t));
    kv.value = read_value(c, static_cast<ValueType>(t), kv.key, 0);
    if (!kv_index_.emplace(kv.key, kvs_.size()).second) c.fail(kv.offset, "duplicate metadata key '" + kv.key + "'");
    kvs_.push_back(std::move(kv));
  }

  if (auto it = kv_index_.find("general.alignment"); it != kv_index_.end()) {
    const KeyValue* a = &kvs_[it->second];
    const uint32_t* v = std::get_if<uint32_t>(&a->value.v);
    if (!v) c.fail(a->offset, "general.alignment must be a u32, found " + a->value.type_description());
    if (*v == 0 || (*v & (*v - 1)) != 0)
      c.fail(a->offset, "general.alignment " + std::to_string(*v) + " is not a power of two");
    alignment_ = *v;
  }

  tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.info_offset = c.pos();
    t.name = c.read_string("tensor name");
    const std::string where = "tensor '" + t.name + "': ";
    uint64_t nd_at = c.pos();
    uint32_t n_dims = c.read<uint32_t>("tensor dimension count");
    if (n_dims == 0 || n_dims > kMaxDims)
      c.fail(nd_at, where + std::to_string(n_dims) + " dimensions (must be 1.." + std::to_string(kMaxDims) + ")");
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim_at = c.pos();
      uint64_t ne = c.read<uint64_t>("tensor dimension");
      if (ne == 0) c.fail(dim_at, where + "dimension " + std::to_string(d) + " is zero");
      if (__builtin_mul_overflow(n, ne, &n) || n > static_cast<uint64_t>(INT64_MAX))
        c.fail(dim_at,
               where + "element count overflows (dimension " + std::to_string(d) + " = " + std::to_string(ne) + ")");
      t.dims.push_back(ne);
    }
    t.n_elements = n;
    uint64_t type_at = c.pos();
    uint32_t type_id = c.read<uint32_t>("tensor type");
    auto info = quant::type_info(type_id);
    if (!info) c.fail(type_at, where + "unknown tensor type id " + std::to_string(type_id));
    t.type = info->type;
    if (t.dims[0] % info->block_elems != 0)
      c.fail(type_at, where + "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " +
                          std::string(info->name) + " block size " + std::to_string(info->block_elems));
    // n / block_elems * block_bytes cannot overflow: n < 2^63 and block_bytes/block_elems <= 4.
    t.n_bytes = n / info->block_elems * info->block_bytes;
    uint64_t off_at = c.pos();
    t.offset = c.read<uint64_t>("tensor data offset");
    if (t.offset % alignment_ != 0)
      c.fail(off_at, where + "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                         std::to_string(alignment_));
    if (!tensor_index_.emplace(t.name, tensors_.size()).second)
      c.fail(t.info_offset, "duplicate tensor name '" + t.name + "'");
    tensors_.push_back(std::move(t));
  }

  uint64_t header_end = c.pos();
  data_offset_ = header_end + (alignment_ - header_end % alignment_) % alignment_;

  // Data bounds and overlap, checked in data order.
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (const TensorInfo& t : tensors_) {
    uint64_t avail = data_offset_ <= size_ ? size_ - data_offset_ : 0;
    if (t.offset > avail || t.n_bytes > avail - t.offset)
      throw GgufError(path_, data_offset_ + t.offset,
                      "tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" + std::to_string(t.n_bytes) +
                          ") runs past the end of the file (data section has " + std::to_string(avail) +
                          " bytes): truncated data");
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& a = *by_offset[i - 1];
    const TensorInfo& b = *by_offset[i];
    if (a.offset + a.n_bytes > b.offset)
      throw GgufError(path_, data_offset_ + b.offset,
                      "tensor '" + b.name + "' (data offset " + std::to_string(b.offset) + ") overlaps tensor '" +
                          a.name + "' (data offset " + std::to_string(a.offset) + ", " + std::to_string(a.n_bytes) +
                          " bytes)");
  }
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const KeyValue& GgufFile::require(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  if (it == kv_index_.end()) throw GgufError(path_, std::nullopt, "missing metadata key '" + std::string(key) + "'");
  return kvs_[it->second];
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw GgufError(path_, std::nullopt, "missing tensor '" + std::string(name) + "'");
  return *t;
}

}  // namespace ds4::gguf
