// WalConnection's life: opening the -shm and joining the wal-index (or making it: alone, on
// the heap, or for a full disk), claiming a reader slot, the test hooks, the stats, and the
// close of the last connection (W10). The reader is wal_reader.cc (its role: reader_pins.h), the
// writer wal_writer.cc (writer.h), rebuilding the index index_recovery.cc, the
// private index private_index.cc and checkpoints wal_checkpoint.cc; wal_connection.h has the
// states and invariants they keep.
#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;
using internal::Sleep;

namespace {

std::atomic<WalHook> wal_hook{nullptr};
std::atomic<uint32_t> first_generation{0};
std::atomic<uint32_t> restart_through_pending_frames{internal::kRestartThroughPendingFrames};
std::atomic<int64_t> min_flush_wait_ns{absl::ToInt64Nanoseconds(internal::kMinFlushWait)};

}  // namespace

absl::Duration internal::FlushWait(absl::Duration busy_timeout) {
  return std::max(busy_timeout, absl::Nanoseconds(min_flush_wait_ns.load(std::memory_order_relaxed)));
}

void SetMinFlushWaitForTesting(absl::Duration wait) {
  min_flush_wait_ns.store(absl::ToInt64Nanoseconds(wait), std::memory_order_relaxed);
}

uint32_t internal::FirstGeneration() { return first_generation.load(std::memory_order_relaxed); }
uint32_t internal::RestartThroughPendingFrames() {
  return restart_through_pending_frames.load(std::memory_order_relaxed);
}

// Every wait for another connection passes the hook point "wait", where a schedule explorer
// runs someone else.
void internal::Sleep(base::Backoff& wait) {
  CallWalHook("wait");
  wait.Sleep();
}

uint64_t internal::RandomId() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

void CallWalHook(const char* point) {
  if (WalHook h = wal_hook.load(std::memory_order_relaxed)) h(point);
}

void SetWalHookForTesting(WalHook hook) { wal_hook.store(hook, std::memory_order_relaxed); }

void SetRestartThroughPendingFramesForTesting(uint32_t frames) {
  restart_through_pending_frames.store(
      frames == 0 ? internal::kRestartThroughPendingFrames : frames, std::memory_order_relaxed);
}

void SetFirstGenerationForTesting(uint32_t seq) {
  first_generation.store(seq & 0x7fffffffu, std::memory_order_relaxed);
}

WalConnection::WalConnection(vfs::FileSystem* fs, std::string db_path, vfs::File* db_file,
                         uint32_t page_size, const WalOptions& options, base::Mutex* pin_mu)
    : fs_(fs),
      db_path_(std::move(db_path)),
      wal2_(options.wal2),
      nlogs_(wal2_ ? 2 : 1),
      log_paths_{db_path_ + "-wal", db_path_ + "-wal2"},
      wal_path_(log_paths_[0]),
      shm_path_(db_path_ + "-shm"),
      db_file_(db_file),
      page_size_(page_size),
      options_(options),
      pins_(wal2_, pin_mu),
      writer_(Writer::Env{
          .index = &index_,
          .logs = &logs_,
          .wal2 = wal2_,
          .page_size = page_size_,
          .options = &options_,
          .counters = &counters_,
          .maintenance_sync = [this] { return durability_.MaintenanceSync(); },
          .make_log_durable =
              [this](int log, const shm::LogState& state, const char* reason,
                     absl::Time deadline) {
                return durability_.MakeLogDurableLocking(flush_, log, state, reason, deadline);
              },
      }),
      recovery_(IndexRecovery::Env{
          .index = &index_,
          .logs = &logs_,
          .wal2 = wal2_,
          .page_size = page_size_,
          .shm_path = &shm_path_,
          .writer = &writer_,
          .durability = &durability_,
          .counters = &counters_,
      }),
      private_(PrivateIndex::Env{
          .fs = fs_,
          .db_file = db_file_,
          .db_path = &db_path_,
          .shm_path = &shm_path_,
          .log_paths = &log_paths_,
          .nlogs = nlogs_,
          .page_size = page_size_,
          .options = &options_,
          .index = &index_,
          .logs = &logs_,
          .shm_file = &shm_file_,
          .recovery = &recovery_,
      }),
      durability_(LogDurability::Env{
          .fs = fs_,
          .index = &index_,
          .logs = &logs_,
          .wal2 = wal2_,
          .page_size = page_size_,
          .options = &options_,
          .log_paths = &log_paths_,
          .shm_path = &shm_path_,
          .writer = &writer_,
      }) {}

WalConnection::~WalConnection() {
  // private_ lets go of WalOptions::private_reader_byte (closing drops it too).
  // pins_, declared after index_, lets go of the slot and the mark before index_ goes.
}

absl::StatusOr<std::unique_ptr<WalConnection>> WalConnection::Open(vfs::FileSystem* fs,
                                                               const std::string& db_path,
                                                               vfs::File* db_file,
                                                               uint32_t page_size,
                                                               const WalOptions& options,
                                                               base::Mutex* pin_mu) {
  std::unique_ptr<WalConnection> wal(
      new WalConnection(fs, db_path, db_file, page_size, options, pin_mu));
  JKV_RETURN_IF_ERROR(wal->Join(absl::Now() + options.busy_timeout));
  if (!wal->private_.active()) {
    JKV_RETURN_IF_ERROR(
        wal->pins_.Claim(wal->index_.get(), options.reader_slots, wal->shm_path_));
  }
  return wal;
}

// Joins the -shm of the database, or initialises it when this connection is alone (DMS).
absl::Status WalConnection::Join(absl::Time deadline) {
  const bool read_only = options_.read_only;
  if (options_.exclusive_locking) return JoinExclusive();
  absl::StatusOr<std::unique_ptr<vfs::File>> shm =
      fs_->Open(shm_path_, {vfs::OpenMode::kCreate, vfs::FileKind::kShm});
  if (!shm.ok() && read_only) return private_.Join(shm.status(), *pins_.mu());
  if (!shm.ok()) {
    return absl::Status(shm.status().code(),
                        absl::StrCat(shm_path_, ": cannot open the wal-index for writing (",
                                     shm.status().message(),
                                     "); every connection to a WAL database needs it"));
  }
  shm_file_ = std::move(*shm);
  bool created = false;
  for (int l = 0; l < nlogs_; ++l) {
    JKV_ASSIGN_OR_RETURN(bool log_existed, fs_->Exists(log_paths_[l]));
    created |= !log_existed;
    absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
        wal::WalLog::Open(fs_, log_paths_[l], read_only, options_.grow_bytes,
                          options_.log_map_bytes);
    if (read_only && absl::IsNotFound(log.status())) {
      // No log (the last connection removed it): the database file holds every commit. A
      // read-only connection cannot create the log; it opens it at the first snapshot that
      // has frames in it, which a writer that created it has published (PrivateIndex::OpenLogForReading).
    } else {
      JKV_RETURN_IF_ERROR(log.status());
      logs_[l] = std::move(*log);
    }
  }
  if (created && !read_only && options_.sync != SyncLevel::kOff) {
    // W5: the new log's directory entry is durable before any frame in it is relied on.
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));
  }
  const bool synced_dir = created && options_.sync != SyncLevel::kOff;
  constexpr uint64_t kDms = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kDms);
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    JKV_ASSIGN_OR_RETURN(bool alone, shm_file_->TryLock(kDms, 1, vfs::LockMode::kExclusive));
    if (alone) {
      // W10: a last read-only connection removes the -shm under DMS exclusive (CloseReadOnly);
      // one that did so between this opener's open and its lock left it a file no other
      // connection will find. Open the path again.
      JKV_ASSIGN_OR_RETURN(const uint64_t links, shm_file_->LinkCount());
      if (links == 0) {
        CallWalHook("open:shm_removed");
        JKV_RETURN_IF_ERROR(shm_file_->Unlock(kDms, 1));
        JKV_ASSIGN_OR_RETURN(shm_file_,
                             fs_->Open(shm_path_, {vfs::OpenMode::kCreate, vfs::FileKind::kShm}));
        continue;
      }
      // No other connection has the index mapped: start it afresh from the log (W6).
      absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
          shm::WalIndex::OpenShared(shm_file_.get(), true);
      if (PrivateIndex::DiskFull(index.status())) {
        return private_.JoinFullDisk(index.status(), *pins_.mu());
      }
      JKV_RETURN_IF_ERROR(index.status());
      index_ = std::move(*index);
      JKV_RETURN_IF_ERROR(durability_.JoinSyncFloor(synced_dir));  // D1: before recovery syncs by it
      JKV_ASSIGN_OR_RETURN(bool w, index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
      JKV_ASSIGN_OR_RETURN(bool r,
                           index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
      JKV_CHECK(w && r);  // DMS exclusive: no other connection holds any lock
      write_lock_.AssumeHeld();
      recover_lock_.AssumeHeld();
      flush_.AssumeAlone();
      absl::Status s = recovery_.RecoverIndex(write_lock_, recover_lock_, flush_);
      index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
      if (PrivateIndex::DiskFull(s)) {
        // The log's frames need index regions the disk cannot give: read through a private
        // index instead. The shared one is left initialised with no valid header, so the
        // next connection alone (or the first reader) rebuilds it.
        index_.reset();
        return private_.JoinFullDisk(s, *pins_.mu());
      }
      JKV_RETURN_IF_ERROR(s);
      JKV_ASSIGN_OR_RETURN(bool shared, shm_file_->TryLock(kDms, 1, vfs::LockMode::kShared));
      JKV_CHECK(shared);  // converting our own exclusive lock
      return absl::OkStatus();
    }
    JKV_ASSIGN_OR_RETURN(bool joined, shm_file_->TryLock(kDms, 1, vfs::LockMode::kShared));
    if (joined) {
      // W10 (above): a shared DMS is taken only while another connection holds it too, so the
      // file cannot have been removed: CloseReadOnly removes it only under DMS exclusive.
      absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
          shm::WalIndex::OpenShared(shm_file_.get(), false);
      if (index.ok()) {
        index_ = std::move(*index);
        return durability_.JoinSyncFloor(synced_dir);  // D1
      }
      if (PrivateIndex::DiskFull(index.status())) {
        return private_.JoinFullDisk(index.status(), *pins_.mu());
      }
      if (!absl::IsUnavailable(index.status())) return index.status();
      // Not initialised: its initialiser died before finishing. Let go and look again (alone,
      // this connection initialises it).
      JKV_RETURN_IF_ERROR(shm_file_->Unlock(kDms, 1));
      if (absl::Now() >= deadline) {
        return absl::FailedPreconditionError(index.status().message());
      }
    }
    if (wait.Expired()) {
      return absl::UnavailableError(
          absl::StrCat("busy: another connection is initialising ", shm_path_));
    }
    Sleep(wait);
  }
}


// Exclusive locking: the caller holds the database file EXCLUSIVE for the connection's life,
// so the index can live on the heap and be rebuilt from the log here (W6).
absl::Status WalConnection::JoinExclusive() {
  bool created = false;
  for (int l = 0; l < nlogs_; ++l) {
    JKV_ASSIGN_OR_RETURN(bool log_existed, fs_->Exists(log_paths_[l]));
    created |= !log_existed;
    JKV_ASSIGN_OR_RETURN(logs_[l], wal::WalLog::Open(fs_, log_paths_[l], /*read_only=*/false,
                                                     kGrowBytes, options_.log_map_bytes));
  }
  if (created && options_.sync != SyncLevel::kOff) {
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));  // W5
  }
  index_ = shm::WalIndex::OpenHeap();
  JKV_RETURN_IF_ERROR(durability_.JoinSyncFloor(created && options_.sync != SyncLevel::kOff));  // D1
  // A heap index: no other connection, so none takes WRITE, RECOVER or FLUSH.
  write_lock_.AssumeHeld();
  recover_lock_.AssumeHeld();
  flush_.AssumeAlone();
  return recovery_.RecoverIndex(write_lock_, recover_lock_, flush_);
}

// W10. A read-only connection cannot take the database file EXCLUSIVE (a write lock needs a
// descriptor open for writing), so it never runs CloseLast; but it may have created the -shm
// (to open a database whose last connection had removed it), which would then stay behind
// after every read-only use. It removes it at close when both:
//   1. it holds DMS exclusive on the -shm (converted from its shared lock): no other
//      connection has the index open, and none can join it without that lock;
//   2. then, no log exists: the database file holds every commit, so the index holds nothing
//      (a log created after this check by an opener that then finds the -shm removed is
//      indexed afresh from the path it opens again).
// An opener that opened the -shm before the removal and locks it after finds it unlinked
// (LinkCount 0) and opens the path again (Join). A log left by a crash is left, and so is its
// -shm, for the next read-write connection to recover and remove.
absl::Status WalConnection::CloseReadOnly() {
  if (private_.active() || shm_file_ == nullptr) return absl::OkStatus();
  constexpr uint64_t kDms = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kDms);
  JKV_ASSIGN_OR_RETURN(bool alone, shm_file_->TryLock(kDms, 1, vfs::LockMode::kExclusive));
  if (!alone) return absl::OkStatus();
  for (int l = 0; l < nlogs_; ++l) {
    JKV_ASSIGN_OR_RETURN(bool log, fs_->Exists(log_paths_[l]));
    if (log) return absl::OkStatus();
  }
  CallWalHook("close:removing_shm");
  return fs_->Delete(shm_path_);
}

absl::Status WalConnection::CloseLast() {
  if (private_.active()) return absl::OkStatus();  // JoinFullDisk: it neither wrote nor indexed anything
  JKV_ASSIGN_OR_RETURN(WalSnapshot snap, BeginWrite(absl::Now() + options_.busy_timeout));
  (void)snap;
  absl::StatusOr<CheckpointResult> r = Checkpoint(CheckpointMode::kTruncate);
  EndWrite();
  JKV_RETURN_IF_ERROR(r.status());
  if (r->blocked) return absl::OkStatus();  // keep the log: it still holds frames
  // Everything is in the database file (C2) and the logs are empty: no file is needed.
  for (int l = 0; l < nlogs_; ++l) JKV_RETURN_IF_ERROR(fs_->Delete(log_paths_[l]));
  if (shm_file_ != nullptr) JKV_RETURN_IF_ERROR(fs_->Delete(shm_path_));
  if (durability_.MaintenanceSync() == SyncLevel::kExtra) {
    // EXTRA's promise (D1: of any connection this -shm had): the removal itself durable. No guarantee needs it: a log that comes
    // back after a power loss is fully copied, and replaying it changes nothing.
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "EXTRA log removal"));
  }
  return absl::OkStatus();
}

base::CounterArray WalConnection::Stats() {
  using base::Counter;
  base::CounterArray c = counters_.Snapshot();
  // The log's state, as the table names it: WAL2's log rows are of both logs together, and the
  // wal2_ rows give x.db-wal2's share.
  shm::IndexHeader h;
  const bool whole = index_->ReadHeader(&h);
  const int current = whole ? CurrentLog(h, wal2_) : 0;
  uint64_t frames[2] = {0, 0}, uncopied[2] = {0, 0}, bytes[2] = {0, 0}, zero_bytes = 0;
  uint64_t map_reads = 0, map_faults = 0;
  for (int l = 0; l < nlogs_; ++l) {
    if (whole) frames[l] = h.logs[l].mx_frame;
    uncopied[l] = frames[l] - std::min<uint64_t>(index_->backfill(l), frames[l]);
    if (logs_[l] == nullptr) continue;
    absl::StatusOr<uint64_t> size = logs_[l]->Size();
    if (size.ok()) bytes[l] = *size;
    zero_bytes += logs_[l]->zero_bytes();
    const vfs::ReadMapCounters map = logs_[l]->map_counters();  // Q1
    map_reads += map.copies;
    map_faults += map.faults;
  }
  c.Set(Counter::kWalMode, 1);
  c.Set(Counter::kWal2, wal2_);
  c.Set(Counter::kLogFrames, frames[0] + frames[1]);
  c.Set(Counter::kLogUnbackfilled, uncopied[0] + uncopied[1]);
  c.Set(Counter::kLogBytes, bytes[0] + bytes[1]);
  c.Set(Counter::kCurrentLog, static_cast<uint64_t>(current));
  c.Set(Counter::kWal2LogFrames, frames[1]);
  c.Set(Counter::kWal2LogUnbackfilled, uncopied[1]);
  c.Set(Counter::kWal2LogBytes, bytes[1]);
  c.Set(Counter::kLogZeroBytes, zero_bytes);
  c.Set(Counter::kLogMapReads, map_reads);
  c.Set(Counter::kLogMapFaults, map_faults);
  const shm::PinScanResult pins =
      *shm::OldestLivePin(*index_, current, /*seq=*/0, /*backfill=*/0, /*ceiling=*/0, pins_.Own(),
                          shm::PinScanUse::kView);
  c.Set(Counter::kOldestPinnedFrame, pins.oldest == 0 ? 0 : shm::PinFrame(pins.oldest));
  c.Set(Counter::kPinnedConnections, static_cast<uint64_t>(pins.live));
  c.Set(Counter::kOverflowReader, !private_.active() && pins_.overflow());
  return c;
}

}  // namespace journalkv::wal
