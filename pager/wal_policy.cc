// WalStrategy's checkpoints (wal_strategy.h): Db::Checkpoint, the checkpoint policy asked
// after each commit (checkpoint/policy.h), and the background checkpointer's steps
// (checkpoint/background.h).
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/wal_strategy.h"
#include "vfs/sync.h"

namespace journalkv::pager {
namespace {

using wal::CheckpointMode;
using wal::CheckpointResult;
using checkpoint::PolicyAction;
using checkpoint::PolicyDecision;

// How often a writer blocked by the policy, and the checkpointer serving it, look again at the
// log when no step of this process has ended (another process's checkpointer may be the one
// making progress, or readers may have moved on).
constexpr absl::Duration kBlockedPoll = absl::Milliseconds(1);

}  // namespace

void WalStrategy::StartPolicy() {
  policy_ = core_->options_.checkpoint_policy;
  if (policy_ == nullptr) {
    policy_ = *checkpoint::ParseCheckpointPolicy(checkpoint::kDefaultCheckpointPolicy);
  }
  background_ = std::make_unique<checkpoint::BackgroundCheckpointer>(
      [this](const std::atomic<bool>& stop) { return BackgroundStep(stop); }, kBlockedPoll);
  base::MutexLock lock(&core_->mu_);
  policy_name_ = policy_->Name();
}

void WalStrategy::DeferError(const absl::Status& status) {
  base::MutexLock lock(&core_->mu_);
  core_->counters_.AddOwned(base::Counter::kPolicyErrors);
  policy_last_error_ = status.ToString();
  if (absl::IsResourceExhausted(status) || absl::IsUnavailable(status)) {  // full disk, busy
    if (exhausted_deferred_) return;  // told once already; counted above
    exhausted_deferred_ = true;
  }
  if (deferred_.ok()) {
    deferred_ = absl::Status(status.code(),
                             absl::StrCat("checkpoint after an earlier commit: ", status.message()));
  }
  has_deferred_.store(true, std::memory_order_release);
}

absl::Status WalStrategy::TakeDeferredError() {
  // The common case costs two atomic loads: nothing to report.
  if (background_ != nullptr && background_->has_error()) return background_->TakeError();
  if (!has_deferred_.load(std::memory_order_acquire)) return absl::OkStatus();
  base::MutexLock lock(&core_->mu_);
  has_deferred_.store(false, std::memory_order_release);
  return std::exchange(deferred_, absl::OkStatus());
}

absl::StatusOr<CheckpointResult> WalStrategy::Checkpoint(CheckpointMode mode) {
  JKV_RETURN_IF_ERROR(TakeDeferredError());
  return RunCheckpoint(mode, nullptr);
}

absl::StatusOr<CheckpointResult> WalStrategy::RunCheckpoint(CheckpointMode mode,
                                                      const std::atomic<bool>* stop, bool defer) {
  absl::StatusOr<CheckpointResult> r;
  JKV_RETURN_IF_ERROR(core_->sticky_error());
  if (mode == CheckpointMode::kPassive) {
    r = wal_->Checkpoint(mode, stop, defer);
  } else if (wal_->wal2()) {
    r = RunWal2Checkpoint(mode);  // V4: the writer role only for the switches
  } else {
    // WAL's FULL, RESTART and TRUNCATE keep writers out while they run: this handle's writer
    // role and the WRITE lock.
    {
      base::MutexLock lock(&core_->mu_);
      JKV_ASSIGN_OR_RETURN(wal::WalSnapshot snapshot, AcquireWriterLocked(core_->Deadline()));
      (void)snapshot;
    }
    r = wal_->Checkpoint(mode, stop);
    ReleaseWriter();
  }
  if (!r.ok() && vfs::IsSyncFailure(r.status())) {
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(r.status());  // I7
  }
  if (r.ok() && !r->stopped) {
    last_checkpoint_ns_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
    base::MutexLock lock(&core_->mu_);
    exhausted_deferred_ = false;
  }
  return r;
}

absl::StatusOr<CheckpointResult> WalStrategy::RunWal2Checkpoint(CheckpointMode mode) {
  // V4: the phases one at a time, the writer role (this handle's, and WRITE below it) taken
  // here for the switches only, never for a copy. The pager owns the writer role, so it takes
  // and gives it back itself: the WAL layer never calls up for it.
  JKV_ASSIGN_OR_RETURN(wal::Wal2Checkpoint c, wal_->StartWal2Checkpoint(mode));
  while (!c.done()) {
    if (!c.needs_writer()) {
      JKV_RETURN_IF_ERROR(wal_->Wal2CheckpointStep(c));
      continue;
    }
    {
      base::MutexLock lock(&core_->mu_);
      JKV_RETURN_IF_ERROR(AcquireWriterLocked(core_->Deadline()).status());
    }
    const absl::Status step = wal_->Wal2CheckpointStep(c);
    ReleaseWriter();
    JKV_RETURN_IF_ERROR(step);
  }
  return c.result;
}

absl::StatusOr<bool> WalStrategy::BackgroundStep(const std::atomic<bool>& stop) {
  // A handle in its error state touches no file until it is reopened (I7).
  if (!core_->sticky_error().ok()) return false;
  // At FULL and EXTRA a step that copies something leaves it unsynced and unpublished (the
  // frames are durable already, W1), so a checkpointer woken after every commit flushes the
  // database once per batch: the step that finds nothing new, or the one a blocked writer
  // asks for, syncs and publishes it all (CheckpointFiles::publish, wal/checkpoint_copy.h C3).
  const bool defer = !background_->writers_waiting();
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, RunCheckpoint(CheckpointMode::kPassive, &stop, defer));
  if (r.copied > 0 && r.backfilled < r.log_frames) wal::CallWalHook("background:stepped");
  // Commits that arrive meanwhile wake the checkpointer again; a writer blocked by the policy
  // makes it poll. An unpublished copy asks for one more step, which publishes it when nothing
  // new has come.
  return r.copied > 0 && r.backfilled < r.log_frames && !r.stopped && defer;
}

void WalStrategy::AfterCommit(uint32_t commit_frames) {
  uint32_t total_frames = 0;  // WAL2: both logs (the policy sees the non-current one)
  wal::LogSnapshot log = wal_->PolicyView(&total_frames);
  log.commit_frames = commit_frames;
  if (const int64_t last = last_checkpoint_ns_.load(std::memory_order_relaxed); last != 0) {
    log.since_last_checkpoint = absl::Now() - absl::FromUnixNanos(last);
  }
  {
    base::MutexLock lock(&core_->mu_);
    core_->counters_.MaxOwned(base::Counter::kMaxLogFrames, total_frames);
  }
  const PolicyDecision decision = policy_->AfterCommit(log);
  switch (decision.action) {
    case PolicyAction::kNone:
      return;
    case PolicyAction::kCheckpointNow: {
      absl::StatusOr<CheckpointResult> r = RunCheckpoint(decision.mode, nullptr);
      {
        base::MutexLock lock(&core_->mu_);
        core_->counters_.AddOwned(base::Counter::kPolicyCheckpoints);
      }
      // The commit stands; a failed sync already put the handle in its error state.
      if (!r.ok() && !vfs::IsSyncFailure(r.status())) DeferError(r.status());
      return;
    }
    case PolicyAction::kWakeBackground:
      background_->Wake();
      return;
    case PolicyAction::kBlockUnder:
      break;
  }
  {
    base::MutexLock lock(&core_->mu_);
    if (IsReadingThreadLocked(std::this_thread::get_id())) {
      // This thread's own read transaction may be what holds the checkpoint back: waiting
      // would wait for itself.
      background_->Wake();
      return;
    }
  }
  wal::CallWalHook("policy:blocked");
  const absl::Time start = absl::Now();
  const uint32_t limit = decision.limit;
  const bool under = background_->WaitUntil(
      [this, limit] { return wal_->Progress().live_frames < limit; }, start + core_->options_.busy_timeout);
  const absl::Duration blocked = absl::Now() - start;
  wal::CallWalHook("policy:released");
  base::MutexLock lock(&core_->mu_);
  core_->counters_.AddOwned(base::Counter::kBlockedCommits);
  if (!under) core_->counters_.AddOwned(base::Counter::kBlockedTimeouts);
  core_->counters_.AddDurationOwned(base::Counter::kBlockedWriterTime, blocked);
}

}  // namespace journalkv::pager
