// RangeLockTable: the byte-range locks of one in-memory file, with the semantics of Linux
// open-file-description locks (fcntl F_OFD_SETLK). Internal to vfs/: MemFileSystem keeps one per
// file and uses the address of each File object as its owner.
//
// Semantics, as fcntl gives them:
//  - A range is [start, end). Locks of one owner never conflict with each other.
//  - A shared lock conflicts only with another owner's exclusive lock on an overlapping byte; an
//    exclusive lock conflicts with any other owner's lock on an overlapping byte.
//  - TryLock either takes the whole range or, on a conflict, changes nothing.
//  - Locking a range the owner already holds (in part or whole) converts those bytes to the new
//    mode; unlocking a sub-range splits the owner's ranges around it.
//
// Invariant I1: the ranges of one owner never overlap each other.
//
// Thread-safety: not thread-safe; the file that owns the table serializes calls.
#ifndef JOURNALKV_VFS_RANGE_LOCK_TABLE_H_
#define JOURNALKV_VFS_RANGE_LOCK_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vfs/vfs.h"

namespace journalkv::vfs {

class RangeLockTable {
 public:
  using Owner = const void*;

  // Locks [start, end) for owner in mode. Returns false, changing nothing, when another owner
  // holds a conflicting lock on a byte of the range. REQUIRES: start < end.
  bool TryLock(Owner owner, uint64_t start, uint64_t end, LockMode mode);

  // Drops owner's locks on [start, end); bytes it does not hold are ignored.
  void Unlock(Owner owner, uint64_t start, uint64_t end);

  // Drops every lock of owner.
  void ReleaseAll(Owner owner);

  // Whether another owner holds a lock on a byte of [start, end) that conflicts with `mode`
  // (what makes TryLock fail).
  bool Conflicts(Owner owner, uint64_t start, uint64_t end, LockMode mode) const;

  // The number of disjoint ranges held by all owners (for tests).
  size_t range_count() const { return ranges_.size(); }

 private:
  struct Range {
    Owner owner;
    uint64_t start;
    uint64_t end;
    LockMode mode;
  };

  std::vector<Range> ranges_;  // unordered
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_RANGE_LOCK_TABLE_H_
