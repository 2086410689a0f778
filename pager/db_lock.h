// The locks on the database file in rollback-journal modes, in the style of SQLite's: byte-range
// locks on bytes far past any page a small database uses (the ranges are only advisory, so a
// database larger than 1 GiB simply has pages there).
//
//   level      | held ranges                         | meaning
//   -----------+-------------------------------------+-----------------------------------------
//   kNone      | -                                   |
//   kShared    | SHARED range: shared                | reading; the file will not change
//   kReserved  | + RESERVED byte: exclusive          | the one writer; readers still welcome
//   kExclusive | + PENDING byte and SHARED range:    | writing the database file; PENDING keeps
//              |   exclusive                         | new readers out while old ones drain
//
// A reader that finds the PENDING byte held right after taking SHARED drops SHARED again, so a
// writer that holds PENDING is not starved by a stream of new readers.
//
// Writers that wait for RESERVED hold the WAITING byte shared while they wait (it is outside
// the ranges above and never held exclusively; only asked about). A writer that starts a
// transaction and finds it held by another connection lets the waiters go first (it waits one
// busy sleep before it tries), so a connection committing back to back does not starve writers
// of other connections.
//
// Each method makes one attempt and never sleeps: the pager retries until its busy timeout.
// Thread-safety: not thread-safe; the pager calls it under its mutex.
#ifndef JOURNALKV_PAGER_DB_LOCK_H_
#define JOURNALKV_PAGER_DB_LOCK_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "vfs/vfs.h"

namespace journalkv::pager {

enum class LockLevel { kNone = 0, kShared = 1, kReserved = 2, kExclusive = 3 };

inline constexpr uint64_t kPendingByte = 0x40000000;
inline constexpr uint64_t kReservedByte = kPendingByte + 1;
inline constexpr uint64_t kSharedFirst = kPendingByte + 2;
inline constexpr uint64_t kSharedSize = 510;
inline constexpr uint64_t kWaitingByte = kSharedFirst + kSharedSize;
// WAL: held shared for their life by read-only connections that keep a private index (they may
// not write -shm); checkpoints and log restarts wait while anyone holds it (wal/wal_connection.h).
inline constexpr uint64_t kPrivateReaderByte = kWaitingByte + 1;
// Rollback modes: held shared for their life by connections in a rollback-journal mode (taken
// before they read the header), so that a connection that would switch the database to a WAL
// mode, which takes it exclusively for the switch without waiting, finds them and refuses: a
// rollback-mode connection cannot follow the database into a WAL mode. (WAL connections are
// found by their SHARED lock, which they hold for their life; WalFamily()'s LeaveLocked,
// pager/wal_family.cc.)
inline constexpr uint64_t kRollbackOpenByte = kPrivateReaderByte + 1;
// Atomic mode: held shared for their life by connections in journal mode atomic (taken before
// they read the header, beside kRollbackOpenByte, which they hold too), so that a connection
// that would switch the database out of atomic mode, which takes it exclusively for the switch
// without waiting, finds them and refuses (pager/atomic_strategy.cc, AtomicFamily()).
inline constexpr uint64_t kAtomicOpenByte = kRollbackOpenByte + 1;

class DbLock {
 public:
  explicit DbLock(vfs::File* file) : file_(file) {}

  LockLevel level() const { return level_; }

  // kNone -> kShared. False when a writer holds PENDING or EXCLUSIVE.
  absl::StatusOr<bool> TryShared();
  // kShared -> kReserved. False when another connection is the writer.
  absl::StatusOr<bool> TryReserved();
  // kReserved -> kExclusive. Takes PENDING (kept even when this returns false, so that new
  // readers stay out while the caller retries), then the SHARED range exclusively; one system
  // call when no other connection holds a lock there.
  absl::StatusOr<bool> TryExclusive();
  // True when another connection holds PENDING or EXCLUSIVE (a reader should wait).
  absl::StatusOr<bool> WriterPending();
  // True when another connection is waiting for RESERVED (holds the WAITING byte).
  absl::StatusOr<bool> OtherWritersWaiting();
  // Marks this connection as a waiting writer (WAITING shared), or no longer.
  absl::Status SetWaiting(bool waiting);
  bool waiting() const { return waiting_; }
  // Any level -> kShared (drops RESERVED and PENDING).
  absl::Status DowngradeToShared();
  // kExclusive -> kReserved (the SHARED range back to shared, PENDING dropped): a commit
  // across databases that found another participant busy (atomic_across.h, Y6).
  absl::Status DowngradeToReserved();
  // Gives up a PENDING lock taken by a TryExclusive that did not succeed.
  absl::Status DropPending();
  // Any level -> kNone.
  absl::Status Release();

  // The ROLLBACK-OPEN byte (kRollbackOpenByte), apart from the levels above: shared by a
  // rollback-mode connection for its life (false while a switch to a WAL mode holds it), or
  // exclusive for a switch to a WAL mode (false while any rollback-mode connection is open).
  absl::StatusOr<bool> TryRollbackOpen();
  absl::StatusOr<bool> TrySwitchFromRollback();
  absl::Status ReleaseRollbackOpen();
  // The ATOMIC-OPEN byte (kAtomicOpenByte), likewise: shared by an atomic-mode connection for
  // its life (false while a switch out of atomic mode holds it), or exclusive for a switch out
  // of atomic mode (false while any atomic-mode connection is open).
  absl::StatusOr<bool> TryAtomicOpen();
  absl::StatusOr<bool> TrySwitchFromAtomic();
  absl::Status ReleaseAtomicOpen();

 private:
  vfs::File* const file_;
  LockLevel level_ = LockLevel::kNone;
  bool pending_held_ = false;
  bool waiting_ = false;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_DB_LOCK_H_
