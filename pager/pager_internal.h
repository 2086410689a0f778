// Helpers shared by the pager's source files (pager*.cc, rollback_strategy.cc, wal_*.cc); not
// part of the pager's interface.
#ifndef JOURNALKV_PAGER_PAGER_INTERNAL_H_
#define JOURNALKV_PAGER_PAGER_INTERNAL_H_

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/backoff.h"
#include "base/endian.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/page_access.h"
#include "pager/pager_core.h"

namespace journalkv::pager {

// Waiting for a lock another process holds: sleeps from 20 us, doubling up to this. A writer
// committing back to back frees the file for microseconds between commits, so a long sleep
// starves readers in other processes; 1 ms wakes a waiter at most 1,000 times a second.
inline constexpr absl::Duration kMaxBusySleep = absl::Milliseconds(1);
// A writer waiting for another connection's write transaction polls more often: the lock is
// free for microseconds between two commits of a busy writer, and every sleep past that is time
// no one writes. A writer that starts while another waits yields for longer than that poll, so
// the waiter wakes first (db_lock.h, WAITING).
inline constexpr absl::Duration kMaxWriterSleep = absl::Microseconds(250);
inline constexpr absl::Duration kWriterYield = absl::Microseconds(500);  // 2 * kMaxWriterSleep

inline absl::Span<uint8_t> Whole(PageBuffer& b) {
  return absl::Span<uint8_t>(b.bytes.get(), b.size);
}
inline absl::Span<const uint8_t> Whole(const PageBuffer& b) {
  return absl::Span<const uint8_t>(b.bytes.get(), b.size);
}

inline uint64_t Offset(PageNo page_no, uint32_t page_size) {
  return uint64_t{page_no.value() - 1} * page_size;
}

inline uint64_t ChangeCounter(const PageBuffer& page1) {
  return base::DecodeFixed64(page1.bytes.get() + kChangeCounterOffset);
}

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGER_INTERNAL_H_
