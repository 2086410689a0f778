#include "pager/wal_strategy.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/db_lock.h"
#include "vfs/sync.h"

namespace journalkv::pager {
namespace {

using checkpoint::CheckpointMode;
using checkpoint::CheckpointResult;

constexpr absl::Duration kMaxWait = absl::Microseconds(250);
// A reader that finds the two header copies different retries this often before it suspects
// that the publishing writer died (the copies differ for the few nanoseconds of a publish).
constexpr int kTornHeaderSpins = 1000;

std::atomic<WalHook> wal_hook{nullptr};

void Hook(const char* point) { CallWalHook(point); }

void Sleep(absl::Duration& sleep) {
  std::this_thread::sleep_for(absl::ToChronoMicroseconds(sleep));
  sleep = std::min(sleep * 2, kMaxWait);
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

WalStrategy::WalStrategy(vfs::FileSystem* fs, std::string db_path, vfs::File* db_file,
                         uint32_t page_size, const PagerOptions& options)
    : fs_(fs),
      db_path_(std::move(db_path)),
      wal_path_(db_path_ + "-wal"),
      shm_path_(db_path_ + "-shm"),
      db_file_(db_file),
      page_size_(page_size),
      options_(options) {}

WalStrategy::~WalStrategy() {
  if (private_) db_file_->Unlock(kPrivateReaderByte, 1).IgnoreError();  // closing drops it too
  if (index_ != nullptr && slot_ >= 0) {
    index_->set_pin(slot_, 0, 0);
    index_->UnlockSlot(slot_).IgnoreError();  // closing the file drops it anyway
  }
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
  JKV_ASSIGN_OR_RETURN(bool log_existed, fs_->Exists(wal_path_));
  absl::StatusOr<std::unique_ptr<wal::WalLog>> log = wal::WalLog::Open(fs_, wal_path_, read_only);
  if (read_only && absl::IsNotFound(log.status())) {
    // No log (the last connection removed it): the database file holds every commit. A
    // read-only connection cannot create the log; it opens it at the first snapshot that has
    // frames, which a writer that created it has published (OpenLogForReading).
  } else {
    JKV_RETURN_IF_ERROR(log.status());
    log_ = std::move(*log);
  }
  if (!log_existed && !read_only && options_.sync != SyncLevel::kOff) {
    // W5: the new log's directory entry is durable before any frame in it is relied on.
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));
  }
  constexpr uint64_t kDms = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kDms);
  absl::Duration sleep = absl::Microseconds(20);
  while (true) {
    JKV_ASSIGN_OR_RETURN(bool alone, shm_file_->TryLock(kDms, 1, vfs::LockMode::kExclusive));
    if (alone) {
      // No other connection has the index mapped: start it afresh from the log (W6).
      JKV_ASSIGN_OR_RETURN(index_, shm::WalIndex::OpenShared(shm_file_.get(), true));
      JKV_ASSIGN_OR_RETURN(bool w, index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
      JKV_ASSIGN_OR_RETURN(bool r,
                           index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
      JKV_CHECK(w && r);  // DMS exclusive: no other connection holds any lock
      absl::Status s = RecoverIndex();
      index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
      JKV_RETURN_IF_ERROR(s);
      JKV_ASSIGN_OR_RETURN(bool shared, shm_file_->TryLock(kDms, 1, vfs::LockMode::kShared));
      JKV_CHECK(shared);  // converting our own exclusive lock
      return absl::OkStatus();
    }
    JKV_ASSIGN_OR_RETURN(bool joined, shm_file_->TryLock(kDms, 1, vfs::LockMode::kShared));
    if (joined) {
      absl::StatusOr<std::unique_ptr<shm::WalIndex>> index =
          shm::WalIndex::OpenShared(shm_file_.get(), false);
      if (index.ok()) {
        index_ = std::move(*index);
        return absl::OkStatus();
      }
      if (!absl::IsUnavailable(index.status())) return index.status();
      // Not initialised: its initialiser died before finishing. Let go and look again (alone,
      // this connection initialises it).
      JKV_RETURN_IF_ERROR(shm_file_->Unlock(kDms, 1));
      if (absl::Now() >= deadline) {
        return absl::FailedPreconditionError(index.status().message());
      }
    }
    if (absl::Now() >= deadline) {
      return absl::ResourceExhaustedError(
          absl::StrCat("busy: another connection is initialising ", shm_path_));
    }
    Sleep(sleep);
  }
}


// Exclusive locking: the caller holds the database file EXCLUSIVE for the connection's life,
// so the index can live on the heap and be rebuilt from the log here (W6).
absl::Status WalStrategy::JoinExclusive() {
  JKV_ASSIGN_OR_RETURN(bool log_existed, fs_->Exists(wal_path_));
  JKV_ASSIGN_OR_RETURN(log_, wal::WalLog::Open(fs_, wal_path_, /*read_only=*/false));
  if (!log_existed && options_.sync != SyncLevel::kOff) {
    JKV_RETURN_IF_ERROR(vfs::SyncDir(*fs_, wal_path_, "W5 log directory"));  // W5
  }
  index_ = shm::WalIndex::OpenHeap();
  return RecoverIndex();
}

absl::Status WalStrategy::JoinPrivate(const absl::Status& why) {
  // First the lock, then wait out a checkpoint or restart that began before it (they run under
  // CKPT, which a read-only descriptor can still lock shared): every later one sees the lock.
  JKV_ASSIGN_OR_RETURN(bool locked, db_file_->TryLock(kPrivateReaderByte, 1,
                                                       vfs::LockMode::kShared));
  if (!locked) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "busy: ", db_path_, ": a checkpoint is deciding whether read-only readers are open"));
  }
  private_ = true;
  absl::StatusOr<std::unique_ptr<vfs::File>> shm =
      fs_->Open(shm_path_, {vfs::OpenMode::kReadOnly, vfs::FileKind::kShm});
  if (shm.ok()) {
    private_shm_ = std::move(*shm);
    constexpr uint64_t kCkpt = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kCkpt);
    const absl::Time deadline = absl::Now() + options_.busy_timeout;
    absl::Duration sleep = absl::Microseconds(20);
    while (true) {
      JKV_ASSIGN_OR_RETURN(bool ckpt_free,
                           private_shm_->TryLock(kCkpt, 1, vfs::LockMode::kShared));
      if (ckpt_free) {
        JKV_RETURN_IF_ERROR(private_shm_->Unlock(kCkpt, 1));
        break;
      }
      if (absl::Now() >= deadline) {
        return absl::ResourceExhaustedError(
            absl::StrCat("busy: a checkpoint of ", db_path_, " is running"));
      }
      Sleep(sleep);
    }
  } else if (!absl::IsNotFound(shm.status())) {
    return absl::Status(shm.status().code(),
                        absl::StrCat(shm_path_, ": cannot open the wal-index for writing (",
                                     why.message(), ") nor for reading (",
                                     shm.status().message(), ")"));
  }
  absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
      wal::WalLog::Open(fs_, wal_path_, /*read_only=*/true);
  if (log.ok()) {
    log_ = std::move(*log);
  } else if (!absl::IsNotFound(log.status())) {
    return log.status();
  }
  index_ = shm::WalIndex::OpenHeap();
  return RefreshPrivate();
}

// The frames a read-only private connection may index: those the -shm publishes (frames past
// it may belong to a commit that failed and are about to be overwritten), or with no -shm (no
// other connection is open) the log's valid prefix.
absl::Status WalStrategy::RefreshPrivate() {
  shm::IndexHeader mine;
  const bool indexed = index_->ReadHeader(&mine);
  if (private_shm_ == nullptr && indexed) {
    // Without a -shm no other connection is open, so the log cannot have changed; one that
    // opens creates the -shm and publishes what it finds (and then writes after it).
    JKV_ASSIGN_OR_RETURN(bool appeared, fs_->Exists(shm_path_));
    if (!appeared) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<vfs::File>> shm =
        fs_->Open(shm_path_, {vfs::OpenMode::kReadOnly, vfs::FileKind::kShm});
    if (!shm.ok()) return absl::IsNotFound(shm.status()) ? absl::OkStatus() : shm.status();
    private_shm_ = std::move(*shm);
  }
  std::optional<shm::IndexHeader> published;
  if (private_shm_ != nullptr) {
    std::vector<uint8_t> prefix(shm::kCkptInfoOffset);
    const absl::Time deadline = absl::Now() + options_.busy_timeout;
    shm::IndexHeader h;
    while (true) {
      absl::Status s = private_shm_->Read(0, absl::MakeSpan(prefix));
      if (!s.ok() && !absl::IsOutOfRange(s)) return s;
      if (s.ok() && shm::WalIndex::ParseHeader(prefix, &h)) break;
      if (absl::Now() >= deadline) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "busy: the wal-index header of ", shm_path_, " is being rewritten or is damaged"));
      }
      std::this_thread::yield();
    }
    if (h.change == private_change_ && index_->ReadHeader(&h)) return absl::OkStatus();
    published = h;
  }
  if (log_ == nullptr && published && published->logs[0].mx_frame > 0) {
    // A connection that opened since created the log.
    absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
        wal::WalLog::Open(fs_, wal_path_, /*read_only=*/true);
    if (log.ok()) log_ = std::move(*log);
  }
  if (log_ == nullptr) {
    if (published && published->logs[0].mx_frame > 0) {
      return absl::DataLossError(absl::StrCat(wal_path_, " is missing but ", shm_path_,
                                              " says it holds commits"));
    }
    if (!indexed) {
      shm::IndexHeader h;
      h.change = 1;
      h.page_size = page_size_;
      JKV_ASSIGN_OR_RETURN(uint64_t bytes, db_file_->Size());
      h.page_count = static_cast<uint32_t>(bytes / page_size_);
      index_->WriteHeader(h);
    }
    return absl::OkStatus();
  }
  JKV_ASSIGN_OR_RETURN(wal::ScanResult scan, log_->Scan(page_size_));
  shm::IndexHeader h;
  if (published) {
    h = *published;
    const shm::LogState& p = h.logs[0];
    const bool same_log = p.mx_frame == 0 || (scan.header_valid &&
                                              scan.header.ckpt_seq == p.ckpt_seq &&
                                              scan.header.salt1 == p.salt1 &&
                                              scan.header.salt2 == p.salt2);
    if (!same_log || scan.mx_frame < p.mx_frame) {
      return absl::DataLossError(absl::StrCat(wal_path_, " does not hold the ", p.mx_frame,
                                              " frames ", shm_path_, " publishes"));
    }
    if (indexed && mine.logs[0].mx_frame > 0 && mine.logs[0].ckpt_seq != p.ckpt_seq) {
      // Restarts wait for this connection (kPrivateReaderByte): this is not one of ours.
      return absl::DataLossError(absl::StrCat(wal_path_, " restarted under a read-only reader"));
    }
  } else {
    h.change = indexed ? mine.change + 1 : 1;
    h.page_size = page_size_;
    h.page_count = scan.db_size;
    if (scan.mx_frame == 0) {
      JKV_ASSIGN_OR_RETURN(uint64_t bytes, db_file_->Size());
      h.page_count = static_cast<uint32_t>(bytes / page_size_);
    }
    if (scan.header_valid) {
      h.logs[0] = {scan.header.ckpt_seq, scan.header.salt1, scan.header.salt2, scan.mx_frame,
                   scan.last_checksum};
    }
  }
  // Append only the new frames: this connection's open snapshots keep reading the old ones.
  const uint32_t from = indexed ? mine.logs[0].mx_frame : 0;
  for (uint32_t f = from + 1; f <= h.logs[0].mx_frame; ++f) {
    JKV_RETURN_IF_ERROR(index_->Append(0, f, scan.pages[f - 1]));
  }
  if (indexed && h.logs[0].mx_frame < from) {
    return absl::DataLossError(absl::StrCat(wal_path_, " lost frames under a read-only reader"));
  }
  index_->WriteHeader(h);
  private_change_ = h.change;
  return absl::OkStatus();
}

bool WalStrategy::RestartAllowed() {
  absl::StatusOr<bool> free = db_file_->CanLock(kPrivateReaderByte, 1, vfs::LockMode::kExclusive);
  return free.ok() && *free;
}

absl::Status WalStrategy::ClaimSlot() {
  for (int slot = 0; slot < shm::kMaxSlots; ++slot) {
    JKV_ASSIGN_OR_RETURN(bool mine, index_->TryLockSlot(slot));
    if (!mine) continue;
    slot_ = slot;
    index_->set_pin(slot, 0, 0);  // a dead owner's pin
    index_->set_pin(slot, 1, 0);
    index_->set_owner(slot, RandomId());
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      shm_path_, ": too many connections: all ", shm::kMaxSlots, " reader slots are in use"));
}

// W6. Rebuilds the index from the log: the valid prefix of the log is the truth.
absl::Status WalStrategy::RecoverIndex() {
  wal::ScanResult scan;  // no log file (a read-only connection found none): an empty log
  if (log_ != nullptr) {
    JKV_ASSIGN_OR_RETURN(scan, log_->Scan(page_size_));
  }
  if (scan.mx_frame > 0 && options_.sync >= SyncLevel::kFull) {
    // W6: frames a crashed writer wrote but never synced are about to be published: make them
    // durable first, so that what readers see from now on survives a power loss (and a FULL
    // checkpoint, which relies on W1 for published frames, never copies a frame the log can
    // still lose).
    JKV_RETURN_IF_ERROR(vfs::SyncFile(log_->file(), vfs::SyncKind::kData, "W6 log at recovery"));
  }
  shm::IndexHeader old;
  const bool had_header = index_->ReadHeader(&old);
  JKV_RETURN_IF_ERROR(index_->Truncate(0, 0));
  for (uint32_t f = 1; f <= scan.mx_frame; ++f) {
    JKV_RETURN_IF_ERROR(index_->Append(0, f, scan.pages[f - 1]));
  }
  shm::IndexHeader h;
  // A fresh change word, so that no connection mistakes the rebuilt state for one it cached.
  h.change = had_header ? old.change + 1 : static_cast<uint32_t>(RandomId());
  h.page_size = page_size_;
  h.page_count = scan.db_size;
  h.current_log = 0;
  if (scan.header_valid) {
    h.logs[0] = {scan.header.ckpt_seq, scan.header.salt1, scan.header.salt2, scan.mx_frame,
                 scan.last_checksum};
  } else {
    // No usable log: the next writer starts a generation after the highest one seen.
    const uint32_t seq = had_header ? old.logs[0].ckpt_seq : 0;
    h.logs[0] = {seq, 0, 0, 0, 0};
    h.logs[0].mx_frame = 0;
  }
  index_->set_backfill(0, 0);  // copying again is harmless; what was copied is unknown
  index_->set_ckpt_target(0, checkpoint::EncodeTarget(h.logs[0].ckpt_seq, 0));
  index_->WriteHeader(h);
  if (scan.mx_frame > 0) {
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
    return index_->Truncate(0, h.logs[0].mx_frame);  // a dead writer's unpublished entries
  }
  return RecoverIndex();
}

// Reads the published header; a header that stays torn means a process died publishing it,
// and the index is rebuilt (W6) unless this connection's own writer is active.
absl::StatusOr<shm::IndexHeader> WalStrategy::ReadHeaderOrRecover(absl::Time deadline,
                                                                  bool may_recover) {
  shm::IndexHeader h;
  absl::Duration sleep = absl::Microseconds(20);
  while (true) {
    for (int i = 0; i < kTornHeaderSpins; ++i) {
      if (index_->ReadHeader(&h)) return h;
    }
    if (may_recover || write_locked_) {
      bool write = write_locked_;
      if (!write) {
        JKV_ASSIGN_OR_RETURN(write, index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
      }
      if (write) {
        absl::Status s;
        JKV_ASSIGN_OR_RETURN(bool r,
                             index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive));
        if (r) {
          if (!index_->ReadHeader(&h)) s = RepairHeader();
          index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
        }
        if (!write_locked_) index_->Unlock(shm::ShmLock::kWrite).IgnoreError();
        JKV_RETURN_IF_ERROR(s);
        continue;
      }
    }
    if (absl::Now() >= deadline) {
      return absl::ResourceExhaustedError(
          absl::StrCat("busy: the wal-index header of ", shm_path_, " is being rewritten"));
    }
    Sleep(sleep);
  }
}

void WalStrategy::SetPin(uint64_t pin) { index_->set_pin(slot_, 0, pin); }

// W3: no system call. The pin is stored before the generation and the checkpoint target are
// read again (seq_cst on both sides), so either a checkpoint sees the pin or this reader sees
// the checkpoint's target.
absl::StatusOr<WalSnapshot> WalStrategy::BeginRead(absl::Time deadline, bool writer_active) {
  if (private_) {
    // No pin: kPrivateReaderByte keeps every checkpoint and restart out.
    JKV_RETURN_IF_ERROR(RefreshPrivate());
    shm::IndexHeader h;
    if (!index_->ReadHeader(&h)) return absl::InternalError("private wal-index header torn");
    return WalSnapshot{h.logs[0].ckpt_seq, h.logs[0].mx_frame, h.change, h.page_count};
  }
  while (true) {
    JKV_ASSIGN_OR_RETURN(shm::IndexHeader h, ReadHeaderOrRecover(deadline, !writer_active));
    WalSnapshot snap{h.logs[0].ckpt_seq, h.logs[0].mx_frame, h.change, h.page_count};
    if (log_ == nullptr && snap.mx > 0) JKV_RETURN_IF_ERROR(OpenLogForReading());
    const uint64_t pin = snap.pin();
    const uint64_t held = open_pins_.empty() ? 0 : open_pins_.begin()->first;
    if (held != 0 && held <= pin) {
      // An older snapshot of this connection already holds every checkpoint below `pin`.
      open_pins_.emplace(pin, 0);
      Hook("begin_read:done");
      return snap;
    }
    SetPin(pin);
    Hook("begin_read:pinned");
    shm::IndexHeader again;
    const uint64_t target = index_->ckpt_target(0);
    const bool same_generation =
        index_->ReadHeader(&again) && again.logs[0].ckpt_seq == snap.seq;
    const bool target_past = (target >> 32) == snap.seq && static_cast<uint32_t>(target) > snap.mx;
    if (same_generation && !target_past && index_->backfill(0) <= snap.mx) {
      open_pins_.emplace(pin, 0);
      Hook("begin_read:done");
      return snap;
    }
    SetPin(held);  // a checkpoint may be copying past this snapshot: take a newer one
    if (absl::Now() >= deadline) {
      return absl::ResourceExhaustedError("busy: could not pin a snapshot of the log");
    }
  }
}

// A read-only connection that joined with no log: a writer has since created it and published
// frames in it, so it exists (only the last connection removes it, and this one is open).
absl::Status WalStrategy::OpenLogForReading() {
  absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
      wal::WalLog::Open(fs_, wal_path_, /*read_only=*/true);
  if (!log.ok()) {
    return absl::Status(log.status().code(),
                        absl::StrCat("the wal-index publishes frames, but ", wal_path_,
                                     " cannot be opened: ", log.status().message()));
  }
  log_ = std::move(*log);
  return absl::OkStatus();
}

void WalStrategy::EndRead(const WalSnapshot& snapshot) {
  if (private_) return;
  auto it = open_pins_.find(snapshot.pin());
  JKV_DCHECK(it != open_pins_.end());
  if (it == open_pins_.end()) return;
  const bool was_oldest = it == open_pins_.begin();
  open_pins_.erase(it);
  if (was_oldest) SetPin(open_pins_.empty() ? 0 : open_pins_.begin()->first);
}

absl::StatusOr<PageVersion> WalStrategy::Locate(const WalSnapshot& snapshot, PageNo page_no) {
  PageVersion v;
  v.key = uint64_t{snapshot.seq} << 32;
  if (snapshot.mx == 0) return v;
  JKV_ASSIGN_OR_RETURN(v.frame, index_->Lookup(0, page_no.value(), snapshot.mx));
  if (!index_->GenerationIs(0, snapshot.seq)) {
    // W7: the log restarted; the lookup may have read the next generation's entries. The
    // database file holds this snapshot.
    return PageVersion{0, 0, false};
  }
  v.key |= v.frame;
  return v;
}

absl::Status WalStrategy::ReadPage(const WalSnapshot& snapshot, PageNo page_no,
                                   PageVersion* version, absl::Span<uint8_t> out) {
  const uint64_t offset = uint64_t{page_no.value() - 1} * page_size_;
  if (version->frame == 0) return db_file_->Read(offset, out);
  absl::Status s = log_->ReadPage(version->frame, page_size_, out);
  if (index_->GenerationIs(0, snapshot.seq)) return s;
  // W7: the frame may have been overwritten (or cut) by the next generation.
  version->frame = 0;
  version->cacheable = false;
  return db_file_->Read(offset, out);
}

absl::StatusOr<WalSnapshot> WalStrategy::BeginWrite(absl::Time deadline) {
  JKV_DCHECK(!write_locked_);
  absl::Duration sleep = absl::Microseconds(20);
  while (true) {
    JKV_ASSIGN_OR_RETURN(write_locked_,
                         index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
    if (write_locked_) break;
    if (absl::Now() >= deadline) {
      return absl::ResourceExhaustedError("busy: another connection is writing the database");
    }
    Sleep(sleep);
  }
  absl::StatusOr<shm::IndexHeader> h = ReadHeaderOrRecover(deadline, true);
  absl::Status s = h.status();
  // W7. A generation with no frames restarts too, so that every generation the writer writes
  // has salts of its own (a rebuilt index may describe a log whose header was lost).
  if (s.ok() && index_->backfill(0) == h->logs[0].mx_frame) s = MaybeRestart(*h);
  if (s.ok()) s = index_->Truncate(0, h->logs[0].mx_frame);  // W2
  if (!s.ok()) {
    EndWrite();
    return s;
  }
  writer_header_ = *h;
  next_frame_ = h->logs[0].mx_frame + 1;
  chain_ = h->logs[0].last_checksum;
  Hook("begin_write:locked");
  return WalSnapshot{h->logs[0].ckpt_seq, h->logs[0].mx_frame, h->change, h->page_count};
}

// W7. The restart also takes the CKPT lock (without waiting: a running checkpoint means the
// log is simply not restarted this time), because a checkpoint reads the header and then the
// backfill, and must not pair one generation's mx_frame with the next one's backfill.
absl::Status WalStrategy::MaybeRestart(shm::IndexHeader& header) {
  // This connection's own checkpoint (the background checkpointer's, say) is waited for: every
  // frame is copied and no commit can start meanwhile, so it has nothing left to copy and ends
  // at once. Skipping the restart instead would let a checkpointer that runs after every commit
  // keep the log from ever restarting.
  ckpt_mu_.Lock();
  absl::Status s;
  absl::StatusOr<bool> locked = index_->TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive);
  if (!locked.ok()) s = locked.status();
  if (locked.ok() && *locked) {
    // A read-only private reader's frames must stay where they are.
    if (index_->backfill(0) == header.logs[0].mx_frame && RestartAllowed()) {
      s = checkpoint::RestartLog(*index_, header);
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
  const wal::WalHeader log_header = checkpoint::LogHeaderFor(writer_header_, 0);
  if (next_frame_ == 1) {
    JKV_ASSIGN_OR_RETURN(uint64_t seed, log_->WriteHeader(log_header));
    JKV_DCHECK(seed == writer_header_.logs[0].last_checksum);
    chain_ = seed;
    if (options_.sync != SyncLevel::kOff) {
      // W4: the new generation's header is durable before any of its frames is written.
      JKV_RETURN_IF_ERROR(vfs::SyncFile(log_->file(), vfs::SyncKind::kData, "W4 log header"));
    }
  }
  JKV_ASSIGN_OR_RETURN(uint64_t chain,
                       log_->Append(log_header, next_frame_, chain_, pages, commit_db_size));
  for (size_t i = 0; i < pages.size(); ++i) {
    JKV_RETURN_IF_ERROR(index_->Append(0, next_frame_, pages[i].page_no.value()));  // W2
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
  Hook("commit:appended");
  if (options_.sync >= SyncLevel::kFull) {
    // W1: every frame of the transaction is durable before the commit is published. The log
    // is preallocated, so this flush writes data only.
    JKV_RETURN_IF_ERROR(vfs::SyncFile(log_->file(), vfs::SyncKind::kData, "W1 log"));
  }
  return frames;
}

WalSnapshot WalStrategy::Publish() {
  shm::LogState& state = writer_header_.logs[0];
  state.mx_frame = next_frame_ - 1;
  state.last_checksum = chain_;
  ++writer_header_.change;
  index_->WriteHeader(writer_header_);  // W2: entries first, then the header
  return WalSnapshot{state.ckpt_seq, state.mx_frame, writer_header_.change,
                     writer_header_.page_count};
}

absl::Status WalStrategy::Rollback() {
  const uint32_t published = writer_header_.logs[0].mx_frame;
  next_frame_ = published + 1;
  chain_ = writer_header_.logs[0].last_checksum;
  return index_->Truncate(0, published);  // W2
}

void WalStrategy::EndWrite() {
  if (!write_locked_) return;
  write_locked_ = false;
  index_->Unlock(shm::ShmLock::kWrite).IgnoreError();  // closing the file drops it anyway
}

checkpoint::CheckpointFiles WalStrategy::Files() {
  checkpoint::CheckpointFiles f;
  f.index = index_.get();
  f.log = log_.get();
  f.db = db_file_;
  f.page_size = page_size_;
  f.sync_log_before_copy = options_.sync == SyncLevel::kNormal;
  f.sync_db = options_.sync != SyncLevel::kOff;
  f.busy_timeout = options_.busy_timeout;
  f.own_slot = slot_;
  f.private_reader_lock = kPrivateReaderByte;
  return f;
}

absl::StatusOr<CheckpointResult> WalStrategy::Checkpoint(CheckpointMode mode,
                                                         const std::atomic<bool>* stop,
                                                         bool defer) {
  if (private_) {
    return absl::FailedPreconditionError(absl::StrCat(
        db_path_, ": a read-only connection without write access to ", shm_path_,
        " cannot checkpoint"));
  }
  JKV_DCHECK(mode == CheckpointMode::kPassive || write_locked_);
  base::MutexLock lock(&ckpt_mu_);
  checkpoint::CheckpointFiles files = Files();
  files.stop = stop;
  // Every checkpoint of this connection starts past its own unpublished copy; only a deferred
  // one may leave its copy unpublished, and only where published frames are durable (W1).
  files.deferred = &deferred_;
  files.publish = !(defer && mode == CheckpointMode::kPassive && options_.sync >= SyncLevel::kFull);
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, checkpoint::Checkpoint(files, mode));
  base::MutexLock stats(&stats_mu_);
  ++stats_.checkpoints;
  stats_.frames_copied += r.copied;
  if (r.restarted) ++stats_.log_restarts;
  stats_.checkpoint_lock_wait += r.lock_wait;
  stats_.checkpoint_work += r.work;
  stats_.checkpoint_syncs += r.syncs;
  return r;
}

WalProgress WalStrategy::Progress() {
  WalProgress p;
  shm::IndexHeader h;
  // The copies disagree only while a writer publishes: a few tries see them agree.
  bool read = index_->ReadHeader(&h);
  for (int i = 0; i < 1000 && !read; ++i) {
    std::this_thread::yield();
    read = index_->ReadHeader(&h);
  }
  if (read) {
    p.seq = h.logs[0].ckpt_seq;
    p.log_frames = h.logs[0].mx_frame;
  }
  p.backfilled = index_->backfill(0);
  p.live_frames = p.backfilled >= p.log_frames ? 0 : p.log_frames;
  return p;
}

checkpoint::LogSnapshot WalStrategy::PolicyView() {
  const WalProgress p = Progress();
  checkpoint::LogSnapshot log;
  log.log_frames = p.log_frames;
  log.uncopied = p.log_frames - std::min(p.backfilled, p.log_frames);
  log.live_frames = p.live_frames;
  uint32_t oldest = p.log_frames;
  for (int slot = 0; slot < shm::kMaxSlots; ++slot) {
    const uint64_t pin = index_->pin(slot, 0);
    if (pin == 0) continue;
    ++log.active_readers;
    // A pin of an older generation holds the checkpoint at the backfill (checkpointer.h).
    const bool current = checkpoint::PinSeq(pin) == (p.seq & 0x7fffffffu);
    oldest = std::min(oldest, current ? checkpoint::PinFrame(pin) : p.backfilled);
  }
  log.pinned_back = p.log_frames - std::min(oldest, p.log_frames);
  return log;
}

absl::Status WalStrategy::CloseLast() {
  JKV_ASSIGN_OR_RETURN(WalSnapshot snap, BeginWrite(absl::Now() + options_.busy_timeout));
  (void)snap;
  absl::StatusOr<CheckpointResult> r = Checkpoint(CheckpointMode::kTruncate);
  EndWrite();
  JKV_RETURN_IF_ERROR(r.status());
  if (r->blocked) return absl::OkStatus();  // keep the log: it still holds frames
  // Everything is in the database file (C2) and the log is empty: neither file is needed.
  JKV_RETURN_IF_ERROR(fs_->Delete(wal_path_));
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
  if (index_->ReadHeader(&h)) s.log_frames = h.logs[0].mx_frame;
  s.backfilled = index_->backfill(0);
  uint64_t oldest = 0;
  for (int slot = 0; slot < shm::kMaxSlots; ++slot) {
    const uint64_t pin = index_->pin(slot, 0);
    if (pin == 0) continue;
    ++s.pinned_slots;
    if (oldest == 0 || pin < oldest) oldest = pin;
  }
  s.oldest_pin_frame = oldest == 0 ? 0 : checkpoint::PinFrame(oldest);
  if (log_ != nullptr) {
    absl::StatusOr<uint64_t> size = log_->Size();
    if (size.ok()) s.log_bytes = *size;
  }
  return s;
}

}  // namespace journalkv::pager
