// WalIndex's hash tables (wal_index.h, "Hash blocks"): where each frame's page is recorded and
// how a reader finds the newest frame of a page at or below its snapshot. One writer appends
// and truncates (under WRITE); readers look up concurrently, without locks (the accessors
// below fix each word's memory order).
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "shm/wal_index.h"
#include "shm/wal_index_internal.h"

namespace journalkv::shm {
namespace {

using internal::Point;
using internal::Word;

constexpr size_t kHashOffset = kFramesPerBlock * 4;  // in a hash block, after pages[]

// Hash blocks: the writer's stores release, everyone's loads acquire. A reader that loads a hash
// slot then sees the pages[] word stored before it.
uint32_t LoadPage(uint8_t* block, uint32_t j) {
  return Word<uint32_t>(block, 4 * j).load(std::memory_order_acquire);
}
void StorePage(uint8_t* block, uint32_t j, uint32_t page_no) {
  Word<uint32_t>(block, 4 * j).store(page_no, std::memory_order_release);
}
uint16_t LoadHash(uint8_t* block, uint32_t slot) {
  return Word<uint16_t>(block, kHashOffset + 2 * slot).load(std::memory_order_acquire);
}
void StoreHash(uint8_t* block, uint32_t slot, uint16_t entry) {
  Word<uint16_t>(block, kHashOffset + 2 * slot).store(entry, std::memory_order_release);
}

uint32_t BlockRegion(int log, uint32_t block) { return 1 + 2 * block + log; }
uint32_t HashStart(uint32_t page_no) { return (page_no * 383) % kHashSlots; }
uint32_t NextSlot(uint32_t slot) { return (slot + 1) % kHashSlots; }

// The newest frame of block `k` that holds page_no and is among the first `limit` frames of the
// block, 0 when none; nullopt when the block is damaged (an entry out of range, or no empty
// slot: at most kFramesPerBlock of the kHashSlots slots are ever in use).
std::optional<uint32_t> FindInBlock(uint8_t* block, uint32_t k, uint32_t page_no,
                                    uint32_t limit) {
  uint32_t best = 0;
  uint32_t slot = HashStart(page_no);
  for (uint32_t n = 0; n < kHashSlots; ++n, slot = NextSlot(slot)) {
    const uint16_t entry = LoadHash(block, slot);
    if (entry == 0) return best == 0 ? 0 : k * kFramesPerBlock + best;
    if (entry > kFramesPerBlock) return std::nullopt;
    // Entries past `limit` belong to frames this snapshot does not see (or to a transaction
    // being written); their pages[] word may be changing, but it is never looked at.
    if (entry <= limit && entry > best && LoadPage(block, entry - 1) == page_no) best = entry;
  }
  return std::nullopt;
}

// Removes the entries of frames keep + 1 and later of the block. Hash slots go first, so that
// at every moment a nonzero slot's pages[] word is nonzero too (Append relies on it).
void ClearBlockFrom(uint8_t* block, uint32_t keep) {
  for (uint32_t slot = 0; slot < kHashSlots; ++slot) {
    const uint16_t entry = LoadHash(block, slot);
    if (entry > keep) StoreHash(block, slot, 0);
  }
  for (uint32_t j = keep; j < kFramesPerBlock; ++j) {
    if (LoadPage(block, j) != 0) StorePage(block, j, 0);
  }
}

absl::Status CheckFrame(uint32_t frame, const char* what) {
  if (frame <= MaxLogFrames()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " ", frame,
                                                 " is past the wal-index's limit of ",
                                                 MaxLogFrames(), " frames"));
}

}  // namespace

absl::Status WalIndex::Reserve(int log, uint32_t first_frame, uint32_t last_frame) {
  JKV_DCHECK(log == 0 || log == 1);
  JKV_DCHECK(first_frame >= 1 && first_frame <= last_frame);
  JKV_RETURN_IF_ERROR(CheckFrame(last_frame, "frame"));
  for (uint32_t k = (first_frame - 1) / kFramesPerBlock; k <= (last_frame - 1) / kFramesPerBlock;
       ++k) {
    JKV_RETURN_IF_ERROR(Region(BlockRegion(log, k)).status());
  }
  return absl::OkStatus();
}

absl::Status WalIndex::Append(int log, uint32_t frame, uint32_t page_no) {
  JKV_DCHECK(log == 0 || log == 1);
  Point("shm:append");
  JKV_RETURN_IF_ERROR(CheckFrame(frame, "frame"));
  if (frame == 0 || page_no == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("wal-index append of frame ", frame, " page ", page_no, ": zero"));
  }
  const uint32_t k = (frame - 1) / kFramesPerBlock;
  const uint32_t j = (frame - 1) % kFramesPerBlock;
  JKV_ASSIGN_OR_RETURN(uint8_t* block, Region(BlockRegion(log, k)));
  // A used pages[] word here is left over from a writer that died after appending frames it
  // never published, or from an earlier life of the -shm file: drop those entries first, so
  // that no entry of this block is ever older than the frame it claims.
  // The first frame of a block clears all of it: nothing in it can be kept then, and an
  // earlier life's block need not obey the invariants above (a damaged -shm file found stale at
  // open had hash slots filled with no pages[] word behind them, so no probe chain ended and
  // every lookup after recovery failed: shm fuzzer, cold mode).
  if (j == 0 || LoadPage(block, j) != 0) ClearBlockFrom(block, j);
  StorePage(block, j, page_no);  // before the slot: a reader that finds the slot sees the page
  uint32_t slot = HashStart(page_no);
  for (uint32_t n = 0; n < kHashSlots; ++n, slot = NextSlot(slot)) {
    if (LoadHash(block, slot) == 0) {
      StoreHash(block, slot, static_cast<uint16_t>(j + 1));
      return absl::OkStatus();
    }
  }
  return absl::DataLossError(absl::StrCat(internal::IndexName(file_), ": hash block ", k,
                                          " of log ", log, " is full (damaged)"));
}

absl::StatusOr<uint32_t> WalIndex::PageOfFrame(int log, uint32_t frame) {
  JKV_DCHECK(log == 0 || log == 1);
  JKV_RETURN_IF_ERROR(CheckFrame(frame, "frame"));
  if (frame == 0) return 0;
  const uint32_t k = (frame - 1) / kFramesPerBlock;
  JKV_ASSIGN_OR_RETURN(uint8_t* block, Region(BlockRegion(log, k)));
  return LoadPage(block, (frame - 1) % kFramesPerBlock);
}

absl::StatusOr<uint32_t> WalIndex::Lookup(int log, uint32_t page_no, uint32_t mx_frame) {
  JKV_DCHECK(log == 0 || log == 1);
  Point("shm:lookup");
  JKV_RETURN_IF_ERROR(CheckFrame(mx_frame, "mx_frame"));
  if (mx_frame == 0) return 0;
  // Newest block first: any match there is newer than every frame of the older blocks. The
  // writer appended all of them before publishing mx_frame, so mapping one never grows the file.
  for (uint32_t k = (mx_frame - 1) / kFramesPerBlock + 1; k-- > 0;) {
    JKV_ASSIGN_OR_RETURN(uint8_t* block, Region(BlockRegion(log, k)));
    const uint32_t limit = std::min(mx_frame - k * kFramesPerBlock, kFramesPerBlock);
    const std::optional<uint32_t> frame = FindInBlock(block, k, page_no, limit);
    if (!frame.has_value()) {
      return absl::DataLossError(absl::StrCat(internal::IndexName(file_),
                                              ": hash block ", k, " of log ", log,
                                              " is damaged"));
    }
    if (*frame != 0) return *frame;
  }
  return 0;
}

// Readers never look past the published mx_frame, and REQUIRES says the entries removed here are
// past it. Removing them keeps the probe chains of the entries that stay intact: entries of a
// block are inserted in frame order, and an entry's chain only crosses slots that were filled
// before it, i.e. by older frames, which stay.
absl::Status WalIndex::Truncate(int log, uint32_t mx_frame) {
  JKV_DCHECK(log == 0 || log == 1);
  Point("shm:truncate");
  JKV_RETURN_IF_ERROR(CheckFrame(mx_frame, "mx_frame"));
  uint32_t k = mx_frame / kFramesPerBlock;  // the block of frame mx_frame + 1
  if (k >= kMaxBlocksPerLog) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(uint8_t* block, ExistingRegion(BlockRegion(log, k)));
  if (block == nullptr) return absl::OkStatus();
  // Every writer's begin truncates to the appended state, and nearly always nothing is past
  // it. The used pages[] words of a block are a prefix (frames are appended in order, and the
  // first frame of a block clears all of it), and a hash slot is never set without its pages[]
  // word. So when the word of frame mx_frame + 1 is zero, nothing past mx_frame is in this
  // block, and the scan of its 8,192 slots (a third of a commit at sync off,
  // bench/results-2026-12-05/NOTES.md) is skipped. A block of an earlier life of a damaged -shm file need not obey that; its
  // stale slots past mx_frame stay until its first frame is appended, which clears all of it
  // (Append), and no lookup looks past mx_frame.
  const uint32_t keep = mx_frame - k * kFramesPerBlock;
  if (LoadPage(block, keep) != 0) ClearBlockFrom(block, keep);
  // Later blocks hold nothing we may keep. No shared high-water mark says how many there are
  // (another process may have written them), but frames are appended in order, so the used
  // blocks are a prefix: the first one with no first frame ends it (its stale slots, if any,
  // go as above).
  for (++k; k < kMaxBlocksPerLog; ++k) {
    JKV_ASSIGN_OR_RETURN(block, ExistingRegion(BlockRegion(log, k)));
    if (block == nullptr || LoadPage(block, 0) == 0) break;
    ClearBlockFrom(block, 0);
  }
  return absl::OkStatus();
}

}  // namespace journalkv::shm
