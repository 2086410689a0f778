// vfs.cc: the small non-virtual parts of the file layer interface (vfs.h): file kind and atomic
// write kind names, the unsupported-batch error, the I/O counter snapshots and DirName.
//
// Thread-safety: everything here is safe to call from any thread; IoStats reads its counters with
// relaxed atomic loads, so a snapshot taken while other threads do I/O is not a single instant.
#include "vfs/vfs.h"

#include <string>

namespace journalkv::vfs {

absl::string_view FileKindName(FileKind kind) {
  switch (kind) {
    case FileKind::kDatabase:
      return "database";
    case FileKind::kJournal:
      return "journal";
    case FileKind::kWal:
      return "wal";
    case FileKind::kShm:
      return "shm";
    case FileKind::kOther:
      return "other";
  }
  return "unknown";
}

absl::string_view AtomicWriteKindName(AtomicWriteKind kind) {
  switch (kind) {
    case AtomicWriteKind::kNone:
      return "none";
    case AtomicWriteKind::kXfsExchangeRange:
      return "xfs-exchange-range";
    case AtomicWriteKind::kF2fs:
      return "f2fs-atomic-write";
    case AtomicWriteKind::kEmulated:
      return "emulated";
  }
  return "unknown";
}

absl::Status AtomicBatchUnsupportedError(const std::string& path, absl::string_view detail) {
  return absl::UnimplementedError(absl::StrCat(
      path, ": atomic batch: not supported on this file system",
      detail.empty() ? "" : absl::StrCat(" (", detail, ")"),
      "; it needs XFS with the exchange-range feature on Linux 6.10+, or F2FS"));
}

absl::Status AtomicBatch::Prepare(absl::string_view) {
  return absl::UnimplementedError(
      "atomic batch prepare: this file system's batches cannot be prepared (a transaction "
      "across databases in atomic mode needs XFS exchange-range or the emulated batch)");
}

IoCounts IoStats::Snapshot(FileKind k) const {
  const Atomic& a = counts_[static_cast<int>(k)];
  IoCounts c;
  c.reads = a.reads.load(std::memory_order_relaxed);
  c.bytes_read = a.bytes_read.load(std::memory_order_relaxed);
  c.writes = a.writes.load(std::memory_order_relaxed);
  c.bytes_written = a.bytes_written.load(std::memory_order_relaxed);
  c.syncs = a.syncs.load(std::memory_order_relaxed);
  c.dir_syncs = a.dir_syncs.load(std::memory_order_relaxed);
  c.truncates = a.truncates.load(std::memory_order_relaxed);
  c.atomic_commits = a.atomic_commits.load(std::memory_order_relaxed);
  c.durable_atomic_commits = a.durable_atomic_commits.load(std::memory_order_relaxed);
  return c;
}

IoCounts IoStats::Total() const {
  IoCounts total;
  for (int i = 0; i < kNumFileKinds; ++i) {
    const IoCounts c = Snapshot(static_cast<FileKind>(i));
    total.reads += c.reads;
    total.bytes_read += c.bytes_read;
    total.writes += c.writes;
    total.bytes_written += c.bytes_written;
    total.syncs += c.syncs;
    total.dir_syncs += c.dir_syncs;
    total.truncates += c.truncates;
    total.atomic_commits += c.atomic_commits;
    total.durable_atomic_commits += c.durable_atomic_commits;
  }
  return total;
}

// POSIX dirname(3) rules: trailing slashes of the path are ignored, "x" -> ".", "/x" -> "/",
// "a//b" -> "a".
std::string DirName(const std::string& path) {
  const size_t last = path.find_last_not_of('/');
  if (last == std::string::npos) return path.empty() ? "." : "/";
  const size_t slash = path.rfind('/', last);
  if (slash == std::string::npos) return ".";
  const size_t dir_end = path.find_last_not_of('/', slash);
  if (dir_end == std::string::npos) return "/";
  return path.substr(0, dir_end + 1);
}

}  // namespace journalkv::vfs
