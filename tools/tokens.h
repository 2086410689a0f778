// Tokens: how the jkv tool writes keys and values as text (README, "CLI").
//
//   token := ( plain | escape )*
//   plain  := any byte 0x21..0x7e except '\' (0x5c); it stands for itself
//   escape := '\' 'x' HEX HEX     the byte with that value; HEX is 0-9, a-f or A-F
//
// EncodeToken writes every byte outside `plain` as \xHH with lower-case hex, so a token never
// holds a space, a control byte or a byte >= 0x7f, and a line of space-separated tokens splits
// back exactly. The empty byte string is the empty token. DecodeToken is strict: a raw byte
// outside `plain` (a space, a tab, 0xff...), '\' not followed by 'x' and two hex digits, or a
// trailing '\' is InvalidArgument naming the offset. It also accepts upper-case hex and \xHH for
// bytes that could stand for themselves (\x2d for '-'), so a key like "--limit=1" can be given
// as \x2d-limit=1 where a bare one would be read as an option.
//
// Thread-safety: pure functions.
#ifndef JOURNALKV_TOOLS_TOKENS_H_
#define JOURNALKV_TOOLS_TOKENS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace journalkv::tools {

// The token of `bytes` (never fails).
std::string EncodeToken(absl::string_view bytes);

// The bytes a token stands for. InvalidArgument for a bad escape or a raw byte that must be
// escaped; the message names the offset and the byte but never repeats the token.
absl::StatusOr<std::string> DecodeToken(absl::string_view token);

// Splits a protocol line into its fields at every single space (0x20). Two spaces in a row
// enclose an empty field, which stands for the empty token: "put  v" is {"put", "", "v"}.
// The views point into `line`.
std::vector<absl::string_view> SplitFields(absl::string_view line);

// `text` made safe to print on one line: bytes below 0x20 and 0x7f are written \xHH, all
// others are kept. Used for error messages, which may quote paths or input.
std::string OneLine(absl::string_view text);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_TOKENS_H_
