// WAL and WAL2 for a read-only connection that may not write the -shm file: a private index
// on the heap, rebuilt from the log(s) up to the header the -shm publishes (wal_connection.h,
// JoinPrivate).
#include <algorithm>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/status_macros.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;  // a checkpoint's CKPT is held for microseconds per page

absl::Status WalConnection::JoinPrivate(const absl::Status& why) {
  // First the lock, then wait out a checkpoint or restart that began before it (they run under
  // CKPT, which a read-only descriptor can still lock shared): every later one sees the lock.
  JKV_ASSIGN_OR_RETURN(bool locked, db_file_->TryLock(options_.private_reader_byte, 1,
                                                       vfs::LockMode::kShared));
  if (!locked) {
    return absl::UnavailableError(absl::StrCat(
        "busy: ", db_path_, ": a checkpoint is deciding whether read-only readers are open"));
  }
  private_ = true;
  absl::StatusOr<std::unique_ptr<vfs::File>> shm =
      fs_->Open(shm_path_, {vfs::OpenMode::kReadOnly, vfs::FileKind::kShm});
  if (shm.ok()) {
    private_shm_ = std::move(*shm);
    constexpr uint64_t kCkpt = shm::kLockBase + static_cast<uint64_t>(shm::ShmLock::kCkpt);
    const absl::Time deadline = absl::Now() + options_.busy_timeout;
    base::Backoff wait(deadline, kMaxWait);
    while (true) {
      JKV_ASSIGN_OR_RETURN(bool ckpt_free,
                           private_shm_->TryLock(kCkpt, 1, vfs::LockMode::kShared));
      if (ckpt_free) {
        JKV_RETURN_IF_ERROR(private_shm_->Unlock(kCkpt, 1));
        break;
      }
      if (wait.Expired()) {
        return absl::UnavailableError(
            absl::StrCat("busy: a checkpoint of ", db_path_, " is running"));
      }
      wait.Sleep();
    }
  } else if (!absl::IsNotFound(shm.status())) {
    return absl::Status(shm.status().code(),
                        absl::StrCat(shm_path_, ": cannot open the wal-index for writing (",
                                     why.message(), ") nor for reading (",
                                     shm.status().message(), ")"));
  }
  for (int l = 0; l < nlogs_; ++l) {
    absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
        wal::WalLog::Open(fs_, log_paths_[l], /*read_only=*/true);
    if (log.ok()) {
      logs_[l] = std::move(*log);
    } else if (!absl::IsNotFound(log.status())) {
      return log.status();
    }
  }
  index_ = shm::WalIndex::OpenHeap();
  // No other thread has this connection yet, but RefreshPrivate's state is the pin mutex's.
  // Open is never called with it held (WalStrategy::Open excludes it; the WAL family's LeaveLocked
  // holds it but opens with exclusive locking, which never joins privately).
  base::MutexLock lock(pins_.mu());
  return RefreshPrivate();
}

// The frames a read-only private connection may index: those the -shm publishes (frames past
// it may belong to a commit that failed and are about to be overwritten), or with no -shm (no
// other connection is open) the logs' valid prefixes.
absl::Status WalConnection::RefreshPrivate() {
  shm::IndexHeader mine;
  const bool indexed = index_->ReadHeader(&mine);
  if (private_shm_ == nullptr && indexed) {
    // Without a -shm no other connection is open, so the logs cannot have changed; one that
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
    bool unpublished = false;
    while (true) {
      absl::Status s = private_shm_->Read(0, absl::MakeSpan(prefix));
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
            "busy: the wal-index header of ", shm_path_, " is being rewritten or is damaged"));
      }
      std::this_thread::yield();
    }
    if (!unpublished) {
      if (h.change == private_change_ && index_->ReadHeader(&h)) return absl::OkStatus();
      published = h;
    } else if (indexed) {
      return absl::OkStatus();  // indexed from the logs already; nobody has written since
    }
  }
  std::array<wal::ScanResult, 2> scans;
  for (int l = 0; l < nlogs_; ++l) {
    const bool needed = published && published->logs[l].mx_frame > 0;
    if (logs_[l] == nullptr && needed) {
      // A connection that opened since created the log.
      absl::StatusOr<std::unique_ptr<wal::WalLog>> log =
          wal::WalLog::Open(fs_, log_paths_[l], /*read_only=*/true);
      if (log.ok()) logs_[l] = std::move(*log);
      if (!log.ok() && !absl::IsNotFound(log.status())) return log.status();
    }
    if (logs_[l] == nullptr) {
      if (needed) {
        return absl::DataLossError(absl::StrCat(log_paths_[l], " is missing but ", shm_path_,
                                                " says it holds commits"));
      }
      continue;
    }
    JKV_ASSIGN_OR_RETURN(scans[l], logs_[l]->Scan(page_size_, shm::MaxLogFrames()));
  }
  shm::IndexHeader h;
  if (published) {
    h = *published;
    for (int l = 0; l < nlogs_; ++l) {
      const shm::LogState& p = h.logs[l];
      const wal::ScanResult& scan = scans[l];
      const bool same_log = p.mx_frame == 0 || (scan.header_valid &&
                                                scan.header.ckpt_seq == p.ckpt_seq &&
                                                scan.header.salt1 == p.salt1 &&
                                                scan.header.salt2 == p.salt2);
      if (!same_log || scan.mx_frame < p.mx_frame) {
        return absl::DataLossError(absl::StrCat(log_paths_[l], " does not hold the ", p.mx_frame,
                                                " frames ", shm_path_, " publishes"));
      }
      if (indexed && mine.logs[l].mx_frame > 0 && mine.logs[l].ckpt_seq != p.ckpt_seq) {
        // Restarts wait for this connection (WalOptions::private_reader_byte): this is not one of ours.
        return absl::DataLossError(
            absl::StrCat(log_paths_[l], " restarted under a read-only reader"));
      }
    }
  } else {
    h = recovery_.HeaderFromScans(scans, indexed ? &mine : nullptr);
    h.change = indexed ? mine.change + 1 : 1;
    if (h.page_count == 0) {
      JKV_ASSIGN_OR_RETURN(uint64_t bytes, db_file_->Size());
      h.page_count = static_cast<uint32_t>(bytes / page_size_);
    }
  }
  // Append only the new frames: this connection's open snapshots keep reading the old ones.
  for (int l = 0; l < nlogs_; ++l) {
    const uint32_t from = indexed ? mine.logs[l].mx_frame : 0;
    if (h.logs[l].mx_frame < from) {
      return absl::DataLossError(
          absl::StrCat(log_paths_[l], " lost frames under a read-only reader"));
    }
    for (uint32_t f = from + 1; f <= h.logs[l].mx_frame; ++f) {
      JKV_RETURN_IF_ERROR(index_->Append(l, f, scans[l].pages[f - 1]));
    }
  }
  index_->WriteHeader(h);
  private_change_ = h.change;
  return absl::OkStatus();
}

}  // namespace journalkv::wal
