// Pieces shared by jkv's one-shot commands (commands.h) and its shell (shell.h): decoding an
// argument token, parsing numbers, key ranges and their scan, and the checkpoint command, which
// needs journal mode wal or wal2 (the engine refuses it in the rollback modes).
//
// Thread-safety: functions only; an Iterator is used by one thread at a time.
#ifndef JOURNALKV_TOOLS_KV_OPS_H_
#define JOURNALKV_TOOLS_KV_OPS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/db.h"
#include "engine/iterator.h"

namespace journalkv::tools {

// DecodeToken (tokens.h) with `what` ("key", "value", ...) in front of the error message.
absl::StatusOr<std::string> DecodeArg(absl::string_view what, absl::string_view token);

// A decimal number without sign or spaces, at most `max`. InvalidArgument naming `what`.
absl::StatusOr<uint64_t> ParseNumber(absl::string_view what, absl::string_view text, uint64_t max,
                                     uint64_t min = 0);

// The keys FROM <= key < TO, at most `limit` of them, in key (memcmp) order.
struct ScanRange {
  std::string from;               // inclusive; "" starts at the first key
  std::optional<std::string> to;  // exclusive; nullopt runs to the last key
  std::optional<uint64_t> limit;  // nullopt: no limit
};

// Builds a range from the FROM and TO tokens as given (either may be absent). An empty TO
// token means "no upper bound": the empty key is the smallest, so as an exclusive bound it
// would select nothing.
absl::StatusOr<ScanRange> ParseScanRange(std::optional<absl::string_view> from_token,
                                         std::optional<absl::string_view> to_token);

// Calls fn(key, value) for every pair of `range`, in order, with one Scan of `txn` (a
// ReadTransaction or WriteTransaction: so that `jkv --record` records it as one scan with its
// bounds and limit). Returns the scan's first error (a damaged page); pairs before it have
// been passed to fn.
template <typename Txn>
absl::Status ForEachInRange(
    Txn& txn, const ScanRange& range,
    absl::FunctionRef<void(absl::string_view key, absl::string_view value)> fn) {
  IteratorOptions bounds;
  bounds.upper_bound = range.to;
  return txn
      .Scan(range.from, range.limit.value_or(UINT64_MAX),
            [&](absl::string_view k, absl::string_view v) {
              fn(k, v);
              return true;
            },
            bounds)
      .status();
}

// "K V": the tokens of a pair, as scan, dump and the shell print it and load reads it.
std::string FormatPair(absl::string_view key, absl::string_view value);

// The checkpoint command. A mode other than passive, full, restart or truncate is
// InvalidArgument; in a rollback mode a valid one (or none) is FailedPrecondition, because
// checkpoints need journal mode wal or wal2.
// Runs `checkpoint [MODE]` (passive when no mode is given).
absl::StatusOr<CheckpointResult> Checkpoint(Db& db, std::optional<absl::string_view> mode);
// "log_frames N copied N backfilled N blocked yes|no".
std::string FormatCheckpoint(const CheckpointResult& result);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_KV_OPS_H_
