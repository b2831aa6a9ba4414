// JsonConstraint: which bytes may come next in a JSON value that must match a JSON schema, so
// tool-call arguments and `response_format` are enforced on the sampled tokens.
//
// Fed one byte at a time (step()); a byte that could not start or continue any accepted value is
// refused and changes nothing. complete(): the bytes so far are a whole accepted value (a number
// or a literal may still go on). finished(): complete and nothing more can follow. No schema
// (null) is any JSON value. Why, and which schema features are enforced (whitespace runs are
// bounded by kMaxWhitespace): docs/json-constraint.md §why, §features.
#pragma once

#include <boost/json/value.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ds4::protocol {

class JsonConstraint {
 public:
  static constexpr size_t kMaxWhitespace = 64;

  // `schema` may be null (any JSON value); it is kept alive by the constraint.
  explicit JsonConstraint(std::shared_ptr<const boost::json::value> schema = nullptr);
  // Any JSON object (response_format json_object).
  static JsonConstraint any_object();

  bool step(char c);                          // false: refused, state unchanged
  bool admits(std::string_view bytes) const;  // every byte in turn would be taken
  bool complete() const;
  bool finished() const;
  bool in_string() const;  // inside a string value or a key

  // One open value. Schemas point into root_ (null: any value).
  enum class Kind { Value, Object, Array, String, Number, Literal };
  struct Frame {
    Kind kind = Kind::Value;
    const boost::json::value* schema = nullptr;
    int state = 0;                      // per kind, see json_constraint.cpp
    size_t count = 0;                   // items (Array), code points (String)
    size_t ws = 0;                      // whitespace bytes in a row
    std::string text;                   // key being read (Object), number so far, literal so far
    std::vector<std::string> seen;      // keys given (Object)
    std::vector<std::string> literals;  // the accepted spellings (Literal)
    bool integer = false;               // Number: no fraction or exponent
    bool key = false;                   // String: an object key (Object reads its own)
    // UTF-8 inside a string or key: continuation bytes still due, and the range of the next.
    int utf8_need = 0;
    unsigned char utf8_lo = 0x80, utf8_hi = 0xBF;
  };

 private:
  bool step_frame(char c);
  std::shared_ptr<const boost::json::value> root_;
  std::vector<Frame> stack_;
  bool done_ = false;
};

}  // namespace ds4::protocol
