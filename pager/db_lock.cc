#include "pager/db_lock.h"

#include "base/status_macros.h"

namespace journalkv::pager {

using vfs::LockMode;

absl::StatusOr<bool> DbLock::TryShared() {
  // SHARED first, then a look at PENDING (two system calls, where taking PENDING shared around
  // the SHARED lock takes three). The SHARED range alone is what keeps a writer from writing;
  // PENDING only keeps new readers from starving a writer that waits for old ones to drain.
  JKV_ASSIGN_OR_RETURN(bool shared, file_->TryLock(kSharedFirst, kSharedSize, LockMode::kShared));
  if (!shared) return false;
  absl::StatusOr<bool> pending_free = file_->CanLock(kPendingByte, 1, LockMode::kShared);
  if (!pending_free.ok() || !*pending_free) {
    JKV_RETURN_IF_ERROR(file_->Unlock(kSharedFirst, kSharedSize));
    return pending_free;
  }
  level_ = LockLevel::kShared;
  return true;
}

absl::StatusOr<bool> DbLock::TryReserved() {
  JKV_ASSIGN_OR_RETURN(bool ok, file_->TryLock(kReservedByte, 1, LockMode::kExclusive));
  if (ok) level_ = LockLevel::kReserved;
  return ok;
}

absl::StatusOr<bool> DbLock::TryExclusive() {
  if (!pending_held_) {
    // No reader in the way (the usual case): PENDING, RESERVED (ours already) and the SHARED
    // range are contiguous, so one call takes them all.
    JKV_ASSIGN_OR_RETURN(bool all, file_->TryLock(kPendingByte, kSharedSize + 2,
                                                  LockMode::kExclusive));
    if (all) {
      pending_held_ = true;
      level_ = LockLevel::kExclusive;
      return true;
    }
    JKV_ASSIGN_OR_RETURN(bool pending, file_->TryLock(kPendingByte, 1, LockMode::kExclusive));
    if (!pending) return false;
    pending_held_ = true;
  }
  JKV_ASSIGN_OR_RETURN(bool ok, file_->TryLock(kSharedFirst, kSharedSize, LockMode::kExclusive));
  if (ok) level_ = LockLevel::kExclusive;
  return ok;
}

absl::StatusOr<bool> DbLock::WriterPending() {
  JKV_ASSIGN_OR_RETURN(bool free, file_->CanLock(kPendingByte, 1, LockMode::kShared));
  return !free;
}

absl::StatusOr<bool> DbLock::OtherWritersWaiting() {
  // This connection's own WAITING lock never conflicts with its own query.
  JKV_ASSIGN_OR_RETURN(bool free, file_->CanLock(kWaitingByte, 1, LockMode::kExclusive));
  return !free;
}

absl::Status DbLock::SetWaiting(bool waiting) {
  if (waiting == waiting_) return absl::OkStatus();
  if (waiting) {
    JKV_ASSIGN_OR_RETURN(bool ok, file_->TryLock(kWaitingByte, 1, LockMode::kShared));
    if (!ok) return absl::InternalError("the writer-waiting lock byte is held exclusively");
  } else {
    JKV_RETURN_IF_ERROR(file_->Unlock(kWaitingByte, 1));
  }
  waiting_ = waiting;
  return absl::OkStatus();
}

absl::Status DbLock::DropPending() {
  if (!pending_held_) return absl::OkStatus();
  pending_held_ = false;
  return file_->Unlock(kPendingByte, 1);
}

absl::Status DbLock::DowngradeToShared() {
  if (level_ == LockLevel::kExclusive) {
    JKV_ASSIGN_OR_RETURN(bool ok, file_->TryLock(kSharedFirst, kSharedSize, LockMode::kShared));
    if (!ok) return absl::InternalError("downgrading the database lock failed");
  }
  if (level_ >= LockLevel::kReserved) {  // PENDING is only ever held with RESERVED
    JKV_RETURN_IF_ERROR(file_->Unlock(kPendingByte, 2));  // PENDING and RESERVED
    pending_held_ = false;
  }
  if (level_ != LockLevel::kNone) level_ = LockLevel::kShared;
  return absl::OkStatus();
}

absl::Status DbLock::DowngradeToReserved() {
  if (level_ != LockLevel::kExclusive) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(bool ok, file_->TryLock(kSharedFirst, kSharedSize, LockMode::kShared));
  if (!ok) return absl::InternalError("downgrading the database lock to RESERVED failed");
  JKV_RETURN_IF_ERROR(file_->Unlock(kPendingByte, 1));
  pending_held_ = false;
  level_ = LockLevel::kReserved;
  return absl::OkStatus();
}

absl::Status DbLock::Release() {
  if (level_ == LockLevel::kNone && !pending_held_) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(file_->Unlock(kPendingByte, kSharedSize + 2));
  level_ = LockLevel::kNone;
  pending_held_ = false;
  return absl::OkStatus();
}

absl::StatusOr<bool> DbLock::TryRollbackOpen() {
  return file_->TryLock(kRollbackOpenByte, 1, LockMode::kShared);
}

absl::StatusOr<bool> DbLock::TrySwitchFromRollback() {
  return file_->TryLock(kRollbackOpenByte, 1, LockMode::kExclusive);
}

absl::Status DbLock::ReleaseRollbackOpen() { return file_->Unlock(kRollbackOpenByte, 1); }

absl::StatusOr<bool> DbLock::TryAtomicOpen() {
  return file_->TryLock(kAtomicOpenByte, 1, LockMode::kShared);
}

absl::StatusOr<bool> DbLock::TrySwitchFromAtomic() {
  return file_->TryLock(kAtomicOpenByte, 1, LockMode::kExclusive);
}

absl::Status DbLock::ReleaseAtomicOpen() { return file_->Unlock(kAtomicOpenByte, 1); }

}  // namespace journalkv::pager
