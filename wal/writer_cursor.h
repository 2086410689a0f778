// wal::WriterCursor: where the WAL writer appends next (the log, the frame, and the checksum
// chain value before that frame; the log a header names current is wal::CurrentLog,
// wal/wal_types.h). The one
// place a cursor is derived from an index header: at BeginWrite, at a Rollback, after a WAL2
// switch (V3) and after a restart of both logs; WriteFrames then moves it one frame per append
// (wal/wal_writer.cc).
//
// Invariant: between transactions (after BeginWrite, Commit and Rollback, and after a switch or
// a restart as the writer) the cursor is AtEndOf the writer's header: its current log (V1), one
// past that log's mx_frame, with that log's last_checksum as the chain (W12 a: the appended
// header names every frame written; W11: nothing past it is any transaction's yet), but for the
// chain of a generation with no frame yet (see CheckInvariants). Inside a transaction it runs
// ahead of the header by the transaction's frames. CheckInvariants asserts it in debug builds at
// the end of BeginWrite and Commit, at a transaction's first append, and after a switch or a
// restart as the writer.
//
// Thread-safety: a value; WalConnection's copy is the writer thread's only.
#ifndef JOURNALKV_WAL_WRITER_CURSOR_H_
#define JOURNALKV_WAL_WRITER_CURSOR_H_

#include <cstdint>

#include "base/check.h"
#include "shm/wal_index.h"
#include "wal/wal_types.h"

namespace journalkv::wal {

struct WriterCursor {
  int log = 0;              // the log the writer appends to
  uint32_t next_frame = 0;  // the frame the next append writes (1-based)
  uint64_t chain = 0;       // the checksum chain value before next_frame

  // The cursor at the end of header `h`: its current log, after its mx_frame. (For a generation
  // with no frames, `chain` is the index's copy of the log header's seed; the first append
  // writes the log header and takes the seed it returns instead, wal_writer.cc.)
  static WriterCursor AtEndOf(const shm::IndexHeader& h, bool wal2) {
    const int log = CurrentLog(h, wal2);
    return {log, h.logs[log].mx_frame + 1, h.logs[log].last_checksum};
  }

  bool operator==(const WriterCursor&) const = default;

  // Debug builds: the invariant above, against the writer's header `h`. A no-op under NDEBUG.
  void CheckInvariants(const shm::IndexHeader& h, bool wal2) const {
    const WriterCursor end = AtEndOf(h, wal2);
    JKV_DCHECK(log == end.log && next_frame == end.next_frame);  // W12 a, W11
    // Before a generation's first frame the chain is the seed of the log header that frame's
    // append writes (again, after a failed W4 sync): the index's copy may differ.
    JKV_DCHECK(next_frame == 1 || chain == end.chain);
  }
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_WRITER_CURSOR_H_
