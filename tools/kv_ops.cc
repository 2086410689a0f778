#include "tools/kv_ops.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "tools/tokens.h"

namespace journalkv::tools {

absl::StatusOr<std::string> DecodeArg(absl::string_view what, absl::string_view token) {
  absl::StatusOr<std::string> bytes = DecodeToken(token);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.status().message()));
  }
  return bytes;
}

absl::StatusOr<uint64_t> ParseNumber(absl::string_view what, absl::string_view text, uint64_t max,
                                     uint64_t min) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": \"", OneLine(text), "\" is not a whole number from ", min, " to ", max));
  };
  if (text.empty() || text.size() > 20) return bad();
  uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (digit > max || n > (max - digit) / 10) return bad();
    n = n * 10 + digit;
  }
  if (n < min) return bad();
  return n;
}

absl::StatusOr<ScanRange> ParseScanRange(std::optional<absl::string_view> from_token,
                                         std::optional<absl::string_view> to_token) {
  ScanRange range;
  if (from_token.has_value()) {
    JKV_ASSIGN_OR_RETURN(range.from, DecodeArg("FROM", *from_token));
  }
  if (to_token.has_value() && !to_token->empty()) {
    JKV_ASSIGN_OR_RETURN(range.to, DecodeArg("TO", *to_token));
  }
  return range;
}

std::string FormatPair(absl::string_view key, absl::string_view value) {
  return absl::StrCat(EncodeToken(key), " ", EncodeToken(value));
}

absl::StatusOr<CheckpointResult> Checkpoint(Db& db, std::optional<absl::string_view> mode) {
  CheckpointMode m = CheckpointMode::kPassive;
  if (mode.has_value()) {
    absl::StatusOr<CheckpointMode> parsed = ParseCheckpointMode(*mode);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown checkpoint mode \"", OneLine(*mode),
                       "\" (expected passive, full, restart or truncate)"));
    }
    m = *parsed;
  }
  return db.Checkpoint(m);
}

std::string FormatCheckpoint(const CheckpointResult& r) {
  return absl::StrCat("log_frames ", r.log_frames, " copied ", r.copied, " backfilled ",
                      r.backfilled, " blocked ", r.blocked ? "yes" : "no");
}

}  // namespace journalkv::tools
