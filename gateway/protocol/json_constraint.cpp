// Schema-constrained JSON, byte by byte. See json_constraint.hpp and docs/json-constraint.md.
#include "gateway/protocol/json_constraint.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <optional>

namespace ds4::protocol {

namespace json = boost::json;

namespace {

// Value kinds a schema accepts, as bits.
enum : unsigned { kObj = 1, kArr = 2, kStr = 4, kNum = 8, kInt = 16, kBool = 32, kNull = 64, kAll = 127 };

const json::object* as_object(const json::value* v) { return v ? v->if_object() : nullptr; }

const json::value* member(const json::value* schema, std::string_view key) {
  const json::object* o = as_object(schema);
  return o ? o->if_contains(key) : nullptr;
}

unsigned kind_bit(std::string_view type) {
  if (type == "object") return kObj;
  if (type == "array") return kArr;
  if (type == "string") return kStr;
  if (type == "number") return kNum | kInt;
  if (type == "integer") return kInt;
  if (type == "boolean") return kBool;
  if (type == "null") return kNull;
  return kAll;  // an unknown type name: not ours to refuse
}

unsigned kinds_of(const json::value* schema) {
  if (!as_object(schema)) return kAll;
  if (const json::value* t = member(schema, "type")) {
    if (t->is_string()) return kind_bit(t->get_string());
    if (t->is_array()) {
      unsigned k = 0;
      for (const json::value& e : t->get_array()) k |= e.is_string() ? kind_bit(e.get_string()) : kAll;
      return k ? k : kAll;
    }
  }
  if (member(schema, "properties") || member(schema, "required") || member(schema, "additionalProperties")) return kObj;
  if (member(schema, "items")) return kArr;
  return kAll;
}

// The bit of the value a first byte starts; 0: none.
unsigned start_kind(char c) {
  if (c == '{') return kObj;
  if (c == '[') return kArr;
  if (c == '"') return kStr;
  if (c == '-' || (c >= '0' && c <= '9')) return kNum | kInt;
  if (c == 't' || c == 'f') return kBool;
  if (c == 'n') return kNull;
  return 0;
}

bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::vector<std::string> enum_spellings(const json::value* schema) {
  std::vector<std::string> out;
  if (const json::value* e = member(schema, "enum"); e && e->is_array())
    for (const json::value& v : e->get_array()) out.push_back(json::serialize(v));
  if (const json::value* c = member(schema, "const")) out.push_back(json::serialize(*c));
  return out;
}

bool has_enum(const json::value* schema) { return member(schema, "enum") || member(schema, "const"); }

// anyOf / oneOf: the first alternative that a value starting with `c` can match; the schema
// itself when it has none; null (anything) when none fits.
const json::value* resolve(const json::value* schema, char c) {
  for (const char* key : {"anyOf", "oneOf"}) {
    const json::value* alts = member(schema, key);
    if (!alts || !alts->is_array()) continue;
    for (const json::value& alt : alts->get_array()) {
      const json::value* a = resolve(&alt, c);
      if (has_enum(a)) {
        for (const std::string& s : enum_spellings(a))
          if (!s.empty() && s[0] == c) return a;
      } else if (kinds_of(a) & start_kind(c)) {
        return a;
      }
    }
    return nullptr;
  }
  return schema;
}

std::optional<size_t> size_member(const json::value* schema, std::string_view key) {
  const json::value* v = member(schema, key);
  if (v && v->is_int64() && v->get_int64() >= 0) return static_cast<size_t>(v->get_int64());
  if (v && v->is_uint64()) return static_cast<size_t>(v->get_uint64());
  return std::nullopt;
}

bool additional_closed(const json::value* schema) {
  const json::value* a = member(schema, "additionalProperties");
  return a && a->is_bool() && !a->get_bool();
}

std::vector<std::string> property_names(const json::value* schema) {
  std::vector<std::string> out;
  if (const json::object* props = as_object(member(schema, "properties")))
    for (const auto& kv : *props) out.emplace_back(kv.key());
  return out;
}

bool seen(const JsonConstraint::Frame& f, std::string_view key) {
  return std::find(f.seen.begin(), f.seen.end(), key) != f.seen.end();
}

bool required_met(const JsonConstraint::Frame& f) {
  const json::value* req = member(f.schema, "required");
  if (!req || !req->is_array()) return true;
  for (const json::value& r : req->get_array())
    if (r.is_string() && !seen(f, r.get_string())) return false;
  return true;
}

// A closed object can take another key only while a declared one is left.
bool key_possible(const JsonConstraint::Frame& f) {
  if (!additional_closed(f.schema)) return true;
  for (const std::string& name : property_names(f.schema))
    if (!seen(f, name)) return true;
  return false;
}

const json::value* property_schema(const JsonConstraint::Frame& f, std::string_view key) {
  if (const json::object* props = as_object(member(f.schema, "properties")))
    if (const json::value* p = props->if_contains(key)) return p;
  const json::value* a = member(f.schema, "additionalProperties");
  return a && a->is_object() ? a : nullptr;
}

bool literal_may_take(const JsonConstraint::Frame& f, char c) {
  const std::string next = f.text + c;
  return std::any_of(f.literals.begin(), f.literals.end(), [&](const std::string& l) { return l.starts_with(next); });
}

bool literal_endable(const JsonConstraint::Frame& f) {
  return std::find(f.literals.begin(), f.literals.end(), f.text) != f.literals.end();
}

// Number states: 0 start, 1 after '-', 2 after a leading 0, 3 integer digits, 4 after '.',
// 5 fraction digits, 6 after 'e', 7 after the exponent sign, 8 exponent digits.
// Integers stop at 18 bytes, so every one fits a signed 64-bit integer in the client's parser.
constexpr size_t kMaxNumber = 32;
constexpr size_t kMaxInteger = 18;

int number_next(const JsonConstraint::Frame& f, char c) {
  const bool digit = c >= '0' && c <= '9';
  if (digit && f.text.size() >= (f.integer ? kMaxInteger : kMaxNumber)) return -1;
  const bool frac = !f.integer;
  switch (f.state) {
    case 0:
      if (c == '-') return 1;
      [[fallthrough]];
    case 1:
      if (c == '0') return 2;
      return digit ? 3 : -1;
    case 2:
      if (c == '.' && frac) return 4;
      return (c == 'e' || c == 'E') && frac ? 6 : -1;
    case 3:
      if (digit) return 3;
      if (c == '.' && frac) return 4;
      return (c == 'e' || c == 'E') && frac ? 6 : -1;
    case 4: return digit ? 5 : -1;
    case 5:
      if (digit) return 5;
      return (c == 'e' || c == 'E') ? 6 : -1;
    case 6:
      if (c == '+' || c == '-') return 7;
      return digit ? 8 : -1;
    case 7:
    case 8: return digit ? 8 : -1;
  }
  return -1;
}

bool number_endable(const JsonConstraint::Frame& f) {
  return f.state == 2 || f.state == 3 || f.state == 5 || f.state == 8;
}

// A byte of a string's text as valid UTF-8 (what a client's JSON parser requires): a
// continuation byte where one is due, else an ASCII byte or a lead byte; false: refused (the
// frame is unchanged then).
bool utf8_step(JsonConstraint::Frame& f, unsigned char c) {
  if (f.utf8_need > 0) {
    if (c < f.utf8_lo || c > f.utf8_hi) return false;
    --f.utf8_need;
    f.utf8_lo = 0x80;
    f.utf8_hi = 0xBF;
    return true;
  }
  if (c < 0x80) return true;
  if (c >= 0xC2 && c <= 0xDF) f.utf8_need = 1;
  else if (c >= 0xE0 && c <= 0xEF) f.utf8_need = 2;
  else if (c >= 0xF0 && c <= 0xF4) f.utf8_need = 3;
  else return false;
  // No overlong forms, no surrogates, nothing past U+10FFFF.
  if (c == 0xE0) f.utf8_lo = 0xA0;
  if (c == 0xED) f.utf8_hi = 0x9F;
  if (c == 0xF0) f.utf8_lo = 0x90;
  if (c == 0xF4) f.utf8_hi = 0x8F;
  return true;
}

bool endable(const JsonConstraint::Frame& f) {
  if (f.kind == JsonConstraint::Kind::Number) return number_endable(f);
  if (f.kind == JsonConstraint::Kind::Literal) return literal_endable(f);
  return false;
}

}  // namespace

JsonConstraint::JsonConstraint(std::shared_ptr<const json::value> schema) : root_(std::move(schema)) {
  stack_.push_back(Frame{Kind::Value, root_.get()});
}

JsonConstraint JsonConstraint::any_object() {
  return JsonConstraint(std::make_shared<const json::value>(json::object{{"type", "object"}}));
}

bool JsonConstraint::step(char c) {
  if (done_ || stack_.empty()) return false;
  if (!is_ws(c))
    for (Frame& f : stack_) f.ws = 0;  // a run of whitespace ends; refused bytes change nothing else
  if (step_frame(c)) return true;
  // A number or literal that may end here ends, and its parent reads the byte.
  if (!endable(stack_.back()) || stack_.size() == 1) return false;
  Frame ended = std::move(stack_.back());
  stack_.pop_back();
  if (step_frame(c)) return true;
  stack_.push_back(std::move(ended));
  return false;
}

bool JsonConstraint::admits(std::string_view bytes) const {
  JsonConstraint probe = *this;
  for (char c : bytes)
    if (!probe.step(c)) return false;
  return true;
}

bool JsonConstraint::complete() const { return done_ || (stack_.size() == 1 && endable(stack_.back())); }

bool JsonConstraint::finished() const {
  if (done_) return true;
  if (stack_.size() != 1 || stack_.back().kind != Kind::Literal || !literal_endable(stack_.back())) return false;
  const Frame& f = stack_.back();
  return std::none_of(f.literals.begin(), f.literals.end(),
                      [&](const std::string& l) { return l.size() > f.text.size() && l.starts_with(f.text); });
}

bool JsonConstraint::in_string() const {
  if (stack_.empty()) return false;
  const Frame& f = stack_.back();
  return f.kind == Kind::String || (f.kind == Kind::Object && (f.state == 2 || f.state == 6)) ||
         (f.kind == Kind::Literal && !f.text.empty() && f.text[0] == '"');
}

// The top frame reads `c`, or refuses it without changing anything.
bool JsonConstraint::step_frame(char c) {
  Frame& f = stack_.back();
  auto close_value = [&] {
    stack_.pop_back();
    if (stack_.empty()) done_ = true;
    return true;
  };
  auto whitespace = [&](Frame& fr) {
    if (fr.ws >= kMaxWhitespace) return false;
    ++fr.ws;
    return true;
  };
  switch (f.kind) {
    case Kind::Value: {
      if (is_ws(c)) return whitespace(f);
      const json::value* schema = resolve(f.schema, c);
      if (schema == nullptr && (member(f.schema, "anyOf") || member(f.schema, "oneOf"))) return false;
      if (has_enum(schema)) {
        Frame lit{Kind::Literal, schema};
        lit.literals = enum_spellings(schema);
        if (!literal_may_take(lit, c)) return false;
        lit.text.push_back(c);
        f = std::move(lit);
        return true;
      }
      const unsigned kinds = kinds_of(schema) & start_kind(c);
      if (!kinds) return false;
      Frame next{Kind::Value, schema};
      if (c == '{') next.kind = Kind::Object;
      else if (c == '[') next.kind = Kind::Array;
      else if (c == '"') next.kind = Kind::String;
      else if (kinds & (kNum | kInt)) {
        next.kind = Kind::Number;
        next.integer = !(kinds & kNum);
        next.state = number_next(next, c);
        next.text.push_back(c);
      } else {
        next.kind = Kind::Literal;
        next.literals = c == 'n' ? std::vector<std::string>{"null"} : std::vector<std::string>{"true", "false"};
        next.text.push_back(c);
      }
      f = std::move(next);
      return true;
    }
    case Kind::Literal:
      if (!literal_may_take(f, c)) return false;
      f.text.push_back(c);
      return true;
    case Kind::Number: {
      const int s = number_next(f, c);
      if (s < 0) return false;
      f.state = s;
      f.text.push_back(c);
      return true;
    }
    case Kind::String: {
      const auto max_len = size_member(f.schema, "maxLength");
      const auto min_len = size_member(f.schema, "minLength");
      if (f.state == 1) {            // after a backslash
        if (c == 'u') f.state = 14;  // four hex digits follow: states 14, 13, 12, 11
        else if (std::string_view("\"\\/bfnrt").find(c) != std::string_view::npos) f.state = 0;
        else return false;
        return true;
      }
      if (f.state >= 11) {
        if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
        f.state = f.state == 11 ? 0 : f.state - 1;
        return true;
      }
      if (f.utf8_need > 0) return utf8_step(f, static_cast<unsigned char>(c));
      if (c == '"') {
        if (min_len && f.count < *min_len) return false;
        return close_value();
      }
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (max_len && f.count >= *max_len) return false;
      if (!utf8_step(f, static_cast<unsigned char>(c))) return false;
      ++f.count;
      if (c == '\\') f.state = 1;
      return true;
    }
    case Kind::Object:
      // States: 0 after '{', 1 after ',', 2 in a key, 6 after a backslash in a key, 3 after the
      // key, 5 after a value (its Value frame is pushed at ':').
      switch (f.state) {
        case 0:
        case 1:
          if (is_ws(c)) return whitespace(f);
          if (c == '}' && f.state == 0 && required_met(f)) return close_value();
          if (c != '"' || !key_possible(f)) return false;
          f.state = 2;
          f.text.clear();
          return true;
        case 2: {
          const bool closed = additional_closed(f.schema);
          if (f.utf8_need > 0) {
            if (closed || !utf8_step(f, static_cast<unsigned char>(c))) return false;
            f.text.push_back(c);
            return true;
          }
          if (c == '"') {
            if (seen(f, f.text)) return false;
            if (closed) {
              const auto names = property_names(f.schema);
              if (std::find(names.begin(), names.end(), f.text) == names.end()) return false;
            }
            f.seen.push_back(f.text);
            f.state = 3;
            return true;
          }
          if (static_cast<unsigned char>(c) < 0x20) return false;
          if (closed) {
            const std::string next = f.text + c;
            bool any = false;
            for (const std::string& name : property_names(f.schema))
              any = any || (!seen(f, name) && name.starts_with(next));
            if (!any) return false;
          } else if (c == '\\') {
            f.state = 6;
          } else if (!utf8_step(f, static_cast<unsigned char>(c))) {
            return false;
          }
          f.text.push_back(c);
          return true;
        }
        case 6:
          if (static_cast<unsigned char>(c) < 0x20) return false;
          f.text.push_back(c);
          f.state = 2;
          return true;
        case 3: {
          if (is_ws(c)) return whitespace(f);
          if (c != ':') return false;
          f.state = 5;
          const json::value* child = property_schema(f, f.seen.back());
          stack_.push_back(Frame{Kind::Value, child});
          return true;
        }
        case 5:
          if (is_ws(c)) return whitespace(f);
          if (c == '}' && required_met(f)) return close_value();
          if (c != ',' || !key_possible(f)) return false;
          f.state = 1;
          return true;
      }
      return false;
    case Kind::Array: {
      // States: 0 after '[', 1 after ',', 2 after an item.
      const auto min_items = size_member(f.schema, "minItems");
      const auto max_items = size_member(f.schema, "maxItems");
      if (is_ws(c)) return whitespace(f);
      if (f.state == 2) {
        if (c == ']' && (!min_items || f.count >= *min_items)) return close_value();
        if (c != ',' || (max_items && f.count >= *max_items)) return false;
        f.state = 1;
        return true;
      }
      if (c == ']' && f.state == 0 && (!min_items || *min_items == 0)) return close_value();
      if (f.state == 0 && max_items && *max_items == 0) return false;
      const json::value* items = member(f.schema, "items");
      stack_.push_back(Frame{Kind::Value, items && items->is_object() ? items : nullptr});
      if (!step_frame(c)) {
        stack_.pop_back();
        return false;
      }
      Frame& parent = stack_[stack_.size() - 2];
      // `f` may dangle after the push; the parent is the array frame.
      parent.state = 2;
      ++parent.count;
      return true;
    }
  }
  return false;
}

}  // namespace ds4::protocol
