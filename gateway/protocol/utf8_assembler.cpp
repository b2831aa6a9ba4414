// UTF-8 assembly for byte-level token streams. See utf8_assembler.hpp for the contract.
//
// Validation follows the well-formed byte sequence table of Unicode (ch. 3, table 3-7):
//   00..7F | C2..DF 80..BF | E0 A0..BF 80..BF | E1..EC 80..BF 80..BF | ED 80..9F 80..BF
//   | EE..EF 80..BF 80..BF | F0 90..BF 80..BF 80..BF | F1..F3 80..BF x3 | F4 80..8F 80..BF x2
// A maximal subpart is the longest prefix of a well-formed sequence; each maximal subpart that
// cannot be completed (and each byte that starts no sequence) becomes one U+FFFD. Because this
// decision depends only on bytes already seen, splitting the input anywhere gives the same
// output as feeding it whole.
#include "gateway/protocol/utf8_assembler.hpp"

namespace ds4::protocol {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Total length of the sequence a lead byte starts; 0 for a byte that can never lead.
int sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Valid range of the byte following `lead` (the second byte carries the extra constraints).
bool second_byte_ok(unsigned char lead, unsigned char b) {
  switch (lead) {
    case 0xE0: return b >= 0xA0 && b <= 0xBF;
    case 0xED: return b >= 0x80 && b <= 0x9F;
    case 0xF0: return b >= 0x90 && b <= 0xBF;
    case 0xF4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

bool continuation(unsigned char b) { return b >= 0x80 && b <= 0xBF; }

// Consumes as much of `in` as can be decided. Returns the number of bytes consumed; appends
// decided text to `out`. Stops (without consuming) at an incomplete but still valid tail.
size_t assemble(std::string_view in, std::string& out, bool at_end) {
  size_t i = 0;
  while (i < in.size()) {
    auto lead = static_cast<unsigned char>(in[i]);
    int need = sequence_length(lead);
    if (need == 1) {
      out.push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    if (need == 0) {
      out.append(kReplacement);
      ++i;
      continue;
    }
    // Length of the valid prefix (maximal subpart) available in `in`.
    size_t valid = 1;
    while (valid < static_cast<size_t>(need) && i + valid < in.size()) {
      auto b = static_cast<unsigned char>(in[i + valid]);
      bool ok = valid == 1 ? second_byte_ok(lead, b) : continuation(b);
      if (!ok) break;
      ++valid;
    }
    if (valid == static_cast<size_t>(need)) {
      out.append(in.substr(i, valid));
      i += valid;
    } else if (i + valid == in.size() && !at_end) {
      break;  // could still complete: hold it
    } else {
      out.append(kReplacement);  // one U+FFFD for the maximal subpart
      i += valid;
    }
  }
  return i;
}

}  // namespace

std::string Utf8Assembler::push(std::string_view bytes) {
  std::string out;
  if (held_.empty()) {
    size_t used = assemble(bytes, out, false);
    held_.assign(bytes.substr(used));
    return out;
  }
  held_.append(bytes);
  size_t used = assemble(held_, out, false);
  held_.erase(0, used);
  return out;
}

std::string Utf8Assembler::flush() {
  std::string out;
  assemble(held_, out, true);
  held_.clear();
  return out;
}

}  // namespace ds4::protocol
