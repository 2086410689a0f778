// batch_overlay.cc: batch ranges, in-memory batches and the emulated batch (batch_overlay.h).
//
// Thread-safety: none (batch_overlay.h).
#include "vfs/batch_overlay.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "vfs/errno_status.h"
#include "vfs/sync.h"
#include "vfs/xfs_exchange.h"

namespace journalkv::vfs {

void BatchRanges::Add(uint64_t start, uint64_t end) {
  if (start >= end) return;
  // Every range touching or overlapping [start, end) joins it.
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second >= start) --it;
  while (it != ranges_.end() && it->first <= end) {
    start = std::min(start, it->first);
    end = std::max(end, it->second);
    it = ranges_.erase(it);
  }
  ranges_.emplace(start, end);
}

std::vector<BatchRanges::Piece> BatchRanges::Pieces(uint64_t start, uint64_t end) const {
  std::vector<Piece> pieces;
  auto it = ranges_.upper_bound(start);
  if (it != ranges_.begin() && std::prev(it)->second > start) --it;
  uint64_t at = start;
  for (; it != ranges_.end() && it->first < end && at < end; ++it) {
    if (it->first > at) {
      pieces.push_back(Piece{at, it->first, false});
      at = it->first;
    }
    const uint64_t to = std::min(end, it->second);
    pieces.push_back(Piece{at, to, true});
    at = to;
  }
  if (at < end) pieces.push_back(Piece{at, end, false});
  return pieces;
}

absl::Status OverlayRead(
    const std::string& path, const BatchRanges& ranges, uint64_t file_size, uint64_t offset,
    absl::Span<uint8_t> out,
    const std::function<absl::Status(uint64_t, absl::Span<uint8_t>)>& read_batch,
    const std::function<absl::Status(uint64_t, absl::Span<uint8_t>)>& read_file) {
  const uint64_t size = std::max(file_size, ranges.end());
  const uint64_t available = offset < size ? size - offset : 0;
  if (available < out.size()) return ShortReadError(path, offset, out.size(), available);
  for (const BatchRanges::Piece& piece : ranges.Pieces(offset, offset + out.size())) {
    absl::Span<uint8_t> part = out.subspan(piece.start - offset, piece.end - piece.start);
    if (piece.in_batch) {
      JKV_RETURN_IF_ERROR(read_batch(piece.start, part));
      continue;
    }
    // Below the file's end from the file, past it (a gap before a batch write) zeros.
    const uint64_t from_file =
        piece.start < file_size ? std::min(piece.end, file_size) - piece.start : 0;
    if (from_file > 0) JKV_RETURN_IF_ERROR(read_file(piece.start, part.first(from_file)));
    std::fill(part.begin() + from_file, part.end(), uint8_t{0});
  }
  return absl::OkStatus();
}

void BatchBuffer::Write(uint64_t offset, absl::Span<const uint8_t> data) {
  if (data.empty()) return;
  const uint64_t end = offset + data.size();
  // Cut the chunks that overlap [offset, end) down to their parts outside it.
  auto it = chunks_.upper_bound(offset);
  if (it != chunks_.begin()) --it;
  while (it != chunks_.end() && it->first < end) {
    const uint64_t start = it->first;
    const uint64_t stop = start + it->second.size();
    if (stop <= offset) {
      ++it;
      continue;
    }
    std::vector<uint8_t> old = std::move(it->second);
    it = chunks_.erase(it);
    if (start < offset)
      chunks_.emplace(start, std::vector<uint8_t>(old.begin(), old.begin() + (offset - start)));
    if (stop > end) {
      it = chunks_.emplace(end, std::vector<uint8_t>(old.begin() + (end - start), old.end())).first;
    }
  }
  chunks_.emplace(offset, std::vector<uint8_t>(data.begin(), data.end()));
  ranges_.Add(offset, end);
}

void BatchBuffer::Read(uint64_t offset, absl::Span<uint8_t> out) const {
  const uint64_t end = offset + out.size();
  auto it = chunks_.upper_bound(offset);
  if (it != chunks_.begin()) --it;
  for (; it != chunks_.end() && it->first < end; ++it) {
    const uint64_t from = std::max(offset, it->first);
    const uint64_t to = std::min(end, it->first + it->second.size());
    if (from >= to) continue;
    std::memcpy(out.data() + (from - offset), it->second.data() + (from - it->first), to - from);
  }
}

uint64_t BatchBuffer::bytes() const {
  uint64_t total = 0;
  for (const auto& [offset, data] : chunks_) total += data.size();
  return total;
}

absl::Status BatchEndedError(const std::string& path, absl::string_view op) {
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": ", op, " of an atomic batch that has ended (committed or aborted)"));
}

absl::Status BatchAlreadyOpenError(const std::string& path) {
  return absl::FailedPreconditionError(
      absl::StrCat(path, ": atomic batch: another batch of this file is still open"));
}

absl::Status EmulatedBatch::CheckOpen(absl::string_view op) const {
  return ended_ ? BatchEndedError(file_->path(), op) : absl::OkStatus();
}

void EmulatedBatch::End() {
  if (ended_) return;
  ended_ = true;
  open_->store(false, std::memory_order_release);
}

absl::Status EmulatedBatch::Write(uint64_t offset, absl::Span<const uint8_t> data) {
  JKV_RETURN_IF_ERROR(CheckOpen("write"));
  if (prepared_) {
    return absl::FailedPreconditionError(
        absl::StrCat(file_->path(), ": write into an atomic batch that was prepared"));
  }
  buffer_.Write(offset, data);
  stats_->AddWrite(kind_, data.size());
  return absl::OkStatus();
}

absl::Status EmulatedBatch::Read(uint64_t offset, absl::Span<uint8_t> out) {
  JKV_RETURN_IF_ERROR(CheckOpen("read"));
  JKV_ASSIGN_OR_RETURN(const uint64_t file_size, file_->Size());
  return OverlayRead(
      file_->path(), buffer_.ranges(), file_size, offset, out,
      [&](uint64_t at, absl::Span<uint8_t> part) {
        buffer_.Read(at, part);
        return absl::OkStatus();
      },
      [&](uint64_t at, absl::Span<uint8_t> part) { return file_->Read(at, part); });
}

absl::Status EmulatedBatch::Commit(BatchSync sync) {
  JKV_RETURN_IF_ERROR(CheckOpen("commit"));
  End();
  JKV_RETURN_IF_ERROR(apply_(buffer_, sync));
  stats_->AddAtomicCommit(kind_, sync == BatchSync::kDurable);
  // Applied: the prepared copy is no longer needed. A failure (or a crash first) leaves it;
  // its recovery finds the file already holding the batch (vfs.h).
  if (prepared_) (void)ClearPreparedRecord(*side_fs_, file_->path());
  return absl::OkStatus();
}

absl::Status EmulatedBatch::Abort() {
  JKV_RETURN_IF_ERROR(CheckOpen("abort"));
  End();
  if (prepared_) return ClearPreparedRecord(*side_fs_, file_->path());
  return absl::OkStatus();
}

absl::Status EmulatedBatch::Prepare(absl::string_view note) {
  JKV_RETURN_IF_ERROR(CheckOpen("prepare"));
  if (side_fs_ == nullptr) return AtomicBatch::Prepare(note);
  if (note.size() > kMaxPreparedNote) {
    return absl::InvalidArgumentError(absl::StrCat(file_->path(), ": atomic batch prepare: a note of ",
                                                   note.size(), " bytes (at most ",
                                                   kMaxPreparedNote, ")"));
  }
  JKV_RETURN_IF_ERROR(WritePreparedRecord(*side_fs_, file_->path(), note, buffer_));
  prepared_ = true;
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// The emulated batch's prepared batch (batch_overlay.h)

namespace {

constexpr char kPreparedMagic[8] = {'J', 'K', 'V', 'P', 'R', 'E', 'P', '1'};
constexpr size_t kPreparedHeader = 8 + 8 + 4 + 4;

void Put64(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t b[8];
  base::EncodeFixed64(b, v);
  out.insert(out.end(), b, b + 8);
}
void Put32(std::vector<uint8_t>& out, uint32_t v) {
  uint8_t b[4];
  base::EncodeFixed32(b, v);
  out.insert(out.end(), b, b + 4);
}

}  // namespace

absl::Status PreparedBatchLeftError(const std::string& path, const std::string& shadow) {
  return absl::FailedPreconditionError(absl::StrCat(
      path, ": atomic batch: a prepared batch is left in ", shadow,
      " (a commit across databases died between its prepare and its commit); its recovery "
      "must decide it first (the pager does, when a connection takes the database from idle)"));
}

absl::Status WritePreparedRecord(FileSystem& fs, const std::string& db_path,
                                 absl::string_view note, const BatchBuffer& batch) {
  std::vector<uint8_t> blob(kPreparedMagic, kPreparedMagic + 8);
  Put64(blob, 0);  // total, filled in below
  Put32(blob, static_cast<uint32_t>(note.size()));
  Put32(blob, static_cast<uint32_t>(batch.chunks().size()));
  blob.insert(blob.end(), note.begin(), note.end());
  for (const auto& [offset, data] : batch.chunks()) {
    Put64(blob, offset);
    Put64(blob, data.size());
    blob.insert(blob.end(), data.begin(), data.end());
  }
  base::EncodeFixed64(blob.data() + 8, blob.size() + 8);
  Put64(blob, base::Xxh3(blob.data(), blob.size(), 0));
  const std::string side = ShadowPath(db_path);
  JKV_ASSIGN_OR_RETURN(const bool existed, fs.Exists(side));
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       fs.Open(side, OpenOptions{OpenMode::kCreate, FileKind::kOther}));
  JKV_RETURN_IF_ERROR(file->Write(0, blob));
  // Y1 (pager/atomic_across.h): the prepared batch whole and durable before the commit point.
  JKV_RETURN_IF_ERROR(SyncFile(*file, SyncKind::kData, "Y1 prepared batch"));
  if (!existed) {
    // Y1: and its name, once (the file stays, emptied, between prepares).
    JKV_RETURN_IF_ERROR(SyncDir(fs, side, "Y1 prepared batch (created)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<PreparedRecord>> ReadPreparedRecord(FileSystem& fs,
                                                                 const std::string& db_path) {
  const std::string side = ShadowPath(db_path);
  JKV_ASSIGN_OR_RETURN(const bool exists, fs.Exists(side));
  if (!exists) return std::nullopt;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       fs.Open(side, OpenOptions{OpenMode::kReadOnly, FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size < kPreparedHeader + 8) return std::nullopt;
  // A side file that shrinks under the read (its batch ending) is no prepared batch.
  uint8_t header[kPreparedHeader];
  absl::Status read = file->Read(0, absl::MakeSpan(header));
  if (absl::IsOutOfRange(read)) return std::nullopt;
  JKV_RETURN_IF_ERROR(read);
  const uint64_t total = base::DecodeFixed64(header + 8);
  if (std::memcmp(header, kPreparedMagic, 8) != 0 || total > size ||
      total < kPreparedHeader + 8) {
    return std::nullopt;
  }
  std::vector<uint8_t> blob(total);
  read = file->Read(0, absl::MakeSpan(blob));
  if (absl::IsOutOfRange(read)) return std::nullopt;
  JKV_RETURN_IF_ERROR(read);
  if (base::DecodeFixed64(blob.data() + total - 8) != base::Xxh3(blob.data(), total - 8, 0)) {
    return std::nullopt;  // torn by a power loss during its prepare: never prepared
  }
  PreparedRecord record;
  const uint32_t note_size = base::DecodeFixed32(blob.data() + 16);
  const uint32_t chunks = base::DecodeFixed32(blob.data() + 20);
  size_t at = kPreparedHeader;
  auto fits = [&](uint64_t n) { return at + n <= total - 8; };
  if (!fits(note_size)) return std::nullopt;
  record.note.assign(reinterpret_cast<const char*>(blob.data() + at), note_size);
  at += note_size;
  for (uint32_t i = 0; i < chunks; ++i) {
    if (!fits(16)) return std::nullopt;
    const uint64_t offset = base::DecodeFixed64(blob.data() + at);
    const uint64_t bytes = base::DecodeFixed64(blob.data() + at + 8);
    at += 16;
    if (!fits(bytes)) return std::nullopt;
    record.batch.Write(offset, absl::MakeConstSpan(blob.data() + at, bytes));
    at += bytes;
  }
  return record;
}

absl::Status ClearPreparedRecord(FileSystem& fs, const std::string& db_path) {
  const std::string side = ShadowPath(db_path);
  JKV_ASSIGN_OR_RETURN(const bool exists, fs.Exists(side));
  if (!exists) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<File> file,
                       fs.Open(side, OpenOptions{OpenMode::kReadWrite, FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size == 0) return absl::OkStatus();
  return file->Truncate(0);
}

absl::Status CheckNoPreparedRecord(FileSystem& fs, const std::string& db_path) {
  JKV_ASSIGN_OR_RETURN(std::optional<PreparedRecord> record, ReadPreparedRecord(fs, db_path));
  if (record.has_value()) return PreparedBatchLeftError(db_path, ShadowPath(db_path));
  return absl::OkStatus();
}

absl::Status CommitEmulatedPrepared(FileSystem& fs, File& file, const EmulatedBatch::Apply& apply,
                                    BatchSync sync, IoStats* stats, FileKind kind) {
  JKV_ASSIGN_OR_RETURN(std::optional<PreparedRecord> record, ReadPreparedRecord(fs, file.path()));
  if (!record.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(file.path(), ": no prepared atomic batch in ", ShadowPath(file.path())));
  }
  JKV_RETURN_IF_ERROR(apply(record->batch, sync));
  stats->AddAtomicCommit(kind, sync == BatchSync::kDurable);
  (void)ClearPreparedRecord(fs, file.path());  // as EmulatedBatch::Commit
  return absl::OkStatus();
}

}  // namespace journalkv::vfs
