#include "vfs/read_map.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "vfs/errno_status.h"

namespace journalkv::vfs {
namespace {

// E5: set only while this thread is inside GuardedCopy's copy.
thread_local sigjmp_buf* guard_env = nullptr;
struct sigaction previous_action;

// O1: the live maps' ranges, read by the SIGBUS handler without a lock. A slot is taken by
// compare-exchange of its map pointer (null: free), then its range is stored; it is left by
// clearing the range first, then the pointer, before the map is unmapped.
constexpr int kRegistrySlots = 256;
struct RegistrySlot {
  std::atomic<ReadMap*> map{nullptr};
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
};
RegistrySlot registry[kRegistrySlots];

int Register(ReadMap* map, const uint8_t* base, uint64_t length) {
  for (int i = 0; i < kRegistrySlots; ++i) {
    ReadMap* expected = nullptr;
    if (registry[i].map.compare_exchange_strong(expected, map)) {
      registry[i].begin.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
      registry[i].end.store(reinterpret_cast<uintptr_t>(base) + length,
                            std::memory_order_release);
      return i;
    }
  }
  return -1;  // no slot: faults on this map's pages handed out keep the default action
}

void Unregister(int slot) {
  if (slot < 0) return;
  registry[slot].end.store(0, std::memory_order_release);
  registry[slot].begin.store(0, std::memory_order_release);
  registry[slot].map.store(nullptr, std::memory_order_release);
}

// O1: zeros over the faulting page of a registered map; false when the address is no map's.
bool AnswerWithZeros(void* address) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  for (int i = 0; i < kRegistrySlots; ++i) {
    const uintptr_t begin = registry[i].begin.load(std::memory_order_acquire);
    if (begin == 0 || a < begin || a >= registry[i].end.load(std::memory_order_acquire)) continue;
    ReadMap* map = registry[i].map.load(std::memory_order_acquire);
    if (map == nullptr) continue;
    const uintptr_t page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* page = reinterpret_cast<void*>(a & ~(page_size - 1));
    if (::mmap(page, page_size, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) ==
        MAP_FAILED) {
      return false;
    }
    map->NoteDamage();
    return true;
  }
  return false;
}

void ChainToPrevious(int sig, siginfo_t* info, void* context) {
  if (previous_action.sa_flags & SA_SIGINFO) {
    if (previous_action.sa_sigaction != nullptr) {
      previous_action.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
    previous_action.sa_handler(sig);
    return;
  }
  // The default action: restore it and let the fault happen again on return (a SIGBUS from a
  // memory access re-faults at the same instruction), which then kills the process.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, nullptr);
  if (info == nullptr || info->si_code <= 0) raise(SIGBUS);  // sent, not a fault
}

void OnSigbus(int sig, siginfo_t* info, void* context) {
  sigjmp_buf* env = guard_env;
  if (env != nullptr) {
    guard_env = nullptr;
    siglongjmp(*env, 1);
  }
  // O1: a page handed out of a map; the access is retried on return and reads zeros.
  if (info != nullptr && info->si_code > 0 && AnswerWithZeros(info->si_addr)) return;
  ChainToPrevious(sig, info, context);
}

void InstallHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = &OnSigbus;
    // SA_NODEFER: GuardedCopy's sigsetjmp does not save the signal mask (that would be a
    // system call per copy), so the handler must not leave SIGBUS blocked when it jumps out.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, &previous_action);
  });
}

// No C++ object with a destructor lives between sigsetjmp and the copy: siglongjmp skips
// nothing that needs unwinding.
__attribute__((noinline)) bool CopyUnderGuard(void* dst, const void* src, size_t n) {
  sigjmp_buf env;
  if (sigsetjmp(env, 0) != 0) {
    return false;  // the handler cleared guard_env before jumping
  }
  guard_env = &env;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(dst, src, n);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  guard_env = nullptr;
  return true;
}

}  // namespace

bool GuardedCopy(void* dst, const void* src, size_t n) {
  InstallHandler();
  return CopyUnderGuard(dst, src, n);
}

absl::StatusOr<std::unique_ptr<ReadMap>> ReadMap::Create(int fd, uint64_t length,
                                                         const std::string& path,
                                                         bool in_place) {
  if (length == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": a map of 0 bytes"));
  void* p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    return ErrnoToStatus(errno, absl::StrCat(path, ": mmap of ", length, " bytes to read"));
  }
  InstallHandler();
  std::unique_ptr<ReadMap> map(
      new ReadMap(fd, static_cast<const uint8_t*>(p), length, in_place));
  map->RefreshSize();
  if (in_place) map->registry_slot_ = Register(map.get(), map->base_, length);  // O1
  return map;
}

ReadMap::~ReadMap() {
  Unregister(registry_slot_);  // O1: out of the registry before the range is unmapped
  ::munmap(const_cast<uint8_t*>(base_), length_);
}

void ReadMap::NoteDamage() {
  known_size_.store(0, std::memory_order_relaxed);  // O3: fstat at the next Bytes or Copy
  damage_.fetch_add(1, std::memory_order_acq_rel);
}

void ReadMap::Repair() {
  // O3: the same range, the same file, in one call: a reader of another page never finds a
  // hole, and one of a zeroed page reads the file's bytes again, or faults again (O1).
  void* p = ::mmap(const_cast<uint8_t*>(base_), length_, PROT_READ, MAP_SHARED | MAP_FIXED,
                   fd_, 0);
  if (p == MAP_FAILED) return;  // the zero pages stay: their pages fail their checks
  repairs_.fetch_add(1, std::memory_order_acq_rel);
}

bool ReadMap::Below(uint64_t end) {
#if defined(__SANITIZE_THREAD__)
  return end <= RefreshSize();  // see Copy
#else
  return end <= known_size_.load(std::memory_order_relaxed) || end <= RefreshSize();
#endif
}

const uint8_t* ReadMap::Bytes(uint64_t offset, size_t n) {
  const uint64_t end = offset + n;
  if (!in_place_) return nullptr;  // a copies-only map hands nothing out (Create)
  if (end > length_ || end < offset || !Below(end)) return nullptr;  // E4
  return base_ + offset;  // counted by the caller (an atomic add per page would be shared)
}

uint64_t ReadMap::RefreshSize() {
  struct stat st;
  if (::fstat(fd_, &st) != 0) return known_size_.load(std::memory_order_relaxed);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  known_size_.store(size, std::memory_order_relaxed);
  return size;
}

void ReadMap::NoteTruncate(uint64_t size) {
  // Lowered before the cut is made visible to this File's next reads (E4); a racing refresh
  // may raise it again, which a fault then catches (E5).
  uint64_t known = known_size_.load(std::memory_order_relaxed);
  while (size < known && !known_size_.compare_exchange_weak(known, size)) {
  }
}

bool ReadMap::Copy(uint64_t offset, absl::Span<uint8_t> out) {
  const uint64_t end = offset + out.size();
  if (end > length_ || end < offset) {
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
#if defined(__SANITIZE_THREAD__)
  // TSan (Debian 12's libtsan) does not leave its signal state when a handler siglongjmps out,
  // and then reports every later allocation as a call inside a signal handler: under TSan the
  // size is looked up before every copy, so that no copy of a file cut before it faults (a cut
  // racing the copy still would; no test does that under TSan).
  const bool past = end > RefreshSize();
#else
  const bool past = end > known_size_.load(std::memory_order_relaxed) && end > RefreshSize();
#endif
  if (past) {
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    return false;  // E4: pread says OutOfRange
  }
  if (!GuardedCopy(out.data(), base_ + offset, out.size())) {
    faults_.fetch_add(1, std::memory_order_relaxed);
    known_size_.store(0, std::memory_order_relaxed);  // E5: refreshed at the next read
    return false;
  }
  copies_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

ReadMapCounters ReadMap::counters() const {
  ReadMapCounters c;
  c.copies = copies_.load(std::memory_order_relaxed);
  c.fallbacks = fallbacks_.load(std::memory_order_relaxed);
  c.faults = faults_.load(std::memory_order_relaxed);
  c.damage = damage_.load(std::memory_order_relaxed);
  return c;
}

}  // namespace journalkv::vfs
