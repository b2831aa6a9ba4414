// Internal: typed reads of request JSON fields for the protocol parsers (OpenAI chat and
// completions, Anthropic Messages, OpenAI Responses). Every failure is a RequestError whose param
// is the JSON path of the field and whose message says what was expected and what arrived.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/protocol/request_error.hpp"

namespace ds4::protocol::json_fields {

std::string kind_of(const boost::json::value& v);  // "a string", "an object", ...
[[noreturn]] void fail(const std::string& path, const std::string& message);
[[noreturn]] void wrong_type(const std::string& path, const boost::json::value& v, const std::string& expected);
std::string index_path(const std::string& base, size_t i);  // base[i]
std::string string_field(const boost::json::value& v, const std::string& path);
bool bool_field(const boost::json::value& v, const std::string& path);
double number_field(const boost::json::value& v, const std::string& path);  // finite
// Integral JSON numbers (also 16.0) in [lo, hi].
uint64_t integer_field(const boost::json::value& v, const std::string& path, uint64_t lo, uint64_t hi);
std::string number_text(double d);
double ranged(const boost::json::value& v, const std::string& path, double lo, double hi);

// Object members. `path` is the object's own path ("" at the top: members are named alone).
std::string member_path(const std::string& path, std::string_view key);  // path.key
// `v` as an object; else a RequestError at `path` saying `what` was expected.
const boost::json::object& object_at(const boost::json::value& v, const std::string& path, const char* what);
// obj[key] when present and not null, else nullptr: the one test every optional field needs.
const boost::json::value* present(const boost::json::object& obj, std::string_view key);
// obj[key] as a string, "" when absent or null; a RequestError when it is something else.
std::string optional_string(const boost::json::object& obj, std::string_view key, const std::string& path);
// obj[key] as a string; a RequestError with `missing` when absent (null is a wrong type).
std::string required_string(const boost::json::object& obj, std::string_view key, const std::string& path,
                            const std::string& missing);
// obj[key] as an integer in [0, 2^32), when present.
std::optional<uint32_t> optional_u32(const boost::json::object& obj, std::string_view key, const std::string& path);

}  // namespace ds4::protocol::json_fields
