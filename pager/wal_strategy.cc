#include "pager/wal_strategy.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/db_lock.h"
#include "vfs/sync.h"

namespace journalkv::pager {
namespace {

using checkpoint::CheckpointMode;
using checkpoint::CheckpointResult;

// A wait for another connection's step in the WAL protocol (a -shm lock, a torn header, a
// reader mark, the WRITE or CKPT lock) sleeps from 20 us doubling up to this: those steps take
// microseconds, and a commit that waits longer than its own flush for one is time lost.
constexpr absl::Duration kMaxWait = absl::Microseconds(250);
// A reader that finds the two header copies different retries this often before it suspects
// that the publishing writer died (the copies differ for the few nanoseconds of a publish).
constexpr int kTornHeaderSpins = 1000;

std::atomic<WalHook> wal_hook{nullptr};
std::atomic<uint32_t> first_generation{0};

void Hook(const char* point) { CallWalHook(point); }

// Every wait for another connection passes the hook point "wait", where a schedule explorer
// runs someone else.
void Sleep(base::Backoff& wait) {
  Hook("wait");
  wait.Sleep();
}

uint64_t RandomId() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

}  // namespace

void CallWalHook(const char* point) {
  if (WalHook h = wal_hook.load(std::memory_order_relaxed)) h(point);
}

void SetWalHookForTesting(WalHook hook) { wal_hook.store(hook, std::memory_order_relaxed); }

void SetFirstGenerationForTesting(uint32_t seq) {
  first_generation.store(seq & 0x7fffffffu, std::memory_order_relaxed);
}

WalStrategy::WalStrategy(vfs::FileSystem* fs, std::string db_path, vfs::File* db_file,
                         uint32_t page_size, const PagerOptions& options)
    : fs_(fs),
      db_path_(std::move(db_path)),
      wal2_(options.journal_mode == JournalMode::kWal2),
      nlogs_(wal2_ ? 2 : 1),
      log_paths_{db_path_ + "-wal", db_path_ + "-wal2"},
      wal_path_(log_paths_[0]),
      shm_path_(db_path_ + "-shm"),
      db_file_(db_file),
      page_size_(page_size),
      options_(options) {}

WalStrategy::~WalStrategy() {
  if (private_) db_file_->Unlock(kPrivateReaderByte, 1).IgnoreError();  // closing drops it too
  if (index_ != nullptr && slot_ >= 0) {
    index_->set_pin(slot_, 0, 0);
    index_->set_pin(slot_, 1, 0);
    index_->UnlockSlot(slot_).IgnoreError();  // closing the file drops it anyway
  }
  if (index_ != nullptr) LeaveMark();
}

absl::StatusOr<std::unique_ptr<WalStrategy>> WalStrategy::Open(vfs::FileSystem* fs,
                                                               const std::string& db_path,
                                                               vfs::File* db_file,
                                                               uint32_t page_size,
                                                               const PagerOptions& options) {
  std::unique_ptr<WalStrategy> wal(new WalStrategy(fs, db_path, db_file, page_size, options));
  JKV_RETURN_IF_ERROR(wal->Join(absl::Now() + options.busy_timeout));
  if (!wal->private_) JKV_RETURN_IF_ERROR(wal->ClaimSlot());
  return wal;
}

// Joins the -shm of the database, or initialises it when this connection is alone (DMS).
absl::Status WalStrategy::Join(absl::Time deadline) {
  const bool read_only = options_.access == AccessMode::kReadOnly;
  if (options_.exclusive_locking) return JoinExclusive();
  absl::StatusOr<std::unique_ptr<vfs::File>> shm =
      fs_->Open(shm_path_, {vfs::OpenMode::kCreate, vfs::FileKind::kShm});
  if (!shm.ok() && read_only) return JoinPrivate(shm.status());
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
        wal::WalLog::Open(fs_, log_paths_[l], read_only);
    if (read_only && absl::IsNotFound(log.status())) {
      // No log (the last connection removed it): the database file holds every commit. A
      // read-only connection cannot create the log; it opens it at the first snapshot that
      // has frames in it, which a writer that created it has published (OpenLogForReading).
    } else {
      JKV_RETURN_IF_ERROR(log.status());
      logs_[l] = std::move(*log);
    }
  }
  if (created && !read_only && options_.sync != SyncLevel::kOff) {
    // W5: the new log's directory entry is durable before any frame in it is relied on.
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));
  }
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
      if (DiskFull(index.status())) return JoinFullDisk(index.status());
      JKV_RETURN_IF_ERROR(index.status());
      index_ = std::move(*index);
      JKV_ASSIGN_OR_RETURN(bool w, index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
      JKV_ASSIGN_OR_RETURN(bool r,
                           index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
      JKV_CHECK(w && r);  // DMS exclusive: no other connection holds any lock
      absl::Status s = RecoverIndex();
      index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
      if (DiskFull(s)) {
        // The log's frames need index regions the disk cannot give: read through a private
        // index instead. The shared one is left initialised with no valid header, so the
        // next connection alone (or the first reader) rebuilds it.
        index_.reset();
        return JoinFullDisk(s);
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
        return absl::OkStatus();
      }
      if (DiskFull(index.status())) return JoinFullDisk(index.status());
      if (!absl::IsUnavailable(index.status())) return index.status();
      // Not initialised: its initialiser died before finishing. Let go and look again (alone,
      // this connection initialises it).
      JKV_RETURN_IF_ERROR(shm_file_->Unlock(kDms, 1));
      if (absl::Now() >= deadline) {
        return absl::FailedPreconditionError(index.status().message());
      }
    }
    if (wait.Expired()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("busy: another connection is initialising ", shm_path_));
    }
    Sleep(wait);
  }
}


// The -shm's pages could not get their disk blocks (vfs: MapSharedRegion allocates them, so that
// a store never faults): the connection reads through a private index, as a read-only one
// without write access to the -shm does, and refuses writes and checkpoints, which a full disk
// could not take anyway. It holds no lock on the -shm, so it is not counted by anyone.
absl::Status WalStrategy::JoinFullDisk(const absl::Status& why) {
  constexpr uint64_t kDms = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kDms);
  shm_file_->Unlock(kDms, 1).IgnoreError();  // closing the file drops it anyway
  shm_file_.reset();
  for (std::unique_ptr<wal::WalLog>& log : logs_) log.reset();
  private_reason_ = absl::StrCat("the disk is full: ", why.message(),
                                 "; this connection reads only until there is space");
  return JoinPrivate(why);
}

bool WalStrategy::DiskFull(const absl::Status& s) {
  return absl::IsResourceExhausted(s) && !absl::StartsWith(s.message(), "busy");
}

// Exclusive locking: the caller holds the database file EXCLUSIVE for the connection's life,
// so the index can live on the heap and be rebuilt from the log here (W6).
absl::Status WalStrategy::JoinExclusive() {
  bool created = false;
  for (int l = 0; l < nlogs_; ++l) {
    JKV_ASSIGN_OR_RETURN(bool log_existed, fs_->Exists(log_paths_[l]));
    created |= !log_existed;
    JKV_ASSIGN_OR_RETURN(logs_[l], wal::WalLog::Open(fs_, log_paths_[l], /*read_only=*/false));
  }
  if (created && options_.sync != SyncLevel::kOff) {
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));  // W5
  }
  index_ = shm::WalIndex::OpenHeap();
  return RecoverIndex();
}

bool WalStrategy::RestartAllowed() {
  absl::StatusOr<bool> free = db_file_->CanLock(kPrivateReaderByte, 1, vfs::LockMode::kExclusive);
  return free.ok() && *free;
}

// A connection that finds every slot it may claim taken (PagerOptions::reader_slots; a heap
// index, whose one connection needs one slot, ignores the option) reads under the overflow
// marks instead (M1..M4): it works, at a few lock calls per read transaction.
absl::Status WalStrategy::ClaimSlot() {
  const int slots = index_->shared() ? std::min(options_.reader_slots, shm::kMaxSlots)
                                     : shm::kMaxSlots;
  for (int slot = 0; slot < slots; ++slot) {
    JKV_ASSIGN_OR_RETURN(bool mine, index_->TryLockSlot(slot));
    if (!mine) continue;
    slot_ = slot;
    index_->set_pin(slot, 0, 0);  // a dead owner's pin
    index_->set_pin(slot, 1, 0);
    index_->set_owner(slot, RandomId());
    return absl::OkStatus();
  }
  if (!index_->shared()) {
    return absl::InternalError(absl::StrCat(shm_path_, ": no free slot in a private wal-index"));
  }
  return absl::OkStatus();
}

bool WalStrategy::MarkProtects(int mark, const PinPair& pins) const {
  for (int l = 0; l < nlogs_; ++l) {
    const uint64_t want = l == 0 ? pins.first : pins.second;
    const uint64_t have = index_->mark_pin(mark, l);
    if (have == 0 || checkpoint::PinBefore(want, have)) return false;
  }
  return true;
}

absl::StatusOr<bool> WalStrategy::JoinMark(const PinPair& pins) {
  const int held = mark_.load(std::memory_order_relaxed);
  if (held >= 0) return MarkProtects(held, pins);
  // M2: a mark nobody holds, set to this snapshot. Trying these first keeps marks fresh: a
  // mark's pin only moves while nobody reads under it.
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    JKV_ASSIGN_OR_RETURN(bool alone, index_->TryLockMark(m, vfs::LockMode::kExclusive));
    if (!alone) continue;
    index_->set_mark_pin(m, 0, pins.first);
    index_->set_mark_pin(m, 1, pins.second);
    JKV_ASSIGN_OR_RETURN(bool shared, index_->TryLockMark(m, vfs::LockMode::kShared));
    if (!shared) return absl::InternalError("converting an exclusive lock to shared failed");
    mark_.store(m, std::memory_order_relaxed);
    return true;
  }
  // M3: every mark is in use: share the newest one at or below this snapshot.
  int best = -1;
  for (int m = 0; m < shm::kOverflowMarks; ++m) {
    if (!MarkProtects(m, pins)) continue;
    if (best < 0 || checkpoint::PinBefore(index_->mark_pin(best, 0), index_->mark_pin(m, 0))) {
      best = m;
    }
  }
  if (best < 0) return false;
  JKV_ASSIGN_OR_RETURN(bool shared, index_->TryLockMark(best, vfs::LockMode::kShared));
  if (!shared) return false;  // being set right now
  if (!MarkProtects(best, pins)) {  // set between the look and the lock
    index_->UnlockMark(best).IgnoreError();
    return false;
  }
  mark_.store(best, std::memory_order_relaxed);
  return true;
}

void WalStrategy::LeaveMark() {
  const int m = mark_.exchange(-1, std::memory_order_relaxed);
  if (m >= 0) index_->UnlockMark(m).IgnoreError();  // closing the file drops it anyway
}

absl::StatusOr<std::array<wal::ScanResult, 2>> WalStrategy::ScanLogs() {
  std::array<wal::ScanResult, 2> scans;  // no log file (a read-only connection found none): empty
  for (int l = 0; l < nlogs_; ++l) {
    if (logs_[l] != nullptr) {
      JKV_ASSIGN_OR_RETURN(scans[l], logs_[l]->Scan(page_size_, shm::MaxLogFrames()));
    }
  }
  return scans;
}

shm::IndexHeader WalStrategy::HeaderFromScans(const std::array<wal::ScanResult, 2>& scans,
                                              const shm::IndexHeader* old) const {
  shm::IndexHeader h;
  h.page_size = page_size_;
  for (int l = 0; l < nlogs_; ++l) {
    const wal::ScanResult& scan = scans[l];
    if (scan.header_valid) {
      // Generations are 31 bits (checkpoint::SeqAfter); a foreign top bit is dropped.
      h.logs[l] = {scan.header.ckpt_seq & 0x7fffffffu, scan.header.salt1, scan.header.salt2,
                   scan.mx_frame, scan.last_checksum};
    } else {
      // No usable log: the next writer starts a generation after the highest one seen.
      h.logs[l] = {old != nullptr ? old->logs[l].ckpt_seq
                                  : first_generation.load(std::memory_order_relaxed),
                   0, 0, 0, 0};
    }
  }
  // V1: the later valid generation is the current log (a log with no valid header is empty).
  h.current_log = 0;
  if (wal2_ && scans[1].header_valid &&
      (!scans[0].header_valid || checkpoint::SeqAfter(h.logs[1].ckpt_seq, h.logs[0].ckpt_seq))) {
    h.current_log = 1;
  }
  const int cur = static_cast<int>(h.current_log);
  const int other = 1 - cur;
  h.page_count = scans[cur].mx_frame > 0     ? scans[cur].db_size
                 : wal2_ && scans[other].mx_frame > 0 ? scans[other].db_size
                                                      : 0;
  return h;
}

// W6. Rebuilds the index from the log(s): the valid prefix of each log is the truth, and in
// WAL2 their order is their generations' (V1).
absl::Status WalStrategy::RecoverIndex() {
  JKV_ASSIGN_OR_RETURN(auto scans, ScanLogs());
  bool found = false;
  for (int l = 0; l < nlogs_; ++l) {
    if (scans[l].mx_frame == 0) continue;
    found = true;
    if (options_.sync >= SyncLevel::kFull) {
      // W6: frames a crashed writer wrote but never synced are about to be published: make
      // them durable first, so that what readers see from now on survives a power loss (and a
      // FULL checkpoint, which relies on W1 for published frames, never copies a frame the
      // log can still lose).
      JKV_RETURN_IF_ERROR(
          vfs::SyncFile(logs_[l]->file(), vfs::SyncKind::kData, "W6 log at recovery"));
    }
  }
  shm::IndexHeader old;
  const bool had_header = index_->ReadHeader(&old);
  shm::IndexHeader h = HeaderFromScans(scans, had_header ? &old : nullptr);
  for (int l = 0; l < nlogs_; ++l) {
    JKV_RETURN_IF_ERROR(index_->Truncate(l, 0));
    for (uint32_t f = 1; f <= scans[l].mx_frame; ++f) {
      JKV_RETURN_IF_ERROR(index_->Append(l, f, scans[l].pages[f - 1]));
    }
  }
  // A fresh change word, so that no connection mistakes the rebuilt state for one it cached.
  h.change = had_header ? old.change + 1 : static_cast<uint32_t>(RandomId());
  // Copying again is harmless; what was copied is unknown: the file may hold page versions of
  // any frame of the rebuilt logs (C3), so written_through and the target cover them whole
  // (C4), and the backfill starts again from 0. All of it before the header (W8): a reader of
  // an older header of the same generation then finds the target past its snapshot.
  for (int l = 0; l < nlogs_; ++l) {
    checkpoint::ForgetCopies(*index_, l, h.logs[l].ckpt_seq, h.logs[l].mx_frame);
  }
  index_->WriteHeader(h);
  if (found) {
    base::MutexLock lock(&stats_mu_);
    ++stats_.recoveries;
  }
  return absl::OkStatus();
}

// W6. A writer that died publishing left copy B (written first) whole and copy A torn, or B
// torn and A whole: the whole one is the published state, and every index entry up to its
// mx_frame is in place (W2), so republishing it repairs the index without touching the entries
// that other connections' open read transactions are looking up. Only when neither copy checks
// out (the -shm was damaged otherwise) is the index rebuilt from the log.
absl::Status WalStrategy::RepairHeader() {
  shm::IndexHeader h;
  if (index_->ReadHeaderCopy(1, &h) || index_->ReadHeaderCopy(0, &h)) {
    ++h.change;
    index_->WriteHeader(h);
    for (int l = 0; l < nlogs_; ++l) {
      // A dead writer's unpublished entries.
      JKV_RETURN_IF_ERROR(index_->Truncate(l, h.logs[l].mx_frame));
    }
    return absl::OkStatus();
  }
  return RecoverIndex();
}

// Reads the published header; a header that stays torn means a process died publishing it,
// and the index is rebuilt (W6) unless this connection's own writer is active.
absl::StatusOr<shm::IndexHeader> WalStrategy::ReadHeaderOrRecover(absl::Time deadline,
                                                                  bool may_recover) {
  shm::IndexHeader h;
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    for (int i = 0; i < kTornHeaderSpins; ++i) {
      if (index_->ReadHeader(&h)) return h;
    }
    // W9: this connection's writer thread repairs under the WRITE it holds; another thread
    // repairs only when this connection holds no WRITE, taking it under write_role_mu_ (the
    // lock is granted to every thread of the File, so it tells nothing about this
    // connection's own writer); while this connection's writer holds WRITE it waits.
    const bool own_write = write_locked_.load(std::memory_order_acquire) &&
                           writer_thread_.load(std::memory_order_acquire) ==
                               std::this_thread::get_id();
    if (own_write || may_recover) {
      absl::Status s;
      bool repaired = false;
      {
        std::optional<base::MutexLock> role;
        if (!own_write) role.emplace(&write_role_mu_);
        bool write = own_write;
        if (!own_write && !write_locked_.load(std::memory_order_acquire)) {
          JKV_ASSIGN_OR_RETURN(write,
                               index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
        }
        if (write) {
          JKV_ASSIGN_OR_RETURN(bool r,
                               index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
          if (r) {
            if (!index_->ReadHeader(&h)) s = RepairHeader();
            index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
          }
          if (!own_write) index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
          repaired = true;
        }
      }
      JKV_RETURN_IF_ERROR(s);
      if (repaired) continue;
    }
    if (wait.Expired()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("busy: the wal-index header of ", shm_path_, " is being rewritten"));
    }
    Sleep(wait);
  }
}

WalSnapshot WalStrategy::SnapshotOf(const shm::IndexHeader& h) const {
  WalSnapshot s;
  for (int l = 0; l < nlogs_; ++l) s.logs[l] = {h.logs[l].ckpt_seq, h.logs[l].mx_frame};
  s.current = wal2_ ? static_cast<int>(h.current_log & 1) : 0;
  s.change = h.change;
  return s;
}

// WAL pins log 0 only; WAL2 pins both, naming each log's generation even where the snapshot
// sees none of its frames (V5).
WalStrategy::PinPair WalStrategy::PinsOf(const WalSnapshot& s) const {
  return {s.pin(0), wal2_ ? s.pin(1) : 0};
}

void WalStrategy::SetPins(const PinPair& pins) {
  index_->set_pin(slot_, 0, pins.first);
  if (wal2_) index_->set_pin(slot_, 1, pins.second);
}

// W3: no system call. The pins are stored before the generations and the checkpoint targets
// are read again (seq_cst on both sides), so either a checkpoint sees the pin or this reader
// sees the checkpoint's target.
absl::StatusOr<WalSnapshot> WalStrategy::BeginRead(absl::Time deadline, bool writer_active) {
  if (private_) {
    // No pin: kPrivateReaderByte keeps every checkpoint and restart out.
    JKV_RETURN_IF_ERROR(RefreshPrivate());
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return absl::InternalError("private wal-index header torn");
    return SnapshotOf(h);
  }
  base::Backoff mark_wait(deadline, kMaxWait);
  while (true) {
    JKV_ASSIGN_OR_RETURN(shm::IndexHeader h, ReadHeaderOrRecover(deadline, !writer_active));
    Hook("begin_read:header");
    const WalSnapshot snap = SnapshotOf(h);
    for (int l = 0; l < nlogs_; ++l) {
      if (logs_[l] == nullptr && snap.logs[l].mx > 0) JKV_RETURN_IF_ERROR(OpenLogForReading(l));
    }
    const PinPair pins = PinsOf(snap);
    const PinPair held = open_pins_.empty() ? PinPair{0, 0} : open_pins_.begin()->first;
    if (held.first != 0 && !checkpoint::PinBefore(pins.first, held.first) &&
        !checkpoint::PinBefore(pins.second, held.second)) {
      // An older snapshot of this connection already holds every checkpoint below `pins`.
      open_pins_.emplace(pins, 0);
      Hook("begin_read:done");
      return snap;
    }
    if (slot_ >= 0) {
      SetPins(pins);
    } else {
      JKV_ASSIGN_OR_RETURN(bool joined, JoinMark(pins));
      if (!joined) {  // M3: every mark is held at a later snapshot: take a newer one
        if (mark_wait.Expired()) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "busy: ", shm_path_, ": all ", shm::kMaxSlots, " reader slots and ",
              shm::kOverflowMarks, " overflow pins are in use"));
        }
        Sleep(mark_wait);
        continue;
      }
    }
    Hook("begin_read:pinned");
    shm::IndexHeader again;
    bool settled = index_->ReadHeader(&again);
    for (int l = 0; l < nlogs_ && settled; ++l) {
      const WalSnapshot::Log& mine = snap.logs[l];
      const uint64_t target = index_->ckpt_target(l);
      const bool target_past = (target >> 32) == mine.seq && static_cast<uint32_t>(target) > mine.mx;
      settled = again.logs[l].ckpt_seq == mine.seq && !target_past &&
                index_->backfill(l) <= mine.mx;
    }
    if (settled) {
      open_pins_.emplace(pins, 0);
      Hook("begin_read:done");
      return snap;
    }
    // A checkpoint may be copying past this snapshot: take a newer one.
    if (slot_ >= 0) {
      SetPins(held);
    } else if (held.first == 0) {
      LeaveMark();
    }
    if (absl::Now() >= deadline) {
      return absl::ResourceExhaustedError("busy: could not pin a snapshot of the log");
    }
  }
}

// A read-only connection that joined without log `log`: a writer has since created it and
// published frames in it, so it exists (only the last connection removes it, and this one is
// open).
absl::Status WalStrategy::OpenLogForReading(int log) {
  absl::StatusOr<std::unique_ptr<wal::WalLog>> opened =
      wal::WalLog::Open(fs_, log_paths_[log], /*read_only=*/true);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("the wal-index publishes frames, but ", log_paths_[log],
                                     " cannot be opened: ", opened.status().message()));
  }
  logs_[log] = std::move(*opened);
  return absl::OkStatus();
}

void WalStrategy::EndRead(const WalSnapshot& snapshot) {
  if (private_) return;
  auto it = open_pins_.find(PinsOf(snapshot));
  JKV_DCHECK(it != open_pins_.end());
  if (it == open_pins_.end()) return;
  const bool was_oldest = it == open_pins_.begin();
  open_pins_.erase(it);
  if (!was_oldest) return;
  if (slot_ >= 0) {
    SetPins(open_pins_.empty() ? PinPair{0, 0} : open_pins_.begin()->first);
  } else if (open_pins_.empty()) {
    LeaveMark();  // M4
  }
}

// V2: the current log, then (WAL2) the other one, then the database file.
absl::StatusOr<PageVersion> WalStrategy::Locate(const WalSnapshot& snapshot, PageNo page_no) {
  PageVersion v;
  v.key = PageVersionKey(snapshot.cur().seq, 0);
  for (int i = 0; i < nlogs_; ++i) {
    const int l = i == 0 ? snapshot.current : 1 - snapshot.current;
    const WalSnapshot::Log& log = snapshot.logs[l];
    if (log.mx == 0) continue;
    JKV_ASSIGN_OR_RETURN(uint32_t frame, index_->Lookup(l, page_no.value(), log.mx));
    if (!index_->GenerationIs(l, log.seq)) {
      // W7: the log restarted; the lookup may have read the next generation's entries. The
      // database file holds this snapshot's pages of it and of every older log.
      return PageVersion{l, 0, 0, false};
    }
    if (frame != 0) {
      v.log = l;
      v.frame = frame;
      v.key = PageVersionKey(log.seq, frame);
      return v;
    }
  }
  return v;
}

absl::Status WalStrategy::ReadPage(const WalSnapshot& snapshot, PageNo page_no,
                                   PageVersion* version, absl::Span<uint8_t> out) {
  const uint64_t offset = uint64_t{page_no.value() - 1} * page_size_;
  if (version->frame == 0) {
    Hook("read:db");
    return db_file_->Read(offset, out);
  }
  const int l = version->log;
  Hook("read:frame");
  absl::Status s = logs_[l]->ReadPage(version->frame, page_size_, out);
  if (index_->GenerationIs(l, snapshot.logs[l].seq)) return s;
  // W7: the frame may have been overwritten (or cut) by the next generation.
  version->frame = 0;
  version->cacheable = false;
  return db_file_->Read(offset, out);
}

absl::StatusOr<WalSnapshot> WalStrategy::BeginWrite(absl::Time deadline) {
  JKV_DCHECK(!write_locked_.load());
  if (private_) {
    return absl::ResourceExhaustedError(absl::StrCat(db_path_, ": ", private_reason_));
  }
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    {
      base::MutexLock role(&write_role_mu_);  // W9
      JKV_ASSIGN_OR_RETURN(bool locked,
                           index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
      if (locked) {
        writer_thread_.store(std::this_thread::get_id(), std::memory_order_release);
        write_locked_.store(true, std::memory_order_release);
        break;
      }
    }
    if (wait.Expired()) {
      return absl::ResourceExhaustedError("busy: another connection is writing the database");
    }
    Sleep(wait);
  }
  absl::StatusOr<shm::IndexHeader> h = ReadHeaderOrRecover(deadline, true);
  absl::Status s = h.status();
  if (s.ok()) {
    absl::Status damage = IndexDamage(*h);
    if (!damage.ok() && !absl::IsDataLoss(damage)) {
      s = damage;  // an I/O error reading the log: not the index's fault
    } else if (!damage.ok()) {
      // W6: the index contradicts the log, the truth: rebuilt from it, as at a torn header.
      absl::StatusOr<bool> r = index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive);
      s = !r.ok() ? r.status()
          : *r    ? RecoverIndex()
                  : absl::ResourceExhaustedError(absl::StrCat(
                        "busy: ", shm_path_, " is being recovered (", damage.message(), ")"));
      if (r.ok() && *r) index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      if (s.ok()) h = ReadHeaderOrRecover(deadline, true);
      if (s.ok()) s = h.status();
      if (s.ok()) s = IndexDamage(*h);  // still: the rebuild did not take
    }
  }
  if (s.ok() && !wal2_) {
    // W7. A generation with no frames restarts too, so that every generation the writer
    // writes has salts of its own (a rebuilt index may describe a log whose header was lost).
    if (index_->backfill(0) == h->logs[0].mx_frame) s = MaybeRestart(*h, 0, false);
  } else if (s.ok()) {
    const int cur = static_cast<int>(h->current_log & 1);
    const int other = 1 - cur;
    const shm::LogState& c = h->logs[cur];
    if (c.mx_frame == 0) {
      // An empty current log restarts in place (salts of its own, as in WAL).
      s = MaybeRestart(*h, cur, true);
    } else if (index_->backfill(other) == h->logs[other].mx_frame &&
               (c.mx_frame >= std::min(options_.wal2_switch_pages, shm::MaxLogFrames() / 2) ||
                index_->backfill(cur) == c.mx_frame)) {
      // (At half the frame limit at the latest, so that a log near it is left while the
      // other one can take a whole transaction.)
      // V3: the switch. The other log is in the database file: it becomes the current one.
      const uint32_t before = h->current_log;
      s = MaybeRestart(*h, other, true);
      if (s.ok() && h->current_log != before) {
        base::MutexLock lock(&stats_mu_);
        ++stats_.log_switches;
      }
    }
  }
  cur_ = s.ok() && wal2_ ? static_cast<int>(h->current_log & 1) : 0;
  if (s.ok()) s = index_->Truncate(cur_, h->logs[cur_].mx_frame);  // W2
  if (!s.ok()) {
    EndWrite();
    return s;
  }
  writer_header_ = *h;
  next_frame_ = h->logs[cur_].mx_frame + 1;
  chain_ = h->logs[cur_].last_checksum;
  Hook("begin_write:locked");
  return SnapshotOf(*h);
}

absl::Status WalStrategy::IndexDamage(const shm::IndexHeader& h) {
  const auto damaged = [&](auto... what) {
    return absl::DataLossError(absl::StrCat(shm_path_, ": the wal-index is damaged: ", what...));
  };
  for (int l = 0; l < nlogs_; ++l) {
    if (index_->backfill(l) > h.logs[l].mx_frame) {
      return damaged("log ", l, "'s backfill ", index_->backfill(l), " is past its last frame ",
                     h.logs[l].mx_frame);
    }
  }
  const int cur = wal2_ ? static_cast<int>(h.current_log & 1) : 0;
  const shm::LogState& c = h.logs[cur];
  if (c.mx_frame == 0 || logs_[cur] == nullptr || checked_change_ == h.change) {
    return absl::OkStatus();
  }
  // One small read per transaction that follows another connection's (or the first one):
  // the frame the next append chains from.
  absl::StatusOr<wal::FrameHeader> last = logs_[cur]->ReadFrameHeader(c.mx_frame, page_size_);
  if (absl::IsDataLoss(last.status())) return damaged(last.status().message());  // cut short
  JKV_RETURN_IF_ERROR(last.status());
  if (last->salt1 != c.salt1 || last->salt2 != c.salt2 || last->db_size == 0 ||
      last->checksum != c.last_checksum) {
    return damaged("its last frame ", c.mx_frame, " of ", logs_[cur]->path(),
                   " is not the commit the header describes");
  }
  checked_change_ = h.change;
  return absl::OkStatus();
}

// W7, V3. The restart also takes the CKPT lock (without waiting: a running checkpoint means
// the log is simply not restarted this time), because a checkpoint reads the header and then
// the backfill, and must not pair one generation's mx_frame with the next one's backfill.
absl::Status WalStrategy::MaybeRestart(shm::IndexHeader& header, int log, bool make_current,
                                       absl::Time ckpt_deadline) {
  // This connection's own checkpoint (the background checkpointer's, say) is waited for: every
  // frame is copied and no commit can start meanwhile, so it has nothing left to copy and ends
  // at once. Skipping the restart instead would let a checkpointer that runs after every commit
  // keep the log from ever restarting. In WAL2 the writer waits for no checkpoint (V3): its own
  // may be copying the other log, so the restart is left to a later transaction, unless the
  // generation has no salts of its own (a rebuilt index whose log header was lost), or a
  // checkpoint's switch asks to wait (`ckpt_deadline`, V4: the other log is copied, so any
  // checkpoint holding CKPT has nothing to copy and ends at once).
  const bool wait = ckpt_deadline != absl::InfinitePast();
  const bool may_skip = !wait && wal2_ && (header.logs[log].salt1 | header.logs[log].salt2) != 0;
  if (may_skip) {
    if (!ckpt_mu_.TryLock()) return absl::OkStatus();
  } else {
    ckpt_mu_.Lock();
  }
  absl::Status s;
  absl::StatusOr<bool> locked = index_->TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive);
  base::Backoff ckpt_wait(ckpt_deadline, kMaxWait);
  while (wait && locked.ok() && !*locked && !ckpt_wait.Expired()) {
    Sleep(ckpt_wait);
    locked = index_->TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive);
  }
  if (!locked.ok()) s = locked.status();
  if (locked.ok() && *locked) {
    // A read-only private reader's frames must stay where they are.
    if (index_->backfill(log) == header.logs[log].mx_frame && RestartAllowed()) {
      s = checkpoint::RestartLog(*index_, header, log, make_current, wal2_);
      if (s.ok()) {
        base::MutexLock lock(&stats_mu_);
        ++stats_.log_restarts;
      }
    }
    index_->Unlock(shm::ShmLock::kCkpt).IgnoreError();  // closing the file drops it anyway
  }
  ckpt_mu_.Unlock();
  return s;
}

absl::Status WalStrategy::WriteFrames(absl::Span<const wal::FramePage> pages,
                                      uint32_t commit_db_size, std::vector<uint32_t>* frames) {
  JKV_DCHECK(write_locked_);
  JKV_DCHECK(!pages.empty());
  wal::WalLog& log = *logs_[cur_];
  // A transaction the index cannot take (past the frame limit, or a -shm that cannot grow)
  // fails here, before the log holds any of it: its frames written first, the commit frame
  // among them, would be recovered after a crash although the commit was refused.
  if (pages.size() > shm::MaxLogFrames() || next_frame_ > shm::MaxLogFrames() - pages.size() + 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        log.path(), ": the log is full: ", pages.size(), " frames from frame ", next_frame_,
        " would pass the limit of ", shm::MaxLogFrames(),
        " frames a log generation holds; checkpoint it (the log restarts once no reader holds "
        "an older snapshot) or commit smaller transactions"));
  }
  JKV_RETURN_IF_ERROR(index_->Reserve(cur_, next_frame_,
                                      next_frame_ + static_cast<uint32_t>(pages.size()) - 1));
  const wal::WalHeader log_header = checkpoint::LogHeaderFor(writer_header_, cur_);
  if (next_frame_ == 1) {
    // The chain starts from the header written here. The index's last_checksum of a
    // generation with no frames is only a copy of this seed, and may differ (an index rebuilt
    // from a log whose header was lost has none; a damaged -shm, anything); Publish replaces it.
    JKV_ASSIGN_OR_RETURN(uint64_t seed, log.WriteHeader(log_header));
    chain_ = seed;
    if (options_.sync != SyncLevel::kOff) {
      // W4: the new generation's header is durable before any of its frames is written (and,
      // in WAL2, before this log is taken for the newer one by recovery, V1).
      JKV_RETURN_IF_ERROR(vfs::SyncFile(log.file(), vfs::SyncKind::kData, "W4 log header"));
    }
    const int other = 1 - cur_;
    if (wal2_ && options_.sync == SyncLevel::kNormal && writer_header_.logs[other].mx_frame > 0 &&
        writer_header_.logs[other].mx_frame > index_->backfill(other)) {
      // V6: the log switched from is durable before the new one gets a frame; at NORMAL its
      // newest commits were never synced, and a power loss that kept this log's frames but
      // lost that log's tail would leave a state that was never committed.
      JKV_RETURN_IF_ERROR(
          vfs::SyncFile(logs_[other]->file(), vfs::SyncKind::kData, "V6 previous log"));
    }
  }
  JKV_ASSIGN_OR_RETURN(uint64_t chain,
                       log.Append(log_header, next_frame_, chain_, pages, commit_db_size));
  for (size_t i = 0; i < pages.size(); ++i) {
    JKV_RETURN_IF_ERROR(index_->Append(cur_, next_frame_, pages[i].page_no.value()));  // W2
    frames->push_back(next_frame_++);
  }
  chain_ = chain;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> WalStrategy::Spill(absl::Span<const wal::FramePage> pages) {
  std::vector<uint32_t> frames;
  JKV_RETURN_IF_ERROR(WriteFrames(pages, 0, &frames));
  return frames;
}

absl::StatusOr<std::vector<uint32_t>> WalStrategy::Commit(absl::Span<const wal::FramePage> pages,
                                                          uint32_t db_size) {
  JKV_DCHECK(!pages.empty() && db_size > 0);
  std::vector<uint32_t> frames;
  JKV_RETURN_IF_ERROR(WriteFrames(pages, db_size, &frames));
  commit_pages_ = db_size;
  Hook("commit:appended");
  if (options_.sync >= SyncLevel::kFull) {
    // W1: every frame of the transaction is durable before the commit is published. The log
    // is preallocated, so this flush writes data only.
    JKV_RETURN_IF_ERROR(vfs::SyncFile(logs_[cur_]->file(), vfs::SyncKind::kData, "W1 log"));
  }
  return frames;
}

WalSnapshot WalStrategy::Publish() {
  shm::LogState& state = writer_header_.logs[cur_];
  state.mx_frame = next_frame_ - 1;
  state.last_checksum = chain_;
  writer_header_.page_count = commit_pages_;  // as recovery would find it (HeaderFromScans)
  ++writer_header_.change;
  index_->WriteHeader(writer_header_);  // W2: entries first, then the header
  checked_change_ = writer_header_.change;  // its last frame is the one just written
  return SnapshotOf(writer_header_);
}

absl::Status WalStrategy::Rollback() {
  const uint32_t published = writer_header_.logs[cur_].mx_frame;
  next_frame_ = published + 1;
  chain_ = writer_header_.logs[cur_].last_checksum;
  return index_->Truncate(cur_, published);  // W2
}

void WalStrategy::EndWrite() {
  if (!write_locked_.load(std::memory_order_acquire)) return;
  base::MutexLock role(&write_role_mu_);  // W9
  write_locked_.store(false, std::memory_order_release);
  writer_thread_.store(std::thread::id(), std::memory_order_release);
  index_->Unlock(shm::ShmLock::kWrite).IgnoreError();  // closing the file drops it anyway
}

// A pin of a slot whose owner died, or of a mark nobody holds, holds nothing back (checkpoints
// skip it, SafeFrame), so the views the policy and Stats give skip it too. Costs one lock test
// per pin.
bool WalStrategy::HolderLive(int holder) {
  if (holder == OwnHolder()) return true;
  absl::StatusOr<bool> gone = index_->HolderGone(holder);
  return !gone.ok() || !*gone;
}

int WalStrategy::OwnHolder() const {
  if (slot_ >= 0) return slot_;
  const int m = mark_.load(std::memory_order_relaxed);
  return m >= 0 ? shm::kMaxSlots + m : -1;
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
absl::Status WalStrategy::CloseReadOnly() {
  if (private_ || shm_file_ == nullptr) return absl::OkStatus();
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

absl::Status WalStrategy::CloseLast() {
  if (private_) return absl::OkStatus();  // JoinFullDisk: it neither wrote nor indexed anything
  JKV_ASSIGN_OR_RETURN(WalSnapshot snap, BeginWrite(absl::Now() + options_.busy_timeout));
  (void)snap;
  absl::StatusOr<CheckpointResult> r = Checkpoint(CheckpointMode::kTruncate);
  EndWrite();
  JKV_RETURN_IF_ERROR(r.status());
  if (r->blocked) return absl::OkStatus();  // keep the log: it still holds frames
  // Everything is in the database file (C2) and the logs are empty: no file is needed.
  for (int l = 0; l < nlogs_; ++l) JKV_RETURN_IF_ERROR(fs_->Delete(log_paths_[l]));
  if (shm_file_ != nullptr) JKV_RETURN_IF_ERROR(fs_->Delete(shm_path_));
  if (options_.sync == SyncLevel::kExtra) {
    // EXTRA's promise: the removal itself durable. No guarantee needs it: a log that comes
    // back after a power loss is fully copied, and replaying it changes nothing.
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "EXTRA log removal"));
  }
  return absl::OkStatus();
}

WalStats WalStrategy::Stats() {
  WalStats s;
  {
    base::MutexLock lock(&stats_mu_);
    s = stats_;
  }
  shm::IndexHeader h;
  if (index_->ReadHeader(&h)) {
    s.log_frames = h.logs[0].mx_frame;
    s.wal2_log_frames = wal2_ ? h.logs[1].mx_frame : 0;
    s.current_log = wal2_ ? static_cast<int>(h.current_log & 1) : 0;
  }
  s.wal2 = wal2_;
  s.backfilled = index_->backfill(0);
  if (wal2_) s.wal2_backfilled = index_->backfill(1);
  uint64_t oldest = 0;
  s.overflow_reader = !private_ && slot_ < 0;
  for (int holder = 0; holder < shm::kPinHolders; ++holder) {
    const uint64_t pin = index_->holder_pin(holder, s.current_log);
    if (pin == 0 || !HolderLive(holder)) continue;
    ++s.pinned_slots;
    if (oldest == 0 || checkpoint::PinBefore(pin, oldest)) oldest = pin;
  }
  s.oldest_pin_frame = oldest == 0 ? 0 : checkpoint::PinFrame(oldest);
  for (int l = 0; l < nlogs_; ++l) {
    if (logs_[l] == nullptr) continue;
    absl::StatusOr<uint64_t> size = logs_[l]->Size();
    if (size.ok()) (l == 0 ? s.log_bytes : s.wal2_log_bytes) = *size;
  }
  return s;
}

}  // namespace journalkv::pager
