// batch_overlay.cc: batch ranges, in-memory batches and the emulated batch (batch_overlay.h).
//
// Thread-safety: none (batch_overlay.h).
#include "vfs/batch_overlay.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "vfs/errno_status.h"

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
  return absl::OkStatus();
}

absl::Status EmulatedBatch::Abort() {
  JKV_RETURN_IF_ERROR(CheckOpen("abort"));
  End();
  return absl::OkStatus();
}

}  // namespace journalkv::vfs
