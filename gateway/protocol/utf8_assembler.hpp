// Utf8Assembler: byte-level BPE tokens can end in the middle of a UTF-8 character; clients must
// only ever see complete, valid UTF-8. Bytes go in, and out comes the longest valid prefix; an
// incomplete but still possibly valid tail (at most 3 bytes) is held for the next push.
// Bytes that can never become valid UTF-8 (stray continuation bytes, overlong forms, surrogates,
// code points above U+10FFFF, a sequence cut by a non-continuation byte) are replaced by U+FFFD,
// one per maximal invalid subpart (the Unicode "substitution of maximal subparts" practice), so
// the result does not depend on where the input was split. flush() ends the stream: a held
// incomplete tail becomes one U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace ds4::protocol {

class Utf8Assembler {
 public:
  std::string push(std::string_view bytes);
  std::string flush();
  size_t pending() const { return held_.size(); }

 private:
  std::string held_;
};

}  // namespace ds4::protocol
