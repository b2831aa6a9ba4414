#pragma once
// GGUF metadata values. A value is one of the thirteen GGUF scalar/string/array types; arrays
// carry their element type and may nest (an array of arrays of strings is legal GGUF). The typed
// accessors convert with the leniency the DS4 metadata needs: any integer type is accepted for an
// integer request when the stored value fits (the spec allows "u32 or u64", "u32/i32"), f32 and
// f64 are interchangeable for floating requests, and anything else is a type error that names the
// key, the type asked for and the type found.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace ds4::gguf {

enum class ValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

// "u32", "string", "array" ... ; "type#<id>" for an id outside the enum.
std::string_view value_type_name(ValueType t);
bool is_known_value_type(uint32_t id);

struct Value;

struct Array {
  ValueType elem_type = ValueType::U8;
  std::vector<Value> items;
};
bool operator==(const Array& a, const Array& b);

struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, Array,
                               uint64_t, int64_t, double>;
  Storage v;

  Value() : v(uint8_t{0}) {}
  template <class T>
  requires std::is_constructible_v<Storage, T> Value(T x)
      : v(std::move(x)) {}  // NOLINT(google-explicit-constructor): literal-friendly
  Value(const char* s) : v(std::string(s)) {}

  ValueType type() const { return static_cast<ValueType>(v.index()); }
  // "u32 array" / "string" ... : the type as an error message should name it.
  std::string type_description() const;

  // Conversions used by GgufFile::get; `key` only feeds the error message.
  // Integer targets accept any integer type whose value fits; floating targets accept f32/f64.
  template <class T>
  T as(std::string_view key) const;
  // Element-wise conversion of an array value.
  template <class T>
  std::vector<T> as_vector(std::string_view key) const;

  bool operator==(const Value&) const = default;
};

// Builds an array value of one scalar element type from a vector.
template <class T>
Value make_array(const std::vector<T>& xs);
Value make_string_array(const std::vector<std::string>& xs);

// Explicit instantiations live in gguf_value.cpp.
extern template uint8_t Value::as<uint8_t>(std::string_view) const;
extern template int8_t Value::as<int8_t>(std::string_view) const;
extern template uint16_t Value::as<uint16_t>(std::string_view) const;
extern template int16_t Value::as<int16_t>(std::string_view) const;
extern template uint32_t Value::as<uint32_t>(std::string_view) const;
extern template int32_t Value::as<int32_t>(std::string_view) const;
extern template uint64_t Value::as<uint64_t>(std::string_view) const;
extern template int64_t Value::as<int64_t>(std::string_view) const;
extern template float Value::as<float>(std::string_view) const;
extern template double Value::as<double>(std::string_view) const;
extern template bool Value::as<bool>(std::string_view) const;
extern template std::string Value::as<std::string>(std::string_view) const;
extern template std::vector<uint32_t> Value::as_vector<uint32_t>(std::string_view) const;
extern template std::vector<int32_t> Value::as_vector<int32_t>(std::string_view) const;
extern template std::vector<uint64_t> Value::as_vector<uint64_t>(std::string_view) const;
extern template std::vector<int64_t> Value::as_vector<int64_t>(std::string_view) const;
extern template std::vector<float> Value::as_vector<float>(std::string_view) const;
extern template std::vector<double> Value::as_vector<double>(std::string_view) const;
extern template std::vector<bool> Value::as_vector<bool>(std::string_view) const;
extern template std::vector<std::string> Value::as_vector<std::string>(std::string_view) const;
extern template Value make_array<uint32_t>(const std::vector<uint32_t>&);
extern template Value make_array<int32_t>(const std::vector<int32_t>&);
extern template Value make_array<float>(const std::vector<float>&);

}  // namespace ds4::gguf
