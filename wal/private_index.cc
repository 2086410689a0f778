// wal::PrivateIndex (private_index.h): the private index of a read-only connection that may
// not write the -shm, or of a read-write one whose -shm the disk cannot hold, rebuilt from the
// log(s) up to the header the -shm publishes.
#include "wal/private_index.h"

#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;  // a checkpoint's CKPT is held for microseconds per page

PrivateIndex::~PrivateIndex() {
  if (active_) {  // closing drops it too
    env_.db_file->Unlock(env_.options->private_reader_byte, 1).IgnoreError();
  }
}

absl::Status PrivateIndex::Join(const absl::Status& why, base::Mutex& pin_mu) {
  // First the lock, then wait out a checkpoint or restart that began before it (they run under
  // CKPT, which a read-only descriptor can still lock shared): every later one sees the lock.
  JKV_ASSIGN_OR_RETURN(bool locked, env_.db_file->TryLock(env_.options->private_reader_byte, 1,
                                                       vfs::LockMode::kShared));
  if (!locked) {
    return absl::UnavailableError(absl::StrCat(
        "busy: ", *env_.db_path, ": a checkpoint is deciding whether read-only readers are open"));
  }
  active_ = true;
  absl::StatusOr<std::unique_ptr<vfs::File>> shm =
      env_.fs->Open(*env_.shm_path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kShm});
  if (shm.ok()) {
    shm_ = std::move(*shm);
    constexpr uint64_t kCkpt = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kCkpt);
    const absl::Time deadline = absl::Now() + env_.options->busy_timeout;
    base::Backoff wait(deadline, kMaxWait);
    while (true) {
      JKV_ASSIGN_OR_RETURN(bool ckpt_free,
                           shm_->TryLock(kCkpt, 1, vfs::LockMode::kShared));
      if (ckpt_free) {
        JKV_RETURN_IF_ERROR(shm_->Unlock(kCkpt, 1));
        break;
      }
      if (wait.Expired()) {
        return absl::UnavailableError(
            absl::StrCat("busy: a checkpoint of ", *env_.db_path, " is running"));
      }
      wait.Sleep();
    }
  } else if (!absl::IsNotFound(shm.status())) {
    return absl::Status(shm.status().code(),
                        absl::StrCat(*env_.shm_path, ": cannot open the wal-index for writing (",
                                     why.message(), ") nor for reading (",
                                     shm.status().message(), ")"));
  }
  for (int l = 0; l < env_.nlogs; ++l) {
    absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
        wal::WalLog::Open(env_.fs, (*env_.log_paths)[l], /*read_only=*/true,
                          kGrowBytes, env_.options->log_map_bytes);
    if (log.ok()) {
      (*env_.logs)[l] = std::move(*log);
    } else if (!absl::IsNotFound(log.status())) {
      return log.status();
    }
  }
  *env_.index = shm::WalIndex::OpenHeap();
  // No other thread has this connection yet, but Refresh's state is the pin mutex's.
  // Open is never called with it held (WalStrategy::Open excludes it; the WAL family's LeaveLocked
  // holds it but opens with exclusive locking, which never joins privately).
  base::MutexLock lock(&pin_mu);
  return Refresh(pin_mu);
}

// The frames a read-only private connection may index: those the -shm publishes (frames past
// it may belong to a commit that failed and are about to be overwritten), or with no -shm (no
// other connection is open) the logs' valid prefixes.
absl::Status PrivateIndex::Refresh(const base::Mutex& pin_mu) {
  shm::IndexHeader mine;
  const bool indexed = (*env_.index)->ReadHeader(&mine);
  if (shm_ == nullptr && indexed) {
    // Without a -shm no other connection is open, so the logs cannot have changed; one that
    // opens creates the -shm and publishes what it finds (and then writes after it).
    JKV_ASSIGN_OR_RETURN(bool appeared, env_.fs->Exists(*env_.shm_path));
    if (!appeared) return absl::OkStatus();
    absl::StatusOr<std::unique_ptr<vfs::File>> shm =
        env_.fs->Open(*env_.shm_path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kShm});
    if (!shm.ok()) return absl::IsNotFound(shm.status()) ? absl::OkStatus() : shm.status();
    shm_ = std::move(*shm);
  }
  std::optional<shm::IndexHeader> published;
  if (shm_ != nullptr) {
    std::vector<uint8_t> prefix(shm::kCkptInfoOffset);
    const absl::Time deadline = absl::Now() + env_.options->busy_timeout;
    shm::IndexHeader h;
    bool unpublished = false;
    while (true) {
      absl::Status s = shm_->Read(0, absl::MakeSpan(prefix));
      if (!s.ok() && !absl::IsOutOfRange(s)) return s;
      if (s.ok() && shm::WalIndex::ParseHeader(prefix, &h)) break;
      // Shorter than its header, or header copies of zeros (with or without the layout
      // version): no connection has published anything in it (one created it and could not
      // give it disk blocks, or is initialising it from the logs, which it must finish
      // before any writer appends, or gave up initialising it for want of space for the
      // logs' index regions): as without a -shm, the logs' valid prefixes.
      if (absl::IsOutOfRange(s) ||
          std::all_of(prefix.begin() + shm::kHeaderAOffset,
                      prefix.begin() + shm::kHeaderBOffset + shm::kHeaderBytes,
                      [](uint8_t b) { return b == 0; })) {
        unpublished = true;
        break;
      }
      if (absl::Now() >= deadline) {
        return absl::UnavailableError(absl::StrCat(
            "busy: the wal-index header of ", *env_.shm_path, " is being rewritten or is damaged"));
      }
      std::this_thread::yield();
    }
    if (!unpublished) {
      if (h.change == change_ && (*env_.index)->ReadHeader(&h)) return absl::OkStatus();
      published = h;
    } else if (indexed) {
      return absl::OkStatus();  // indexed from the logs already; nobody has written since
    }
  }
  std::array<wal::ScanResult, 2> scans;
  for (int l = 0; l < env_.nlogs; ++l) {
    const bool needed = published && published->logs[l].mx_frame > 0;
    if ((*env_.logs)[l] == nullptr && needed) {
      // A connection that opened since created the log.
      absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
          wal::WalLog::Open(env_.fs, (*env_.log_paths)[l], /*read_only=*/true,
                          kGrowBytes, env_.options->log_map_bytes);
      if (log.ok()) (*env_.logs)[l] = std::move(*log);
      if (!log.ok() && !absl::IsNotFound(log.status())) return log.status();
    }
    if ((*env_.logs)[l] == nullptr) {
      if (needed) {
        return absl::DataLossError(absl::StrCat((*env_.log_paths)[l], " is missing but ", *env_.shm_path,
                                                " says it holds commits"));
      }
      continue;
    }
    JKV_ASSIGN_OR_RETURN(scans[l], (*env_.logs)[l]->Scan(env_.page_size, shm::MaxLogFrames()));
  }
  shm::IndexHeader h;
  if (published) {
    h = *published;
    for (int l = 0; l < env_.nlogs; ++l) {
      const shm::LogState& p = h.logs[l];
      const wal::ScanResult& scan = scans[l];
      const bool same_log = p.mx_frame == 0 || (scan.header_valid &&
                                                scan.header.ckpt_seq == p.ckpt_seq &&
                                                scan.header.salt1 == p.salt1 &&
                                                scan.header.salt2 == p.salt2);
      if (!same_log || scan.mx_frame < p.mx_frame) {
        return absl::DataLossError(absl::StrCat((*env_.log_paths)[l], " does not hold the ", p.mx_frame,
                                                " frames ", *env_.shm_path, " publishes"));
      }
      if (indexed && mine.logs[l].mx_frame > 0 && mine.logs[l].ckpt_seq != p.ckpt_seq) {
        // Restarts wait for this connection (WalOptions::private_reader_byte): this is not one of ours.
        return absl::DataLossError(
            absl::StrCat((*env_.log_paths)[l], " restarted under a read-only reader"));
      }
    }
  } else {
    h = env_.recovery->HeaderFromScans(scans, indexed ? &mine : nullptr);
    h.change = indexed ? mine.change + 1 : 1;
    if (h.page_count == 0) {
      JKV_ASSIGN_OR_RETURN(uint64_t bytes, env_.db_file->Size());
      h.page_count = static_cast<uint32_t>(bytes / env_.page_size);
    }
  }
  // Append only the new frames: this connection's open snapshots keep reading the old ones.
  for (int l = 0; l < env_.nlogs; ++l) {
    const uint32_t from = indexed ? mine.logs[l].mx_frame : 0;
    if (h.logs[l].mx_frame < from) {
      return absl::DataLossError(
          absl::StrCat((*env_.log_paths)[l], " lost frames under a read-only reader"));
    }
    for (uint32_t f = from + 1; f <= h.logs[l].mx_frame; ++f) {
      JKV_RETURN_IF_ERROR((*env_.index)->Append(l, f, scans[l].pages[f - 1]));
    }
  }
  (*env_.index)->WriteHeader(h);  // U2: the heap index; nothing is published
  change_ = h.change;
  built_from_ = h;  // U1
  CheckInvariants(pin_mu);
  return absl::OkStatus();
}

// The -shm's pages could not get their disk blocks (vfs: MapSharedRegion allocates them, so that
// a store never faults): the connection reads through a private index, as a read-only one
// without write access to the -shm does, and refuses writes and checkpoints, which a full disk
// could not take anyway. It holds no lock on the -shm, so it is not counted by anyone.
absl::Status PrivateIndex::JoinFullDisk(const absl::Status& why, base::Mutex& pin_mu) {
  constexpr uint64_t kDms = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kDms);
  std::unique_ptr<vfs::File>& shm_file = *env_.shm_file;
  shm_file->Unlock(kDms, 1).IgnoreError();  // closing the file drops it anyway
  shm_file.reset();
  for (std::unique_ptr<WalLog>& log : *env_.logs) log.reset();
  reason_ = absl::StrCat("the disk is full: ", why.message(),
                         "; this connection reads only until there is space");
  return Join(why, pin_mu);
}

bool PrivateIndex::DiskFull(const absl::Status& s) {
  return absl::IsResourceExhausted(s);  // busy is Unavailable
}

// A read-only connection that joined without log `log`: a writer has since created it and
// published frames in it, so it exists (only the last connection removes it, and this one is
// open).
absl::Status PrivateIndex::OpenLogForReading(int log, const base::Mutex& pin_mu) {
  (void)pin_mu;  // the analysis's: the logs array is read under it
  absl::StatusOr<std::unique_ptr<WalLog>> opened =
      WalLog::Open(env_.fs, (*env_.log_paths)[log], /*read_only=*/true, kGrowBytes,
                   env_.options->log_map_bytes);
  if (!opened.ok()) {
    return absl::Status(opened.status().code(),
                        absl::StrCat("the wal-index publishes frames, but ",
                                     (*env_.log_paths)[log],
                                     " cannot be opened: ", opened.status().message()));
  }
  (*env_.logs)[log] = std::move(*opened);
  return absl::OkStatus();
}

void PrivateIndex::CheckInvariants(const base::Mutex& pin_mu) const {
  (void)pin_mu;  // the analysis's
#if JKV_DCHECK_IS_ON
  if (!active_) return;
  // U2: nothing shared is written: no -shm open for writing, the index the heap one.
  JKV_DCHECK(*env_.shm_file == nullptr);
  JKV_DCHECK(*env_.index != nullptr);
  // U1: the index is the header it was built from, no frame past it.
  shm::IndexHeader mine;
  JKV_DCHECK((*env_.index)->ReadHeader(&mine));
  JKV_DCHECK(mine.change == change_);
  for (int l = 0; l < env_.nlogs; ++l) {
    JKV_DCHECK(mine.logs[l].ckpt_seq == built_from_.logs[l].ckpt_seq);
    JKV_DCHECK(mine.logs[l].mx_frame == built_from_.logs[l].mx_frame);
  }
#endif
}

absl::Status PrivateIndex::CheckCanCheckpoint() const {
  if (!active_) return absl::OkStatus();
  if (!reason_.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(*env_.db_path, ": ", reason_));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      *env_.db_path, ": a read-only connection without write access to ", *env_.shm_path,
      " cannot checkpoint"));
}

bool PrivateIndex::NoPrivateReaders() const {
  absl::StatusOr<bool> free =
      env_.db_file->CanLock(env_.options->private_reader_byte, 1, vfs::LockMode::kExclusive);
  return free.ok() && *free;
}

}  // namespace journalkv::wal
