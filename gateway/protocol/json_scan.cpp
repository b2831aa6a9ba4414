// Byte-exact JSON scanning for DSML rendering and parsing (see json_scan.hpp).
#include "gateway/protocol/json_scan.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ds4::protocol::json_scan {

namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool literal(std::string_view s, size_t& pos, std::string_view word) {
  if (s.substr(pos, word.size()) != word) return false;
  pos += word.size();
  return true;
}

bool skip_number(std::string_view s, size_t& pos) {
  size_t p = pos;
  if (p < s.size() && s[p] == '-') ++p;
  if (p >= s.size()) return false;
  if (s[p] == '0') {
    ++p;
  } else if (s[p] >= '1' && s[p] <= '9') {
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
  } else {
    return false;
  }
  if (p < s.size() && s[p] == '.') {
    ++p;
    size_t digits = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    if (p == digits) return false;
  }
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E')) {
    ++p;
    if (p < s.size() && (s[p] == '+' || s[p] == '-')) ++p;
    size_t digits = p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    if (p == digits) return false;
  }
  pos = p;
  return true;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool read_hex4(std::string_view s, size_t pos, unsigned& value) {
  if (pos + 4 > s.size()) return false;
  value = 0;
  for (size_t i = 0; i < 4; ++i) {
    int d = hex_digit(s[pos + i]);
    if (d < 0) return false;
    value = value * 16 + static_cast<unsigned>(d);
  }
  return true;
}

void append_utf8(std::string& out, unsigned cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool scan_string(std::string_view s, size_t& pos, std::string* out) {
  if (pos >= s.size() || s[pos] != '"') return false;
  size_t p = pos + 1;
  while (p < s.size()) {
    auto c = static_cast<unsigned char>(s[p]);
    if (c == '"') {
      pos = p + 1;
      return true;
    }
    if (c < 0x20) return false;
    if (c != '\\') {
      if (out) out->push_back(static_cast<char>(c));
      ++p;
      continue;
    }
    if (p + 1 >= s.size()) return false;
    char e = s[p + 1];
    p += 2;
    switch (e) {
      case '"':
        if (out) out->push_back('"');
        break;
      case '\\':
        if (out) out->push_back('\\');
        break;
      case '/':
        if (out) out->push_back('/');
        break;
      case 'b':
        if (out) out->push_back('\b');
        break;
      case 'f':
        if (out) out->push_back('\f');
        break;
      case 'n':
        if (out) out->push_back('\n');
        break;
      case 'r':
        if (out) out->push_back('\r');
        break;
      case 't':
        if (out) out->push_back('\t');
        break;
      case 'u': {
        unsigned cp = 0;
        if (!read_hex4(s, p, cp)) return false;
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned low = 0;
          if (p + 6 <= s.size() && s[p] == '\\' && s[p + 1] == 'u' && read_hex4(s, p + 2, low) && low >= 0xDC00 &&
              low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
          } else {
            cp = 0xFFFD;  // lone surrogate: not representable in UTF-8
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        if (out) append_utf8(*out, cp);
        break;
      }
      default: return false;
    }
  }
  return false;
}

}  // namespace

void skip_ws(std::string_view s, size_t& pos) {
  while (pos < s.size() && is_ws(s[pos])) ++pos;
}

bool decode_string(std::string_view s, size_t& pos, std::string& out) { return scan_string(s, pos, &out); }

bool skip_value(std::string_view s, size_t& pos, int depth) {
  if (depth > kMaxDepth) return false;
  skip_ws(s, pos);
  if (pos >= s.size()) return false;
  char c = s[pos];
  if (c == '"') return scan_string(s, pos, nullptr);
  if (c == 't') return literal(s, pos, "true");
  if (c == 'f') return literal(s, pos, "false");
  if (c == 'n') return literal(s, pos, "null");
  if (c == '[' || c == '{') {
    const char close = c == '[' ? ']' : '}';
    ++pos;
    skip_ws(s, pos);
    if (pos < s.size() && s[pos] == close) {
      ++pos;
      return true;
    }
    for (;;) {
      if (c == '{') {
        skip_ws(s, pos);
        if (!scan_string(s, pos, nullptr)) return false;
        skip_ws(s, pos);
        if (pos >= s.size() || s[pos] != ':') return false;
        ++pos;
      }
      if (!skip_value(s, pos, depth + 1)) return false;
      skip_ws(s, pos);
      if (pos >= s.size()) return false;
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == close) {
        ++pos;
        return true;
      }
      return false;
    }
  }
  return skip_number(s, pos);
}

bool is_valid(std::string_view s) {
  size_t pos = 0;
  if (!skip_value(s, pos)) return false;
  skip_ws(s, pos);
  return pos == s.size();
}

std::optional<std::vector<Member>> object_members(std::string_view s) {
  if (!is_valid(s)) return std::nullopt;
  size_t pos = 0;
  skip_ws(s, pos);
  if (s[pos] != '{') return std::nullopt;
  ++pos;
  std::vector<Member> members;
  for (;;) {
    skip_ws(s, pos);
    if (s[pos] == '}') break;
    if (s[pos] == ',') {
      ++pos;
      continue;
    }
    Member m;
    if (!decode_string(s, pos, m.key)) return std::nullopt;
    skip_ws(s, pos);
    ++pos;  // ':' (validated above)
    skip_ws(s, pos);
    size_t start = pos;
    if (s[pos] == '"') {
      m.is_string = true;
      if (!decode_string(s, pos, m.string_value)) return std::nullopt;
    } else if (!skip_value(s, pos)) {
      return std::nullopt;
    }
    m.raw_value = s.substr(start, pos - start);
    members.push_back(std::move(m));
  }
  return members;
}

void append_quoted(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  out.push_back('"');
}

namespace {

void write_compact(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; return;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case boost::json::kind::int64: out += std::to_string(v.get_int64()); return;
    case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); return;
    case boost::json::kind::double_: {
      double d = v.get_double();
      if (!std::isfinite(d)) {
        out += "null";  // not representable in JSON
        return;
      }
      char buf[64];
      auto res = std::to_chars(buf, buf + sizeof buf, d);
      out.append(buf, res.ptr);
      return;
    }
    case boost::json::kind::string: append_quoted(out, v.get_string()); return;
    case boost::json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& item : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        write_compact(out, item);
      }
      out.push_back(']');
      return;
    }
    case boost::json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        append_quoted(out, key);
        out.push_back(':');
        write_compact(out, item);
      }
      out.push_back('}');
      return;
    }
  }
}

}  // namespace

std::string compact_text(const boost::json::value& value) {
  std::string out;
  write_compact(out, value);
  return out;
}

}  // namespace ds4::protocol::json_scan
