// Internal: a small byte-exact JSON scanner. Boost.JSON re-serializes numbers (1.0 -> 1E0) and
// loses the client's spelling, but DSML rendering must keep the raw value bytes (minified), as
// ds4 does. So this walks raw JSON text: validates a value (depth-limited), decodes strings,
// and splits an object into (decoded key, raw value bytes) pairs in document order.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::protocol::json_scan {

inline constexpr int kMaxDepth = 256;

void skip_ws(std::string_view s, size_t& pos);
// Advances `pos` past one JSON value; false when the text is not valid JSON at `pos`.
bool skip_value(std::string_view s, size_t& pos, int depth = 0);
// Decodes the string literal at `pos` (which must be '"') into UTF-8.
bool decode_string(std::string_view s, size_t& pos, std::string& out);
// True when `s` is exactly one JSON value with optional surrounding whitespace.
bool is_valid(std::string_view s);

struct Member {
  std::string key;
  std::string_view raw_value;  // exact bytes of the value
  bool is_string = false;
  std::string string_value;  // decoded, when is_string
};
// The members of a JSON object text in order (duplicates kept); nullopt if `s` is not exactly
// one valid JSON object.
std::optional<std::vector<Member>> object_members(std::string_view s);

// Compact JSON text of a parsed value, in document key order, with numbers written the way
// people write them (shortest round-trip decimal: 1.5, 0.1, 1e+300) rather than Boost.JSON's
// 1.5E0 style. Used for text the model reads (tool schemas) and for client arguments that
// arrived as JSON values instead of strings.
std::string compact_text(const boost::json::value& value);

// Appends `text` as a JSON string literal (quotes included); escapes " \ and controls.
void append_quoted(std::string& out, std::string_view text);

}  // namespace ds4::protocol::json_scan
