// Conversions between stored GGUF values and the C++ types callers ask for. The leniency rules
// are in gguf_value.hpp; everything that does not convert throws GgufError naming the key.
#include "engine/gguf/gguf_value.hpp"

#include <limits>
#include <type_traits>
#include <utility>

#include "engine/gguf/gguf_error.hpp"

namespace ds4::gguf {

std::string_view value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "unknown type";
}

bool is_known_value_type(uint32_t id) { return id <= static_cast<uint32_t>(ValueType::F64); }

bool operator==(const Array& a, const Array& b) { return a.elem_type == b.elem_type && a.items == b.items; }

std::string Value::type_description() const {
  if (const Array* a = std::get_if<Array>(&v)) {
    if (a->elem_type == ValueType::ARRAY) return "array of arrays";
    return std::string(value_type_name(a->elem_type)) + " array";
  }
  return std::string(value_type_name(type()));
}

namespace {

template <class T>
constexpr std::string_view wanted_name() {
  if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_same_v<T, std::string>) return "string";
  else if constexpr (std::is_floating_point_v<T>) return "float (f32 or f64)";
  else if constexpr (std::is_same_v<T, uint8_t>) return "u8";
  else if constexpr (std::is_same_v<T, int8_t>) return "i8";
  else if constexpr (std::is_same_v<T, uint16_t>) return "u16";
  else if constexpr (std::is_same_v<T, int16_t>) return "i16";
  else if constexpr (std::is_same_v<T, uint32_t>) return "u32";
  else if constexpr (std::is_same_v<T, int32_t>) return "i32";
  else if constexpr (std::is_same_v<T, uint64_t>) return "u64";
  else return "i64";
}

[[noreturn]] void type_mismatch(std::string_view key, std::string_view wanted, const std::string& found) {
  throw GgufError("", std::nullopt,
                  "metadata key '" + std::string(key) + "': expected " + std::string(wanted) + ", found " + found);
}

template <class T>
T convert(const Value& val, std::string_view key) {
  if constexpr (std::is_same_v<T, bool>) {
    if (const bool* b = std::get_if<bool>(&val.v)) return *b;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (const std::string* s = std::get_if<std::string>(&val.v)) return *s;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (const float* f = std::get_if<float>(&val.v)) return static_cast<T>(*f);
    if (const double* d = std::get_if<double>(&val.v)) return static_cast<T>(*d);
  } else {
    // Integer request: any stored integer whose value is representable in T.
    bool ok = false;
    T out{};
    std::visit(
        [&](const auto& x) {
          using S = std::decay_t<decltype(x)>;
          if constexpr (std::is_integral_v<S> && !std::is_same_v<S, bool>) {
            if (std::in_range<T>(x)) {
              ok = true;
              out = static_cast<T>(x);
            } else {
              type_mismatch(
                  key, wanted_name<T>(),
                  std::string(value_type_name(val.type())) + " value " + std::to_string(x) + " which does not fit");
            }
          }
        },
        val.v);
    if (ok) return out;
  }
  type_mismatch(key, wanted_name<T>(), val.type_description());
}

}  // namespace

template <class T>
T Value::as(std::string_view key) const {
  return convert<T>(*this, key);
}

template <class T>
std::vector<T> Value::as_vector(std::string_view key) const {
  const Array* a = std::get_if<Array>(&v);
  if (!a) type_mismatch(key, std::string(wanted_name<T>()) + " array", type_description());
  std::vector<T> out;
  out.reserve(a->items.size());
  for (const Value& item : a->items) {
    try {
      out.push_back(convert<T>(item, key));
    } catch (const GgufError&) {
      type_mismatch(key, std::string(wanted_name<T>()) + " array", type_description());
    }
  }
  return out;
}

template <class T>
Value make_array(const std::vector<T>& xs) {
  Array a;
  a.elem_type = Value(T{}).type();
  a.items.reserve(xs.size());
  for (const T& x : xs) a.items.emplace_back(x);
  return Value(std::move(a));
}

Value make_string_array(const std::vector<std::string>& xs) {
  Array a;
  a.elem_type = ValueType::STRING;
  a.items.reserve(xs.size());
  for (const std::string& x : xs) a.items.emplace_back(x);
  return Value(std::move(a));
}

template uint8_t Value::as<uint8_t>(std::string_view) const;
template int8_t Value::as<int8_t>(std::string_view) const;
template uint16_t Value::as<uint16_t>(std::string_view) const;
template int16_t Value::as<int16_t>(std::string_view) const;
template uint32_t Value::as<uint32_t>(std::string_view) const;
template int32_t Value::as<int32_t>(std::string_view) const;
template uint64_t Value::as<uint64_t>(std::string_view) const;
template int64_t Value::as<int64_t>(std::string_view) const;
template float Value::as<float>(std::string_view) const;
template double Value::as<double>(std::string_view) const;
template bool Value::as<bool>(std::string_view) const;
template std::string Value::as<std::string>(std::string_view) const;
template std::vector<uint32_t> Value::as_vector<uint32_t>(std::string_view) const;
template std::vector<int32_t> Value::as_vector<int32_t>(std::string_view) const;
template std::vector<uint64_t> Value::as_vector<uint64_t>(std::string_view) const;
template std::vector<int64_t> Value::as_vector<int64_t>(std::string_view) const;
template std::vector<float> Value::as_vector<float>(std::string_view) const;
template std::vector<double> Value::as_vector<double>(std::string_view) const;
template std::vector<bool> Value::as_vector<bool>(std::string_view) const;
template std::vector<std::string> Value::as_vector<std::string>(std::string_view) const;
template Value make_array<uint32_t>(const std::vector<uint32_t>&);
template Value make_array<int32_t>(const std::vector<int32_t>&);
template Value make_array<float>(const std::vector<float>&);

}  // namespace ds4::gguf
