// What the atomic batches of vfs/ share (internal to vfs/): the ranges a batch wrote, a batch
// held in memory, reading a file as a batch would leave it, and the emulated batch that
// MemFileSystem and FaultInjectingFileSystem give their files.
//
// Thread-safety: none of these is thread-safe; a batch is used by one thread at a time
// (vfs.h, AtomicBatch).
#ifndef JOURNALKV_VFS_BATCH_OVERLAY_H_
#define JOURNALKV_VFS_BATCH_OVERLAY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// A set of byte ranges [start, end), kept merged.
class BatchRanges {
 public:
  void Add(uint64_t start, uint64_t end);
  void Clear() { ranges_.clear(); }
  bool empty() const { return ranges_.empty(); }
  uint64_t lowest() const { return ranges_.empty() ? 0 : ranges_.begin()->first; }
  uint64_t end() const { return ranges_.empty() ? 0 : ranges_.rbegin()->second; }

  struct Piece {
    uint64_t start;
    uint64_t end;
    bool in_batch;
  };
  // [start, end) cut where the set's ranges begin and end, in order.
  std::vector<Piece> Pieces(uint64_t start, uint64_t end) const;
  const std::map<uint64_t, uint64_t>& ranges() const { return ranges_; }

 private:
  std::map<uint64_t, uint64_t> ranges_;  // start -> end, disjoint and not touching
};

// Reads [offset, offset + out.size()) of the file as a batch would leave it: pieces in
// `ranges` through read_batch, the rest through read_file below file_size and as zeros
// between file_size and ranges.end(). OutOfRange (naming path) past both ends.
absl::Status OverlayRead(
    const std::string& path, const BatchRanges& ranges, uint64_t file_size, uint64_t offset,
    absl::Span<uint8_t> out,
    const std::function<absl::Status(uint64_t, absl::Span<uint8_t>)>& read_batch,
    const std::function<absl::Status(uint64_t, absl::Span<uint8_t>)>& read_file);

// The bytes of a batch, in memory: non-overlapping chunks by offset.
class BatchBuffer {
 public:
  void Write(uint64_t offset, absl::Span<const uint8_t> data);
  // Copies [offset, offset + out.size()), which must lie within ranges().
  void Read(uint64_t offset, absl::Span<uint8_t> out) const;
  const BatchRanges& ranges() const { return ranges_; }
  // The chunks, ordered by offset (what a commit applies).
  const std::map<uint64_t, std::vector<uint8_t>>& chunks() const { return chunks_; }
  uint64_t bytes() const;

 private:
  std::map<uint64_t, std::vector<uint8_t>> chunks_;
  BatchRanges ranges_;
};

// The emulated batch's prepared batch (AtomicBatch::Prepare): a side file `<path>-shadow`
// (ShadowPath) written through the batch's own file system, so that the fault-injecting file
// system's power-loss model decides what of it survives as of any other file. Its content:
//   "JKVPREP1" | total bytes u64 | note bytes u32 | chunks u32 | note |
//   per chunk: offset u64, size u64, bytes | Xxh3 of everything before, u64
// (little-endian). One write at offset 0 and one fdatasync make it durable (the file stays,
// emptied, between prepares; its directory entry is synced once, when the prepare creates
// it). Anything that does not check (empty, torn by a power loss mid-prepare) is no prepared
// batch. A prepared batch is emptied by a truncate to 0, unsynced.
struct PreparedRecord {
  std::string note;
  BatchBuffer batch;
};
absl::Status WritePreparedRecord(FileSystem& fs, const std::string& db_path,
                                 absl::string_view note, const BatchBuffer& batch);
absl::StatusOr<std::optional<PreparedRecord>> ReadPreparedRecord(FileSystem& fs,
                                                                 const std::string& db_path);
absl::Status ClearPreparedRecord(FileSystem& fs, const std::string& db_path);
// FailedPrecondition when `db_path` has a prepared batch left (BeginAtomicBatch's refusal).
absl::Status CheckNoPreparedRecord(FileSystem& fs, const std::string& db_path);
// FailedPrecondition: "<path>: atomic batch: a prepared batch is left in <shadow> ...".
absl::Status PreparedBatchLeftError(const std::string& path, const std::string& shadow);

// A batch buffered in memory and applied by `apply` at Commit: the kEmulated batch. `apply`
// must apply every chunk as one step (under the file's lock) or none of them. `open` is the
// File's one-batch-at-a-time flag, set by the caller before construction and cleared when the
// batch ends. `side_fs`: the file system its prepared batch is written through (the File's
// own; null: Prepare is Unimplemented).
class EmulatedBatch final : public AtomicBatch {
 public:
  using Apply = std::function<absl::Status(const BatchBuffer&, BatchSync)>;
  EmulatedBatch(File* file, IoStats* stats, FileKind kind, std::atomic<bool>* open, Apply apply,
                FileSystem* side_fs = nullptr)
      : file_(file),
        stats_(stats),
        kind_(kind),
        open_(open),
        apply_(std::move(apply)),
        side_fs_(side_fs) {}
  ~EmulatedBatch() override { End(); }

  absl::Status Write(uint64_t offset, absl::Span<const uint8_t> data) override;
  absl::Status Read(uint64_t offset, absl::Span<uint8_t> out) override;
  absl::Status Commit(BatchSync sync) override;
  absl::Status Abort() override;
  absl::Status Prepare(absl::string_view note) override;

 private:
  absl::Status CheckOpen(absl::string_view op) const;
  void End();

  File* const file_;
  IoStats* const stats_;
  const FileKind kind_;
  std::atomic<bool>* const open_;
  const Apply apply_;
  FileSystem* const side_fs_;
  bool ended_ = false;
  bool prepared_ = false;
  BatchBuffer buffer_;
};

// File::CommitPreparedBatch of an emulated file: reads the prepared batch of `file` through
// `fs`, applies it with `apply` and clears it. FailedPrecondition when there is none.
absl::Status CommitEmulatedPrepared(FileSystem& fs, File& file, const EmulatedBatch::Apply& apply,
                                    BatchSync sync, IoStats* stats, FileKind kind);

// FailedPrecondition: "<path>: <op> of an atomic batch that has ended (committed or aborted)".
absl::Status BatchEndedError(const std::string& path, absl::string_view op);
// FailedPrecondition: "<path>: atomic batch: another batch of this file is still open".
absl::Status BatchAlreadyOpenError(const std::string& path);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_BATCH_OVERLAY_H_
