// power_loss_model.cc: replaying unsynced changes as a power loss or a failed fsync may leave
// them (see power_loss_model.h).
//
// Thread-safety: no shared state.
#include "vfs/power_loss_model.h"

#include <algorithm>

namespace journalkv::vfs {
namespace {

// Copies bytes to image at offset, growing image (zero-filled) when it is too short.
void CopyInto(uint64_t offset, absl::Span<const uint8_t> bytes, std::vector<uint8_t>& image) {
  if (bytes.empty()) return;
  if (image.size() < offset + bytes.size()) image.resize(offset + bytes.size());
  std::copy(bytes.begin(), bytes.end(), image.begin() + offset);
}

// Replays the write op sector by sector, keeping each sector or not.
void TearWrite(const PendingOp& op, const TearOptions& options, std::mt19937_64& rng,
               std::vector<uint8_t>& image) {
  const uint64_t sector = options.sector_size;
  const uint64_t end = op.offset + op.data.size();
  if (image.size() < end) image.resize(end);
  const absl::Span<const uint8_t> data(op.data);
  uint64_t next = 0;
  for (uint64_t start = op.offset; start < end; start = next) {
    next = std::min(end, (start / sector + 1) * sector);
    const uint64_t length = next - start;
    if (rng() % 2 == 0) {
      CopyInto(start, data.subspan(start - op.offset, length), image);
    } else if (options.garbage_in_dropped_sectors && rng() % 4 == 0) {
      for (uint64_t i = start; i < next; ++i) image[i] = static_cast<uint8_t>(rng());
    }
  }
}

}  // namespace

void ApplyPendingOp(const PendingOp& op, std::vector<uint8_t>& image) {
  switch (op.kind) {
    case PendingOp::Kind::kWrite:
      CopyInto(op.offset, op.data, image);
      return;
    case PendingOp::Kind::kTruncate:
      image.resize(op.offset);
      return;
    case PendingOp::Kind::kBatch:
      for (const auto& [offset, data] : op.batch) CopyInto(offset, data, image);
      return;
  }
}

// The batches of a file reach the disk in their commit order (the header's "batch"): the
// index past the last durable batch of `pending` (0: none), before which every batch is kept.
size_t PastLastDurableBatch(absl::Span<const PendingOp> pending) {
  size_t past = 0;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (pending[i].kind == PendingOp::Kind::kBatch && pending[i].durable) past = i + 1;
  }
  return past;
}

std::vector<uint8_t> ImageAfterPowerLoss(std::vector<uint8_t> durable,
                                         absl::Span<const PendingOp> pending,
                                         const TearOptions& options, std::mt19937_64& rng) {
  const size_t forced = PastLastDurableBatch(pending);
  bool batch_dropped = false;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingOp& op = pending[i];
    if (op.kind == PendingOp::Kind::kTruncate) {
      if (rng() % 2 == 0) ApplyPendingOp(op, durable);
      continue;
    }
    if (op.kind == PendingOp::Kind::kBatch) {
      // One indivisible change: whole or not at all, in order. No draw for a durable one or one
      // before it, nor for one after a dropped one.
      const bool keep = i < forced || (!batch_dropped && rng() % 2 == 0);
      if (keep) {
        ApplyPendingOp(op, durable);
      } else {
        batch_dropped = true;
      }
      continue;
    }
    const uint64_t end = op.offset + op.data.size();
    const bool extends = end > durable.size();
    switch (rng() % (options.size_without_data && extends ? 4 : 3)) {
      case 0:
        ApplyPendingOp(op, durable);
        break;
      case 1:
        break;  // dropped
      case 2:
        TearWrite(op, options, rng, durable);
        break;
      default:
        durable.resize(end);  // size only: the new bytes read as zeros
        break;
    }
  }
  return durable;
}

std::vector<uint8_t> ImageAfterFailedSync(std::vector<uint8_t> durable,
                                          absl::Span<const PendingOp> pending,
                                          std::mt19937_64& rng) {
  const size_t forced = PastLastDurableBatch(pending);
  bool batch_dropped = false;
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingOp& op = pending[i];
    if (op.kind != PendingOp::Kind::kBatch) {
      if (rng() % 2 == 0) ApplyPendingOp(op, durable);
      continue;
    }
    const bool keep = i < forced || (!batch_dropped && rng() % 2 == 0);  // in order, as above
    if (keep) {
      ApplyPendingOp(op, durable);
    } else {
      batch_dropped = true;
    }
  }
  return durable;
}

}  // namespace journalkv::vfs
