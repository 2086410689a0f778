// range_lock_table.cc: byte-range locks with open-file-description semantics (see
// range_lock_table.h). A flat vector is enough: a file holds a handful of locks at a time.
//
// Thread-safety: not thread-safe; callers serialize.
#include "vfs/range_lock_table.h"

#include <algorithm>

namespace journalkv::vfs {

bool RangeLockTable::Conflicts(Owner owner, uint64_t start, uint64_t end, LockMode mode) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& r) {
    const bool overlaps = r.start < end && start < r.end;
    const bool compatible = mode == LockMode::kShared && r.mode == LockMode::kShared;
    return r.owner != owner && overlaps && !compatible;
  });
}

bool RangeLockTable::TryLock(Owner owner, uint64_t start, uint64_t end, LockMode mode) {
  if (Conflicts(owner, start, end, mode)) return false;
  // Converting = dropping what owner holds on the range, then adding the range in the new mode;
  // this keeps I1.
  Unlock(owner, start, end);
  ranges_.push_back(Range{owner, start, end, mode});
  return true;
}

void RangeLockTable::Unlock(Owner owner, uint64_t start, uint64_t end) {
  std::vector<Range> kept;
  kept.reserve(ranges_.size() + 1);
  for (const Range& r : ranges_) {
    if (r.owner != owner || r.end <= start || end <= r.start) {
      kept.push_back(r);
      continue;
    }
    // r overlaps [start, end): keep the parts of r outside it.
    if (r.start < start) kept.push_back(Range{owner, r.start, start, r.mode});
    if (end < r.end) kept.push_back(Range{owner, end, r.end, r.mode});
  }
  ranges_ = std::move(kept);
}

void RangeLockTable::ReleaseAll(Owner owner) {
  ranges_.erase(std::remove_if(ranges_.begin(), ranges_.end(),
                               [owner](const Range& r) { return r.owner == owner; }),
                ranges_.end());
}

}  // namespace journalkv::vfs
