// xfs_exchange.cc: the XFS exchange-range atomic batch and the detection of atomic batches
// (xfs_exchange.h).
//
// Thread-safety: XfsExchangeBatch is used by one thread at a time; its descriptors are its own.
#include "vfs/xfs_exchange.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "vfs/batch_overlay.h"
#include "vfs/errno_status.h"

namespace journalkv::vfs {
namespace {

// statfs(2) f_type values (linux/magic.h).
constexpr int64_t kXfsMagic = 0x58465342;
constexpr int64_t kF2fsMagic = 0xF2F52010;
constexpr int64_t kExtMagic = 0xEF53;
constexpr int64_t kTmpfsMagic = 0x01021994;
constexpr int64_t kBtrfsMagic = 0x9123683E;
constexpr int64_t kOverlayMagic = 0x794C7630;

absl::Status PreadAll(int fd, const std::string& path, uint64_t offset, absl::Span<uint8_t> out) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat(path, ": pread at offset ", offset + done));
    if (n == 0) return ShortReadError(path, offset, out.size(), done);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PwriteAll(int fd, const std::string& path, uint64_t offset,
                       absl::Span<const uint8_t> data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return ErrnoToStatus(errno, absl::StrCat(path, ": pwrite at offset ", offset + done));
    if (n == 0) {
      return absl::InternalError(
          absl::StrCat(path, ": pwrite at offset ", offset + done, ": wrote nothing"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status TruncateFd(int fd, const std::string& path, uint64_t size) {
  while (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    if (errno == EINTR) continue;
    return ErrnoToStatus(errno, absl::StrCat(path, ": ftruncate to ", size));
  }
  return absl::OkStatus();
}

class XfsExchangeBatch final : public AtomicBatch {
 public:
  XfsExchangeBatch(File* db, int db_fd, std::string shadow_path, int shadow_fd, uint64_t block_size,
                   IoStats* stats, FileKind kind, std::atomic<bool>* open, bool created)
      : created_(created),
        db_(db),
        db_fd_(db_fd),
        shadow_path_(std::move(shadow_path)),
        shadow_fd_(shadow_fd),
        block_size_(block_size),
        stats_(stats),
        kind_(kind),
        open_(open) {}
  XfsExchangeBatch(const XfsExchangeBatch&) = delete;
  XfsExchangeBatch& operator=(const XfsExchangeBatch&) = delete;
  ~XfsExchangeBatch() override {
    if (shadow_fd_ < 0) return;
    if (prepared_) {  // a prepared batch stays for its recovery, as after a crash (vfs.h)
      ::close(shadow_fd_);
      open_->store(false, std::memory_order_release);
      return;
    }
    (void)Abort();  // an error here cannot be reported; Begin resets it
  }

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override;
  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override;
  absl::Status Commit(BatchSync sync) override;
  absl::Status Abort() override;
  absl::Status Prepare(absl::string_view note) override;

 private:
  bool created_;    // Begin created the shadow: its name is not durable yet
  bool prepared_ = false;
  absl::Status CheckOpen(absl::string_view op) const {
    return shadow_fd_ < 0 ? BatchEndedError(db_->path(), op) : absl::OkStatus();
  }
  // Empties the shadow (its blocks are the old pages, or the dropped batch), closes it and
  // ends the batch. The first error is returned; the batch ends either way.
  absl::Status EmptyShadowAndEnd();

  File* const db_;
  const int db_fd_;
  const std::string shadow_path_;
  int shadow_fd_;  // -1 once the batch has ended
  const uint64_t block_size_;
  IoStats* const stats_;
  const FileKind kind_;
  std::atomic<bool>* const open_;
  BatchRanges written_;
};

absl::Status XfsExchangeBatch::Write(uint64_t offset, absl::Span<const uint8_t> data) {
  JKV_RETURN_IF_ERROR(CheckOpen("write"));
  if (prepared_) {
    return absl::FailedPreconditionError(
        absl::StrCat(db_->path(), ": write into an atomic batch that was prepared"));
  }
  if (offset % block_size_ != 0 || data.size() % block_size_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        db_->path(), ": atomic batch write of ", data.size(), " bytes at offset ", offset,
        ": not whole blocks of the file system's ", block_size_,
        " bytes (an exchange moves whole blocks; a smaller page would carry its neighbours' "
        "stale bytes)"));
  }
  JKV_RETURN_IF_ERROR(PwriteAll(shadow_fd_, shadow_path_, offset, data));
  written_.Add(offset, offset + data.size());
  stats_->AddWrite(kind_, data.size());
  return absl::OkStatus();
}

absl::Status XfsExchangeBatch::Read(uint64_t offset, absl::Span<uint8_t> out) {
  JKV_RETURN_IF_ERROR(CheckOpen("read"));
  JKV_ASSIGN_OR_RETURN(const uint64_t db_size, db_->Size());
  return OverlayRead(
      db_->path(), written_, db_size, offset, out,
      [&](uint64_t at, absl::Span<uint8_t> part) {
        JKV_RETURN_IF_ERROR(PreadAll(shadow_fd_, shadow_path_, at, part));
        stats_->AddRead(kind_, part.size());
        return absl::OkStatus();
      },
      [&](uint64_t at, absl::Span<uint8_t> part) { return db_->Read(at, part); });
}

absl::Status XfsExchangeBatch::Commit(BatchSync sync) {
  JKV_RETURN_IF_ERROR(CheckOpen("commit"));
  const bool durable = sync == BatchSync::kDurable;
  if (!written_.empty()) {
    const uint64_t lowest = written_.lowest();
    const uint64_t end = written_.end();
    JKV_ASSIGN_OR_RETURN(const uint64_t db_size, db_->Size());
    if (end > db_size) {
      // The exchanged range must lie within both files (EINVAL otherwise): the database grows
      // to the batch's end first. A crash before the exchange leaves zero blocks past the old
      // end and none of the batch; the exchange's log force (DSYNC) makes the size durable too.
      absl::Status grown = TruncateFd(db_fd_, db_->path(), end);
      if (!grown.ok()) {
        (void)EmptyShadowAndEnd();
        return grown;
      }
    }
    XfsExchangeRange args = {};
    args.file1_fd = shadow_fd_;
    args.file1_offset = lowest;
    args.file2_offset = lowest;
    args.length = end - lowest;
    // FILE1_WRITTEN: only the shadow's written blocks (the batch) change places; the holes
    // leave the database's blocks where they are. The kernel writes the shadow's dirty pages
    // back before it exchanges, with or without DSYNC.
    args.flags = kXfsExchangeRangeFile1Written;
    // DSYNC, for a durable commit: the kernel forces its log (with a cache flush) before the
    // call returns, so the exchange, and the database's new size, survive a power loss. This
    // is the commit's only flush: the shadow's data needs no fdatasync of its own (the
    // exchange writes it back first, and DSYNC orders the flush after it).
    if (durable) args.flags |= kXfsExchangeRangeDsync;
    // Not retried on EINTR: whether an interrupted call exchanged is not known, and a second
    // exchange would swap the old blocks back.
    if (::ioctl(db_fd_, kXfsIocExchangeRange, &args) != 0) {
      const int err = errno;
      if (prepared_) {
        // Whether it exchanged is not known (EINTR, EIO): the prepared batch stays for the
        // recovery, which tells by the database's page 1 (vfs.h).
        ::close(shadow_fd_);
        shadow_fd_ = -1;
        open_->store(false, std::memory_order_release);
      } else {
        (void)EmptyShadowAndEnd();
      }
      if (err == EOPNOTSUPP || err == ENOTTY) {  // the feature went away (or never was)
        return AtomicBatchUnsupportedError(
            db_->path(), absl::StrCat("xfs refused XFS_IOC_EXCHANGE_RANGE: ", std::strerror(err)));
      }
      return ErrnoToStatus(
          err, absl::StrCat(db_->path(), ": ioctl(XFS_IOC_EXCHANGE_RANGE) of ", args.length,
                            " bytes at offset ", lowest, " with ", shadow_path_));
    }
  }
  // The commit happened: a failure to empty the shadow loses nothing (Begin empties a shadow
  // it finds full, never applying it), so it is not reported as a failed commit.
  (void)EmptyShadowAndEnd();
  stats_->AddAtomicCommit(kind_, durable);
  return absl::OkStatus();
}

absl::Status XfsExchangeBatch::Abort() {
  JKV_RETURN_IF_ERROR(CheckOpen("abort"));
  return EmptyShadowAndEnd();
}

// The prepared batch's trailer: the note and a footer, in whole blocks starting at the first
// block boundary at or past the batch's end (outside the exchanged range [lowest, end), so an
// exchange never moves it), ending the shadow:
//   note | zero padding | footer: note bytes u32, 0 u32, lowest u64, end u64, "JKVSHDW1",
//                         Xxh3(note | the footer's first 24 bytes) u64
// PreparedTrailer finds it from the shadow's size, and accepts only a whole one.
constexpr size_t kFooterSize = 40;
constexpr char kTrailerMagic[8] = {'J', 'K', 'V', 'S', 'H', 'D', 'W', '1'};

uint64_t RoundUp(uint64_t n, uint64_t block) { return (n + block - 1) / block * block; }

uint64_t TrailerChecksum(absl::string_view note, const uint8_t* footer) {
  return base::Xxh3Pair(note.data(), note.size(), footer, 24, 0);
}

absl::Status XfsExchangeBatch::Prepare(absl::string_view note) {
  JKV_RETURN_IF_ERROR(CheckOpen("prepare"));
  if (prepared_) {
    return absl::FailedPreconditionError(absl::StrCat(db_->path(), ": atomic batch prepared twice"));
  }
  if (note.size() > kMaxPreparedNote) {
    return absl::InvalidArgumentError(absl::StrCat(db_->path(), ": atomic batch prepare: a note of ",
                                                   note.size(), " bytes (at most ",
                                                   kMaxPreparedNote, ")"));
  }
  const uint64_t start = RoundUp(written_.end(), block_size_);
  std::vector<uint8_t> trailer(RoundUp(note.size() + kFooterSize, block_size_), 0);
  std::memcpy(trailer.data(), note.data(), note.size());
  uint8_t* footer = trailer.data() + trailer.size() - kFooterSize;
  base::EncodeFixed32(footer, static_cast<uint32_t>(note.size()));
  base::EncodeFixed64(footer + 8, written_.lowest());
  base::EncodeFixed64(footer + 16, written_.end());
  std::memcpy(footer + 24, kTrailerMagic, 8);
  base::EncodeFixed64(footer + 32, TrailerChecksum(note, footer));
  JKV_RETURN_IF_ERROR(PwriteAll(shadow_fd_, shadow_path_, start, trailer));
  stats_->AddWrite(kind_, trailer.size());
  // Y1 (pager/atomic_across.h): the batch's blocks and the trailer durable before the commit
  // point: one fdatasync of the shadow (its size, which finds the trailer, with it).
  while (::fdatasync(shadow_fd_) != 0) {
    if (errno == EINTR) continue;
    return ErrnoToStatus(errno, absl::StrCat(shadow_path_, ": fdatasync (Y1 prepared batch)"));
  }
  stats_->AddSync(kind_);
  if (created_) {
    // Y1: and the shadow's name, once: Begin created it (it stays, emptied, from now on).
    const std::string dir = DirName(shadow_path_);
    int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0) return ErrnoToStatus(errno, absl::StrCat(dir, ": open (Y1 prepared batch)"));
    int rc;
    do {
      rc = ::fsync(dir_fd);
    } while (rc != 0 && errno == EINTR);
    const int err = errno;
    ::close(dir_fd);
    if (rc != 0) return ErrnoToStatus(err, absl::StrCat(dir, ": fsync (Y1 prepared batch)"));
    stats_->AddDirSync();
    created_ = false;
  }
  prepared_ = true;
  return absl::OkStatus();
}

absl::Status XfsExchangeBatch::EmptyShadowAndEnd() {
  absl::Status status = TruncateFd(shadow_fd_, shadow_path_, 0);
  ::close(shadow_fd_);
  shadow_fd_ = -1;
  open_->store(false, std::memory_order_release);
  return status;
}

}  // namespace

absl::StatusOr<std::optional<PreparedTrailer>> ReadPreparedTrailer(int shadow_fd,
                                                                   const std::string& shadow_path,
                                                                   uint64_t block_size) {
  struct stat st;
  if (::fstat(shadow_fd, &st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat(shadow_path, ": fstat"));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kFooterSize || size % block_size != 0) return std::nullopt;
  // A shadow that shrinks under the read (a live writer's batch ending: a reader asks without
  // the writer's locks, pager/atomic_across.h Y5) is no prepared batch: a short read says so.
  uint8_t footer[kFooterSize];
  absl::Status read = PreadAll(shadow_fd, shadow_path, size - kFooterSize, absl::MakeSpan(footer));
  if (absl::IsOutOfRange(read)) return std::nullopt;
  JKV_RETURN_IF_ERROR(read);
  if (std::memcmp(footer + 24, kTrailerMagic, 8) != 0) return std::nullopt;
  PreparedTrailer trailer;
  const uint32_t note_size = base::DecodeFixed32(footer);
  trailer.lowest = base::DecodeFixed64(footer + 8);
  trailer.end = base::DecodeFixed64(footer + 16);
  if (note_size > AtomicBatch::kMaxPreparedNote || trailer.lowest > trailer.end) return std::nullopt;
  const uint64_t trailer_size = RoundUp(note_size + kFooterSize, block_size);
  if (trailer_size > size || size - trailer_size != RoundUp(trailer.end, block_size)) {
    return std::nullopt;
  }
  trailer.note.resize(note_size);
  read = PreadAll(shadow_fd, shadow_path, size - trailer_size,
                  absl::MakeSpan(reinterpret_cast<uint8_t*>(trailer.note.data()),
                                 trailer.note.size()));
  if (absl::IsOutOfRange(read)) return std::nullopt;
  JKV_RETURN_IF_ERROR(read);
  if (base::DecodeFixed64(footer + 32) != TrailerChecksum(trailer.note, footer)) {
    return std::nullopt;  // not whole: a crash during its prepare, never prepared
  }
  return trailer;
}

absl::StatusOr<std::optional<std::string>> XfsPreparedNote(const std::string& db_path,
                                                           uint64_t block_size) {
  const std::string shadow_path = ShadowPath(db_path);
  struct stat st;
  // The cheap answer first (readers ask at every read transaction from idle): one stat.
  if (::stat(shadow_path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return ErrnoToStatus(errno, absl::StrCat(shadow_path, ": stat"));
  }
  if (st.st_size == 0) return std::nullopt;
  int fd;
  do {
    fd = ::open(shadow_path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    return ErrnoToStatus(errno, absl::StrCat(shadow_path, ": open"));
  }
  absl::StatusOr<std::optional<PreparedTrailer>> trailer =
      ReadPreparedTrailer(fd, shadow_path, block_size);
  ::close(fd);
  JKV_RETURN_IF_ERROR(trailer.status());
  if (!trailer->has_value()) return std::nullopt;
  return std::move((*trailer)->note);
}

absl::Status CommitXfsPreparedBatch(File* db, int db_fd, uint64_t block_size, IoStats* stats,
                                    FileKind kind, BatchSync sync) {
  const std::string shadow_path = ShadowPath(db->path());
  int fd;
  do {
    fd = ::open(shadow_path.c_str(), O_RDWR | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat(shadow_path, ": open"));
  auto done = [&](absl::Status status) {
    ::close(fd);
    return status;
  };
  absl::StatusOr<std::optional<PreparedTrailer>> trailer =
      ReadPreparedTrailer(fd, shadow_path, block_size);
  if (!trailer.ok()) return done(trailer.status());
  if (!trailer->has_value()) {
    return done(absl::FailedPreconditionError(
        absl::StrCat(db->path(), ": no prepared atomic batch in ", shadow_path)));
  }
  const PreparedTrailer& t = **trailer;
  const bool durable = sync == BatchSync::kDurable;
  if (t.end > t.lowest) {
    absl::StatusOr<uint64_t> db_size = db->Size();
    if (!db_size.ok()) return done(db_size.status());
    if (t.end > *db_size) {
      if (absl::Status s = TruncateFd(db_fd, db->path(), t.end); !s.ok()) return done(s);
    }
    XfsExchangeRange args = {};
    args.file1_fd = fd;
    args.file1_offset = t.lowest;
    args.file2_offset = t.lowest;
    args.length = t.end - t.lowest;
    // As XfsExchangeBatch::Commit: only the written blocks move (the holes of the shadow are
    // the pages the batch did not write); DSYNC for a durable commit.
    args.flags = kXfsExchangeRangeFile1Written;
    if (durable) args.flags |= kXfsExchangeRangeDsync;
    if (::ioctl(db_fd, kXfsIocExchangeRange, &args) != 0) {
      const int err = errno;
      return done(ErrnoToStatus(
          err, absl::StrCat(db->path(), ": ioctl(XFS_IOC_EXCHANGE_RANGE) of a prepared batch of ",
                            args.length, " bytes at offset ", t.lowest, " with ", shadow_path)));
    }
  }
  stats->AddAtomicCommit(kind, durable);
  // Applied: emptied (the shadow now holds the old blocks and the trailer). A failure, or a
  // crash first, leaves it: its recovery finds the database holding the batch (vfs.h).
  (void)TruncateFd(fd, shadow_path, 0);
  return done(absl::OkStatus());
}

absl::Status DiscardXfsPreparedBatch(const std::string& db_path) {
  const std::string shadow_path = ShadowPath(db_path);
  while (::truncate(shadow_path.c_str(), 0) != 0) {
    if (errno == EINTR) continue;
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoToStatus(errno, absl::StrCat(shadow_path, ": truncate"));
  }
  return absl::OkStatus();
}

std::string ShadowPath(const std::string& db_path) { return db_path + "-shadow"; }

AtomicWriteSupport DetectAtomicWrites(int fd) {
  AtomicWriteSupport support;
  struct statfs fs;
  if (::fstatfs(fd, &fs) != 0) {
    support.detail = absl::StrCat("fstatfs failed: ", std::strerror(errno));
    return support;
  }
  const int64_t type = static_cast<int64_t>(fs.f_type) & 0xFFFFFFFF;
  switch (type) {
    case kXfsMagic: {
      XfsFsopGeom geom = {};
      if (::ioctl(fd, kXfsIocFsGeometry, &geom) != 0) {
        support.detail = absl::StrCat("xfs; XFS_IOC_FSGEOMETRY failed: ", std::strerror(errno));
      } else if ((geom.flags & kXfsGeomFlagExchangeRange) == 0) {
        support.detail =
            "xfs without the exchange-range feature: make it with mkfs.xfs -i exchange=1 "
            "(xfsprogs 6.10+) on Linux 6.10+";
      } else {
        support.kind = AtomicWriteKind::kXfsExchangeRange;
        support.block_size = geom.blocksize;
      }
      return support;
    }
    case kF2fsMagic:
      support.kind = AtomicWriteKind::kF2fs;
      return support;
    case kExtMagic:
      support.detail = "ext4";
      return support;
    case kTmpfsMagic:
      support.detail = "tmpfs";
      return support;
    case kBtrfsMagic:
      support.detail = "btrfs";
      return support;
    case kOverlayMagic:
      support.detail = "overlayfs";
      return support;
    default:
      support.detail = absl::StrFormat("file system type 0x%x", type);
      return support;
  }
}

absl::StatusOr<std::unique_ptr<AtomicBatch>> BeginXfsExchangeBatch(File* db, int db_fd,
                                                                   uint64_t block_size,
                                                                   IoStats* stats, FileKind kind,
                                                                   std::atomic<bool>* open) {
  std::string shadow_path = ShadowPath(db->path());
  int shadow_fd;
  bool created = true;
  do {
    shadow_fd = ::open(shadow_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  } while (shadow_fd < 0 && errno == EINTR);
  if (shadow_fd < 0 && errno == EEXIST) {
    created = false;
    do {
      shadow_fd = ::open(shadow_path.c_str(), O_RDWR | O_CLOEXEC);
    } while (shadow_fd < 0 && errno == EINTR);
  }
  auto fail = [&](absl::Status status) {
    if (shadow_fd >= 0) ::close(shadow_fd);
    open->store(false, std::memory_order_release);
    return status;
  };
  if (shadow_fd < 0) return fail(ErrnoToStatus(errno, absl::StrCat(shadow_path, ": open")));
  struct stat db_st, shadow_st;
  if (::fstat(db_fd, &db_st) != 0) {
    return fail(ErrnoToStatus(errno, absl::StrCat(db->path(), ": fstat")));
  }
  if (::fstat(shadow_fd, &shadow_st) != 0) {
    return fail(ErrnoToStatus(errno, absl::StrCat(shadow_path, ": fstat")));
  }
  if (!S_ISREG(shadow_st.st_mode)) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat(shadow_path, ": the atomic batch's shadow is not a regular file")));
  }
  if (db_st.st_dev != shadow_st.st_dev) {
    return fail(absl::FailedPreconditionError(
        absl::StrCat(shadow_path, ": the atomic batch's shadow is on another file system than ",
                     db->path(), " (an exchange needs both files on one XFS)")));
  }
  if (shadow_st.st_size != 0) {
    // A prepared batch is its recovery's to decide (vfs.h): refused, never dropped here.
    absl::StatusOr<std::optional<PreparedTrailer>> trailer =
        ReadPreparedTrailer(shadow_fd, shadow_path, block_size);
    if (!trailer.ok()) return fail(trailer.status());
    if (trailer->has_value()) return fail(PreparedBatchLeftError(db->path(), shadow_path));
    // Left by a process that died mid-batch (or a commit whose last truncate failed): its
    // blocks are a batch never committed, or old pages. Dropped, never applied.
    if (absl::Status s = TruncateFd(shadow_fd, shadow_path, 0); !s.ok()) return fail(s);
  }
  return std::make_unique<XfsExchangeBatch>(db, db_fd, std::move(shadow_path), shadow_fd,
                                            block_size, stats, kind, open, created);
}

}  // namespace journalkv::vfs
