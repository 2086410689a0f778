#include "bench/syscall_counter.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace journalkv::bench {
namespace {

std::atomic<uint64_t> g_fsync{0}, g_fdatasync{0}, g_msync{0}, g_writes{0}, g_bytes{0};

// The next definition of `name` after this binary's: libc's.
template <typename F>
F Next(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "syscall_counter: libc has no %s\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

// Writes to standard input, output and error (the benchmark's own table and progress line) are
// not storage I/O and are not counted.
void CountWrite(int fd, ssize_t n) {
  if (fd <= 2) return;
  g_writes.fetch_add(1, std::memory_order_relaxed);
  if (n > 0) g_bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
}

}  // namespace

SyscallCounts SyscallSnapshot() {
  SyscallCounts c;
  c.fsync = g_fsync.load(std::memory_order_relaxed);
  c.fdatasync = g_fdatasync.load(std::memory_order_relaxed);
  c.msync = g_msync.load(std::memory_order_relaxed);
  c.writes = g_writes.load(std::memory_order_relaxed);
  c.bytes_written = g_bytes.load(std::memory_order_relaxed);
  return c;
}

bool SyscallCountingWorks() {
  char path[] = "/tmp/jkv_syscall_selftest_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return false;
  const uint64_t before = g_fdatasync.load();
  // Called through a function pointer from the dynamic linker, as a shared library would.
  auto* libc_style = reinterpret_cast<int (*)(int)>(dlsym(RTLD_DEFAULT, "fdatasync"));
  const bool ok = libc_style != nullptr && libc_style(fd) == 0 && g_fdatasync.load() == before + 1;
  close(fd);
  unlink(path);
  return ok;
}

}  // namespace journalkv::bench

// The interposed functions, with C linkage and libc's signatures.
extern "C" {

using journalkv::bench::CountWrite;
using journalkv::bench::Next;

int fsync(int fd) {
  static auto real = Next<int (*)(int)>("fsync");
  journalkv::bench::g_fsync.fetch_add(1, std::memory_order_relaxed);
  return real(fd);
}

int fdatasync(int fd) {
  static auto real = Next<int (*)(int)>("fdatasync");
  journalkv::bench::g_fdatasync.fetch_add(1, std::memory_order_relaxed);
  return real(fd);
}

int msync(void* addr, size_t length, int flags) {
  static auto real = Next<int (*)(void*, size_t, int)>("msync");
  if (flags & MS_SYNC) journalkv::bench::g_msync.fetch_add(1, std::memory_order_relaxed);
  return real(addr, length, flags);
}

ssize_t write(int fd, const void* buf, size_t count) {
  static auto real = Next<ssize_t (*)(int, const void*, size_t)>("write");
  const ssize_t n = real(fd, buf, count);
  CountWrite(fd, n);
  return n;
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static auto real = Next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  const ssize_t n = real(fd, buf, count, offset);
  CountWrite(fd, n);
  return n;
}

ssize_t pwrite64(int fd, const void* buf, size_t count, off64_t offset) {
  static auto real = Next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
  const ssize_t n = real(fd, buf, count, offset);
  CountWrite(fd, n);
  return n;
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static auto real = Next<ssize_t (*)(int, const struct iovec*, int)>("writev");
  const ssize_t n = real(fd, iov, iovcnt);
  CountWrite(fd, n);
  return n;
}

ssize_t pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  static auto real = Next<ssize_t (*)(int, const struct iovec*, int, off_t)>("pwritev");
  const ssize_t n = real(fd, iov, iovcnt, offset);
  CountWrite(fd, n);
  return n;
}

}  // extern "C"
