// f2fs_atomic.cc: the F2FS atomic batch (f2fs_atomic.h). Untested on a real F2FS.
//
// Thread-safety: a batch is used by one thread at a time.
#include "vfs/f2fs_atomic.h"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "vfs/batch_overlay.h"
#include "vfs/errno_status.h"

namespace journalkv::vfs {
namespace {

class SystemF2fsIoctls final : public F2fsIoctls {
 public:
  int Ioctl(int fd, unsigned long request) override {
    return ::ioctl(fd, request) == 0 ? 0 : errno;
  }
};

class F2fsAtomicBatch final : public AtomicBatch {
 public:
  F2fsAtomicBatch(File* db, int fd, F2fsIoctls* ioctls, IoStats* stats, FileKind kind,
                  std::atomic<bool>* open)
      : db_(db), fd_(fd), ioctls_(ioctls), stats_(stats), kind_(kind), open_(open) {}
  ~F2fsAtomicBatch() override {
    if (!ended_) (void)Abort();  // cannot be reported; F2FS drops the pages at close anyway
  }

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override {
    JKV_RETURN_IF_ERROR(CheckOpen("write"));
    return db_->Write(offset, data);  // held apart by F2FS until the commit
  }
  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override {
    JKV_RETURN_IF_ERROR(CheckOpen("read"));
    return db_->Read(offset, out);  // F2FS serves the batch's pages to the file's readers
  }
  absl::Status Commit(BatchSync sync) override {
    JKV_RETURN_IF_ERROR(CheckOpen("commit"));
    // No fsync before or after, at either level: F2FS's commit ioctl writes the atomic pages
    // and syncs the file before it returns.
    if (const int err = ioctls_->Ioctl(fd_, kF2fsIocCommitAtomicWrite); err != 0) {
      // The pages are still held apart: drop them, so the file stays as before the batch.
      (void)ioctls_->Ioctl(fd_, kF2fsIocAbortAtomicWrite);
      End();
      return ErrnoToStatus(err, absl::StrCat(db_->path(), ": ioctl(F2FS_IOC_COMMIT_ATOMIC_WRITE)"));
    }
    End();
    stats_->AddAtomicCommit(kind_, sync == BatchSync::kDurable);
    return absl::OkStatus();
  }
  absl::Status Abort() override {
    JKV_RETURN_IF_ERROR(CheckOpen("abort"));
    const int err = ioctls_->Ioctl(fd_, kF2fsIocAbortAtomicWrite);
    End();
    if (err != 0) {
      return ErrnoToStatus(err, absl::StrCat(db_->path(), ": ioctl(F2FS_IOC_ABORT_ATOMIC_WRITE)"));
    }
    return absl::OkStatus();
  }

 private:
  absl::Status CheckOpen(absl::string_view op) const {
    return ended_ ? BatchEndedError(db_->path(), op) : absl::OkStatus();
  }
  void End() {
    ended_ = true;
    open_->store(false, std::memory_order_release);
  }

  File* const db_;
  const int fd_;
  F2fsIoctls* const ioctls_;
  IoStats* const stats_;
  const FileKind kind_;
  std::atomic<bool>* const open_;
  bool ended_ = false;
};

}  // namespace

F2fsIoctls& RealF2fsIoctls() {
  static SystemF2fsIoctls* const ioctls = new SystemF2fsIoctls();
  return *ioctls;
}

absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginF2fsAtomicBatch(File* db, int fd,
                                                                  F2fsIoctls* ioctls,
                                                                  IoStats* stats, FileKind kind,
                                                                  std::atomic<bool>* open) {
  if (const int err = ioctls->Ioctl(fd, kF2fsIocStartAtomicWrite); err != 0) {
    open->store(false, std::memory_order_release);
    if (err == ENOTTY || err == EOPNOTSUPP || err == EINVAL) {
      return AtomicBatchUnsupportedError(
          db->path(),
          absl::StrCat("f2fs refused F2FS_IOC_START_ATOMIC_WRITE: ", std::strerror(err)));
    }
    return ErrnoToStatus(err, absl::StrCat(db->path(), ": ioctl(F2FS_IOC_START_ATOMIC_WRITE)"));
  }
  return std::make_unique<F2fsAtomicBatch>(db, fd, ioctls, stats, kind, open);
}

}  // namespace journalkv::vfs
