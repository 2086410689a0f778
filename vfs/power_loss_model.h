// The power-loss model of FaultInjectingFileSystem: how a file's unsynced changes may end up on
// disk when the power fails, or after a failed fsync. Internal to vfs/ (a private header of
// //vfs:fault_injecting_fs).
//
// A tracked file is its durable image (the bytes a disk is guaranteed to hold) plus the content
// changes made since its last Sync, oldest first. After a power loss (ImageAfterPowerLoss) the
// file holds the durable image with the pending changes replayed in order, each one
// independently:
//   write     kept whole, dropped, or torn (each with probability 1/3). A torn write is split
//             into sectors of TearOptions::sector_size bytes (kSectorSize by default) aligned to
//             absolute file offsets; each sector is kept or dropped (probability 1/2 each), and
//             when garbage is enabled a dropped sector holds random bytes instead of its old
//             bytes with probability 1/4. A torn write extends the file to its end even when its
//             last sectors were dropped (the size update reached the disk, the data did not).
//             With TearOptions::size_without_data, a write that ends past the end of the image
//             replayed so far draws from four outcomes instead (kept, dropped, torn, size only;
//             probability 1/4 each): "size only" extends the file to the write's end but keeps
//             none of its data (bytes it overwrote keep their old value, new bytes read as
//             zeros). Other writes draw as above, so with the option off, or no write ending past
//             the end, the draws are exactly those of the three-outcome model.
//   truncate  kept or dropped (probability 1/2 each).
//   batch     a committed AtomicBatch (all its writes as one change): kept whole or dropped
//             whole (probability 1/2 each), never torn; a durable one (committed with
//             BatchSync::kDurable) is always kept. The batches of a file reach the disk in
//             their commit order, as a file system's log keeps them (XFS's exchanges, F2FS's
//             checkpoints): a batch is kept only when every earlier one is (none is drawn after
//             a dropped one), and a durable batch keeps every earlier one.
//
// After a failed fsync (ImageAfterFailedSync) each pending change, replayed in order, is either
// applied exactly or lost (probability 1/2 each): what Linux leaves after a writeback error.
// A durable batch is always applied (it was durable before the failed fsync); batches keep
// their order as above.
//
// Thread-safety: plain functions on values; callers serialize access to what they pass in.
#ifndef JOURNALKV_VFS_POWER_LOSS_MODEL_H_
#define JOURNALKV_VFS_POWER_LOSS_MODEL_H_

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace journalkv::vfs {

// The default sector size of torn writes (and the rounding of short writes).
inline constexpr uint64_t kSectorSize = 512;

// One change to a file's content that no Sync has made durable yet.
struct PendingOp {
  enum class Kind { kWrite, kTruncate, kBatch };

  static PendingOp Write(uint64_t offset, absl::Span<const uint8_t> data) {
    return PendingOp{Kind::kWrite, offset, std::vector<uint8_t>(data.begin(), data.end())};
  }
  static PendingOp Truncate(uint64_t size_bytes) {
    return PendingOp{Kind::kTruncate, size_bytes, {}};
  }

  // The writes of a committed atomic batch, by offset; durable when committed durably.
  static PendingOp Batch(std::vector<std::pair<uint64_t, std::vector<uint8_t>>> writes,
                         bool durable) {
    PendingOp op{Kind::kBatch, 0, {}};
    op.batch = std::move(writes);
    op.durable = durable;
    return op;
  }

  Kind kind;
  uint64_t offset;            // kWrite: where data goes; kTruncate: the new size in bytes
  std::vector<uint8_t> data;  // kWrite only
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> batch = {};  // kBatch only
  bool durable = false;  // kBatch: survives every power loss and failed fsync
};

// Applies op to image exactly as the file system applied it (what a Sync makes durable).
void ApplyPendingOp(const PendingOp& op, std::vector<uint8_t>& image);

// How ImageAfterPowerLoss may replay an unsynced write.
struct TearOptions {
  bool garbage_in_dropped_sectors = true;
  // The sectors a torn write splits into; a power of two >= kSectorSize (the caller checks).
  uint64_t sector_size = kSectorSize;
  // Whether a write that extends the file may leave only its size change (see above).
  bool size_without_data = false;
};

// A content the file may hold after a power loss: `durable` with `pending` replayed as the
// header comment describes, drawing every choice from rng.
std::vector<uint8_t> ImageAfterPowerLoss(std::vector<uint8_t> durable,
                                         absl::Span<const PendingOp> pending,
                                         const TearOptions& options, std::mt19937_64& rng);

// The durable content after a failed fsync: `durable` with each of `pending`, in order, applied
// or lost (one draw from rng each).
std::vector<uint8_t> ImageAfterFailedSync(std::vector<uint8_t> durable,
                                          absl::Span<const PendingOp> pending,
                                          std::mt19937_64& rng);

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_POWER_LOSS_MODEL_H_
