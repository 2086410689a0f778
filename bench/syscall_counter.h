// Counts, at the system-call boundary, the flushes and writes of everything in the process:
// journalkv, SQLite and LMDB alike. Linking `//bench:syscall_counter` into a binary interposes
// fsync, fdatasync, msync, write, pwrite, pwrite64, writev and pwritev: the binary's own
// definitions forward to libc's (found with dlsym(RTLD_NEXT)) and count each call. The binary
// must export them to shared libraries (linkopts -rdynamic, set by the target), so that calls
// from libsqlite3.so and liblmdb.so reach them too.
//
// Writes to file descriptors 0, 1 and 2 are not counted (they are the benchmark's own output).
// Only calls made through the dynamic symbol are seen; a library that issues the raw system
// call, or glibc calling itself internally, is not. tests cross-check the counts against
// `strace -c` (bench/syscall_counter_test.sh).
//
// Thread-safety: counters are relaxed atomics; Snapshot() may run on any thread.
#ifndef JOURNALKV_BENCH_SYSCALL_COUNTER_H_
#define JOURNALKV_BENCH_SYSCALL_COUNTER_H_

#include <cstdint>

namespace journalkv::bench {

struct SyscallCounts {
  uint64_t fsync = 0;
  uint64_t fdatasync = 0;
  uint64_t msync = 0;
  uint64_t writes = 0;         // write, pwrite, pwrite64, writev, pwritev calls
  uint64_t bytes_written = 0;  // bytes they returned as written

  uint64_t flushes() const { return fsync + fdatasync + msync; }
  SyscallCounts operator-(const SyscallCounts& b) const {
    return {fsync - b.fsync, fdatasync - b.fdatasync, msync - b.msync, writes - b.writes,
            bytes_written - b.bytes_written};
  }
  SyscallCounts& operator+=(const SyscallCounts& b) {
    fsync += b.fsync;
    fdatasync += b.fdatasync;
    msync += b.msync;
    writes += b.writes;
    bytes_written += b.bytes_written;
    return *this;
  }
};

// The counts since the process started.
SyscallCounts SyscallSnapshot();

// True when the interposed functions are the ones libraries call (a self-test: it issues one
// fdatasync on a temporary file through libc and checks that the count moved).
bool SyscallCountingWorks();

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_SYSCALL_COUNTER_H_
