// Typed JSON field reads. See json_fields.hpp.
#include "gateway/protocol/json_fields.hpp"

#include <charconv>
#include <cmath>
#include <limits>

namespace ds4::protocol::json_fields {

namespace json = boost::json;

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "unknown";
}

[[noreturn]] void fail(const std::string& path, const std::string& message) { throw RequestError(path, message); }

[[noreturn]] void wrong_type(const std::string& path, const json::value& v, const std::string& expected) {
  fail(path, "'" + path + "' must be " + expected + ", got " + kind_of(v));
}

std::string index_path(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

std::string string_field(const json::value& v, const std::string& path) {
  if (!v.is_string()) wrong_type(path, v, "a string");
  return std::string(v.get_string());
}

bool bool_field(const json::value& v, const std::string& path) {
  if (!v.is_bool()) wrong_type(path, v, "a boolean");
  return v.get_bool();
}

double number_field(const json::value& v, const std::string& path) {
  double d = 0;
  if (v.is_int64()) d = static_cast<double>(v.get_int64());
  else if (v.is_uint64()) d = static_cast<double>(v.get_uint64());
  else if (v.is_double()) d = v.get_double();
  else wrong_type(path, v, "a number");
  if (!std::isfinite(d)) fail(path, "'" + path + "' must be finite");
  return d;
}

uint64_t integer_field(const json::value& v, const std::string& path, uint64_t lo, uint64_t hi) {
  if (v.is_int64()) {
    int64_t i = v.get_int64();
    if (i < 0 || static_cast<uint64_t>(i) < lo || static_cast<uint64_t>(i) > hi)
      fail(path, "'" + path + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return static_cast<uint64_t>(i);
  }
  if (v.is_uint64()) {
    uint64_t u = v.get_uint64();
    if (u < lo || u > hi)
      fail(path, "'" + path + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return u;
  }
  if (v.is_double()) {
    double d = v.get_double();
    // 2^64 itself compares equal to (double)UINT64_MAX; converting it would overflow.
    constexpr double kTwoTo64 = 18446744073709551616.0;
    if (std::isfinite(d) && d == std::floor(d) && d >= static_cast<double>(lo) && d < kTwoTo64 &&
        static_cast<uint64_t>(d) <= hi)
      return static_cast<uint64_t>(d);
    fail(path, "'" + path + "' must be an integer between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  wrong_type(path, v, "an integer");
}

std::string number_text(double d) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, res.ptr);
}

double ranged(const json::value& v, const std::string& path, double lo, double hi) {
  double d = number_field(v, path);
  if (d < lo || d > hi) fail(path, "'" + path + "' must be between " + number_text(lo) + " and " + number_text(hi));
  return d;
}

std::string member_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

const json::object& object_at(const json::value& v, const std::string& path, const char* what) {
  if (!v.is_object()) wrong_type(path, v, what);
  return v.get_object();
}

const json::value* present(const json::object& obj, std::string_view key) {
  const json::value* v = obj.if_contains(key);
  return v && !v->is_null() ? v : nullptr;
}

std::string optional_string(const json::object& obj, std::string_view key, const std::string& path) {
  const json::value* v = present(obj, key);
  return v ? string_field(*v, member_path(path, key)) : std::string();
}

std::string required_string(const json::object& obj, std::string_view key, const std::string& path,
                            const std::string& missing) {
  const json::value* v = obj.if_contains(key);
  if (!v) fail(member_path(path, key), missing);
  return string_field(*v, member_path(path, key));
}

std::optional<uint32_t> optional_u32(const json::object& obj, std::string_view key, const std::string& path) {
  const json::value* v = present(obj, key);
  if (!v) return std::nullopt;
  return static_cast<uint32_t>(integer_field(*v, member_path(path, key), 0, std::numeric_limits<uint32_t>::max()));
}

}  // namespace ds4::protocol::json_fields
