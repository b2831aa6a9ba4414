// Internal: typed reads of request JSON fields for the protocol parsers (OpenAI chat and
// completions, Anthropic Messages, OpenAI Responses). Every failure is a RequestError whose param
// is the JSON path of the field and whose message says what was expected and what arrived.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <string>

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

}  // namespace ds4::protocol::json_fields
