#include "tools/tokens.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace journalkv::tools {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

bool IsPlain(uint8_t c) { return c >= 0x21 && c <= 0x7e && c != '\\'; }

void AppendEscape(uint8_t c, std::string* out) {
  out->push_back('\\');
  out->push_back('x');
  out->push_back(kHexDigits[c >> 4]);
  out->push_back(kHexDigits[c & 0xf]);
}

// The value of one hex digit, or -1.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// How a byte is shown in an error message: itself when plain, else 0xHH.
std::string Describe(uint8_t c) {
  if (IsPlain(c)) return absl::StrCat("'", std::string(1, static_cast<char>(c)), "'");
  return absl::StrCat("0x", std::string{kHexDigits[c >> 4], kHexDigits[c & 0xf]});
}

// Decodes the escape that starts at token[i] (a backslash) and returns its byte.
absl::StatusOr<uint8_t> DecodeEscape(absl::string_view token, size_t i) {
  if (i + 1 == token.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad escape at offset ", i, ": token ends with '\\' (write \\x5c)"));
  }
  if (token[i + 1] != 'x') {
    return absl::InvalidArgumentError(
        absl::StrCat("bad escape at offset ", i, ": '\\' followed by ",
                     Describe(static_cast<uint8_t>(token[i + 1])),
                     " (only \\xHH escapes exist; write a backslash as \\x5c)"));
  }
  const int hi = i + 2 < token.size() ? HexValue(token[i + 2]) : -1;
  const int lo = i + 3 < token.size() ? HexValue(token[i + 3]) : -1;
  if (hi < 0 || lo < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad escape at offset ", i, ": \\x must be followed by two hex digits"));
  }
  return static_cast<uint8_t>(hi * 16 + lo);
}

}  // namespace

std::string EncodeToken(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (char ch : bytes) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (IsPlain(c)) {
      out.push_back(ch);
    } else {
      AppendEscape(c, &out);
    }
  }
  return out;
}

absl::StatusOr<std::string> DecodeToken(absl::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (size_t i = 0; i < token.size();) {
    const uint8_t c = static_cast<uint8_t>(token[i]);
    if (c == '\\') {
      absl::StatusOr<uint8_t> byte = DecodeEscape(token, i);
      if (!byte.ok()) return byte.status();
      out.push_back(static_cast<char>(*byte));
      i += 4;
    } else if (IsPlain(c)) {
      // A run of plain bytes in one append (jkv load decodes every key and value).
      size_t end = i + 1;
      while (end < token.size() && IsPlain(static_cast<uint8_t>(token[end]))) ++end;
      out.append(token.data() + i, end - i);
      i = end;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("byte ", Describe(c), " at offset ", i, " must be escaped as \\x",
                       std::string{kHexDigits[c >> 4], kHexDigits[c & 0xf]}));
    }
  }
  return out;
}

std::vector<absl::string_view> SplitFields(absl::string_view line) {
  return absl::StrSplit(line, ' ');
}

std::string OneLine(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const uint8_t c = static_cast<uint8_t>(ch);
    if (c < 0x20 || c == 0x7f) {
      AppendEscape(c, &out);
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

}  // namespace journalkv::tools
