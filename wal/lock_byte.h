// wal::LockByte: one of the -shm's lock bytes (shm::ShmLock: WRITE, RECOVER) as a capability of
// clang's thread-safety analysis, so that "REQUIRES: WRITE held" is an annotation the analysis
// checks (tools/check_thread_safety.sh) and not only a comment. It holds nothing: the byte is
// taken and released by the real lock calls (shm::WalIndex::TryLock, Unlock), often in another
// call than the one that relies on it (WRITE is held from BeginWrite to EndWrite), so a caller
// that holds the byte, by a lock call it just made or by the state it is in, says so with
// AssumeHeld, next to that call or state check; every function that REQUIRES the byte is then
// reached only from such a place. (FLUSH is wal::GroupFlush, which takes its byte itself.)
#ifndef JOURNALKV_WAL_LOCK_BYTE_H_
#define JOURNALKV_WAL_LOCK_BYTE_H_

#include "absl/base/thread_annotations.h"

namespace journalkv::wal {

class ABSL_LOCKABLE LockByte {
 public:
  LockByte() = default;
  LockByte(const LockByte&) = delete;
  LockByte& operator=(const LockByte&) = delete;

  // The calling thread's connection holds this byte (exclusively), from here to the end of the
  // caller's scope. Checks nothing at run time: the caller's lock call or state check does.
  void AssumeHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_LOCK_BYTE_H_
