#include "checkpoint/policy.h"

#include <limits>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace journalkv::checkpoint {
namespace {

absl::Status BadPolicy(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "checkpoint policy '", text, "': ", why,
      " (expected threshold:N with N >= 1, async:N/B with 0 <= N < B, or manual)"));
}

bool ParseFrames(absl::string_view text, uint32_t* out) {
  uint64_t v = 0;
  if (text.empty() || !absl::SimpleAtoi(text, &v) || v > std::numeric_limits<uint32_t>::max()) {
    return false;
  }
  for (char c : text) {
    if (c < '0' || c > '9') return false;  // no sign, no spaces
  }
  *out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

absl::string_view PolicyActionName(PolicyAction action) {
  switch (action) {
    case PolicyAction::kNone: return "none";
    case PolicyAction::kCheckpointNow: return "checkpoint_now";
    case PolicyAction::kWakeBackground: return "wake_background";
    case PolicyAction::kBlockUnder: return "block_under";
  }
  return "?";
}

PolicyDecision ThresholdPolicy::AfterCommit(const wal::LogSnapshot& log) {
  // As SQLite: once the log holds N frames, every commit tries until the log restarts.
  if (log.log_frames >= frames_ && log.uncopied > 0) return PolicyDecision::CheckpointNow();
  return PolicyDecision::None();
}

std::string ThresholdPolicy::Name() const { return absl::StrCat("threshold:", frames_); }

PolicyDecision AsyncPolicy::AfterCommit(const wal::LogSnapshot& log) {
  if (log.live_frames >= block_) return PolicyDecision::BlockUnder(block_);
  // async:0/B wakes after every commit; otherwise once N frames wait to be copied.
  if (log.uncopied > 0 && log.uncopied >= wake_) return PolicyDecision::WakeBackground();
  return PolicyDecision::None();
}

std::string AsyncPolicy::Name() const { return absl::StrCat("async:", wake_, "/", block_); }

absl::StatusOr<std::shared_ptr<CheckpointPolicy>> ParseCheckpointPolicy(absl::string_view text) {
  if (text == "manual") return std::make_shared<ManualPolicy>();
  absl::string_view rest = text;
  if (absl::ConsumePrefix(&rest, "threshold:")) {
    uint32_t frames = 0;
    if (!ParseFrames(rest, &frames)) return BadPolicy(text, "N is not a frame count");
    if (frames == 0) return BadPolicy(text, "N must be at least 1 (use manual for never)");
    return std::make_shared<ThresholdPolicy>(frames);
  }
  if (absl::ConsumePrefix(&rest, "async:")) {
    std::vector<absl::string_view> parts = absl::StrSplit(rest, '/');
    uint32_t wake = 0;
    uint32_t block = 0;
    if (parts.size() != 2 || !ParseFrames(parts[0], &wake) || !ParseFrames(parts[1], &block)) {
      return BadPolicy(text, "N and B are not frame counts");
    }
    if (wake >= block) return BadPolicy(text, "N must be below B");
    return std::make_shared<AsyncPolicy>(wake, block);
  }
  return BadPolicy(text, "unknown policy");
}

}  // namespace journalkv::checkpoint
