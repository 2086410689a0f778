#include "shm/wal_index.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "base/check.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "shm/wal_index_internal.h"
#include "vfs/word_wait.h"

namespace journalkv::shm {
namespace {

using internal::Point;

// std::atomic_thread_fence, except under ThreadSanitizer, which does not model fences (GCC
// refuses them there: -Wtsan). TSan builds run on x86, where both fences used here are compiler
// barriers only, so leaving them out changes no ordering the hardware gives.
inline void ThreadFence(std::memory_order order) {
#if defined(__SANITIZE_THREAD__)
  (void)order;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // still a compiler barrier
#else
  std::atomic_thread_fence(order);
#endif
}

using vfs::LockMode;

constexpr uint32_t kNumRegions = 1 + 2 * kMaxBlocksPerLog;
std::atomic<uint32_t> max_log_frames{kMaxLogFrames};
constexpr int kHeaderWords = 18;                     // IndexHeader, without the checksum
constexpr int kCopyWords = kHeaderWords + 2;         // plus the checksum, low word first
static_assert(kCopyWords * 4 == kHeaderBytes);
// Every word is at an offset that is a multiple of its size, so regions need only this much.
constexpr size_t kRegionAlignment = 8;

using HeaderWords = std::array<uint32_t, kCopyWords>;

// --- accessors: the only way to the shared words. The memory order of each word is fixed here.

using internal::Word;

// Header words: acquire/release, so that a reader that sees a published header also sees the
// hash entries the writer added before publishing it.
std::atomic_ref<uint32_t> LayoutVersion(uint8_t* r0) {
  return Word<uint32_t>(r0, kLayoutVersionOffset);
}
std::atomic_ref<uint32_t> SlotsUsed(uint8_t* r0) {  // seq_cst (S1)
  return Word<uint32_t>(r0, kSlotsUsedOffset);
}
uint32_t LoadHeaderWord(uint8_t* r0, size_t copy, int i) {
  return Word<uint32_t>(r0, copy + 4 * i).load(std::memory_order_acquire);
}
void StoreHeaderWord(uint8_t* r0, size_t copy, int i, uint32_t v) {
  Word<uint32_t>(r0, copy + 4 * i).store(v, std::memory_order_release);
}

// Checkpoint info and slots: seq_cst (the callers' Dekker-style protocols need a total order).
std::atomic_ref<uint32_t> Backfill(uint8_t* r0, int log) {
  return Word<uint32_t>(r0, kCkptInfoOffset + kCkptInfoStride * log);
}
std::atomic_ref<uint64_t> CkptTarget(uint8_t* r0, int log) {
  return Word<uint64_t>(r0, kCkptInfoOffset + kCkptInfoStride * log + 8);
}
std::atomic_ref<uint64_t> CopiedThrough(uint8_t* r0, int log) {
  return Word<uint64_t>(r0, kCkptInfoOffset + kCkptInfoStride * log + 16);
}
std::atomic_ref<uint64_t> WrittenThrough(uint8_t* r0, int log) {
  return Word<uint64_t>(r0, kCkptInfoOffset + kCkptInfoStride * log + 24);
}
std::atomic_ref<uint32_t> WakeSeq(uint8_t* r0, int kind) {
  return Word<uint32_t>(r0, kWakeOffset + 8 * kind);
}
std::atomic_ref<uint32_t> WakeWaiters(uint8_t* r0, int kind) {
  return Word<uint32_t>(r0, kWakeOffset + 8 * kind + 4);
}
std::atomic_ref<uint64_t> SlotWord(uint8_t* r0, int slot, int word) {  // pin0, pin1, owner, -
  return Word<uint64_t>(r0, kSlotsOffset + kSlotStride * slot + 8 * word);
}
std::atomic_ref<uint64_t> MarkWord(uint8_t* r0, int mark, int log) {
  return Word<uint64_t>(r0, kMarksOffset + kMarkStride * mark + 8 * log);
}


// --- the index header

uint64_t HeaderChecksum(const HeaderWords& words) {
  uint8_t bytes[kHeaderWords * 4];
  for (int i = 0; i < kHeaderWords; ++i) base::EncodeFixed32(bytes + 4 * i, words[i]);
  return base::Xxh3(bytes, sizeof bytes, 0);
}

HeaderWords EncodeHeader(const IndexHeader& h) {
  HeaderWords w{};
  w[0] = h.change;
  w[1] = h.page_size;
  w[2] = h.page_count;
  w[3] = h.current_log;
  for (int l = 0; l < 2; ++l) {
    uint32_t* lw = &w[4 + 7 * l];
    const LogState& s = h.logs[l];
    lw[0] = s.ckpt_seq;
    lw[1] = s.salt1;
    lw[2] = s.salt2;
    lw[3] = s.mx_frame;
    lw[4] = static_cast<uint32_t>(s.last_checksum);
    lw[5] = static_cast<uint32_t>(s.last_checksum >> 32);
    lw[6] = 0;  // reserved
  }
  const uint64_t checksum = HeaderChecksum(w);
  w[kHeaderWords] = static_cast<uint32_t>(checksum);
  w[kHeaderWords + 1] = static_cast<uint32_t>(checksum >> 32);
  return w;
}

// Whether a header whose checksum matched holds values a writer can have published. Every
// published header has a page size, so zeros are a header nobody wrote since the -shm was
// initialised, whatever the checksum of zero words is; the other tests reject a header that a
// damaged or hostile -shm sealed with a valid checksum (the shm fuzzer's current_log of 2
// indexed past the two logs), which is then treated as torn: waited out, then recovered.
bool Plausible(const IndexHeader& h) {
  if (h.page_size < 512 || h.page_size > 65536 || (h.page_size & (h.page_size - 1)) != 0) {
    return false;
  }
  if (h.current_log > 1) return false;
  for (const LogState& s : h.logs) {
    if (s.mx_frame > kMaxLogFrames) return false;
  }
  return true;
}

IndexHeader DecodeHeader(const HeaderWords& w) {
  IndexHeader h;
  h.change = w[0];
  h.page_size = w[1];
  h.page_count = w[2];
  h.current_log = w[3];
  for (int l = 0; l < 2; ++l) {
    const uint32_t* lw = &w[4 + 7 * l];
    LogState& s = h.logs[l];
    s.ckpt_seq = lw[0];
    s.salt1 = lw[1];
    s.salt2 = lw[2];
    s.mx_frame = lw[3];
    s.last_checksum = uint64_t{lw[5]} << 32 | lw[4];
  }
  return h;
}

HeaderWords LoadCopy(uint8_t* r0, size_t copy) {
  HeaderWords w;
  for (int i = 0; i < kCopyWords; ++i) w[i] = LoadHeaderWord(r0, copy, i);
  return w;
}

void StoreCopy(uint8_t* r0, size_t copy, const HeaderWords& w) {
  for (int i = 0; i < kCopyWords; ++i) StoreHeaderWord(r0, copy, i, w[i]);
}

// --- region 0

// Zeroes what a new life of the -shm file must not inherit. Hash blocks are left alone: every
// entry in them is past the (zero) published mx_frame, and Append (all of a block at its first
// frame) and Truncate clear them.
void InitializeRegion0(uint8_t* r0) {
  for (size_t copy : {kHeaderAOffset, kHeaderBOffset, kAppendedCOffset, kAppendedDOffset}) {
    for (int i = 0; i < kCopyWords; ++i) StoreHeaderWord(r0, copy, i, 0);
  }
  for (int log = 0; log < 2; ++log) {
    Backfill(r0, log).store(0);
    CkptTarget(r0, log).store(0);
    CopiedThrough(r0, log).store(0);
    WrittenThrough(r0, log).store(0);
  }
  SlotsUsed(r0).store(0);
  for (int slot = 0; slot < kMaxSlots; ++slot) {
    for (int word = 0; word < 4; ++word) SlotWord(r0, slot, word).store(0);
  }
  for (int mark = 0; mark < kOverflowMarks; ++mark) {
    for (int log = 0; log < 2; ++log) MarkWord(r0, mark, log).store(0);
  }
  for (int kind = 0; kind < 2; ++kind) {
    WakeSeq(r0, kind).store(0);
    WakeWaiters(r0, kind).store(0);
  }
  internal::InitializeDurabilityWords(r0);
  LayoutVersion(r0).store(kShmLayoutVersion, std::memory_order_release);
}

absl::Status CheckLayoutVersion(uint8_t* r0, const std::string& path) {
  const uint32_t version = LayoutVersion(r0).load(std::memory_order_acquire);
  if (version == kShmLayoutVersion) return absl::OkStatus();
  // The caller holds DMS shared, so whoever initialised the file did so before it let go of DMS
  // exclusive: a zero here is not a race but a file nobody initialised.
  if (version == 0) {
    return absl::UnavailableError(
        absl::StrCat(path, ": not initialised (layout version 0)"));
  }
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s: unknown shared-memory layout version 0x%08x (this build knows 0x%08x)", path, version,
      kShmLayoutVersion));
}

absl::Status CheckAlignment(const uint8_t* region, absl::string_view path) {
  if (reinterpret_cast<uintptr_t>(region) % kRegionAlignment == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(path, ": shared region is not 8-byte aligned"));
}


absl::Status CheckSlot(int slot) {
  if (slot >= 0 && slot < kMaxSlots) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("reader slot ", slot, " out of range"));
}

}  // namespace

absl::string_view internal::IndexName(const vfs::File* file) {
  return file != nullptr ? absl::string_view(file->path()) : "heap wal-index";
}

uint32_t MaxLogFrames() { return max_log_frames.load(std::memory_order_relaxed); }

void SetMaxLogFramesForTesting(uint32_t frames) {
  max_log_frames.store(frames == 0 || frames > kMaxLogFrames ? kMaxLogFrames : frames,
                       std::memory_order_relaxed);
}

WalIndex::WalIndex(vfs::File* file)
    : file_(file), regions_(std::make_unique<std::atomic<uint8_t*>[]>(kNumRegions)) {}

WalIndex::~WalIndex() = default;


std::atomic<IndexHook> internal::index_hook{nullptr};

void SetIndexHookForTesting(IndexHook hook) {
  internal::index_hook.store(hook, std::memory_order_relaxed);
}

absl::StatusOr<std::unique_ptr<WalIndex>> WalIndex::OpenShared(vfs::File* file, bool initialize) {
  absl::StatusOr<uint8_t*> r0 = file->MapSharedRegion(0, kRegionSize);
  if (absl::IsUnimplemented(r0.status())) {
    return absl::UnimplementedError(
        absl::StrCat(file->path(), ": shared memory is not supported by this file system: ",
                     r0.status().message()));
  }
  if (!r0.ok()) return r0.status();
  JKV_RETURN_IF_ERROR(CheckAlignment(*r0, file->path()));
  std::unique_ptr<WalIndex> index(new WalIndex(file));
  index->region0_ = *r0;
  index->regions_[0].store(*r0, std::memory_order_release);
  if (initialize) InitializeRegion0(*r0);
  JKV_RETURN_IF_ERROR(CheckLayoutVersion(*r0, file->path()));
  return index;
}

std::unique_ptr<WalIndex> WalIndex::OpenHeap() {
  std::unique_ptr<WalIndex> index(new WalIndex(nullptr));
  absl::StatusOr<uint8_t*> r0 = index->Region(0);
  JKV_CHECK(r0.ok());  // heap regions cannot fail (operator new aborts instead)
  index->region0_ = *r0;
  InitializeRegion0(*r0);
  return index;
}

absl::StatusOr<uint8_t*> WalIndex::Region(uint32_t region) {
  JKV_DCHECK(region < kNumRegions);
  if (uint8_t* p = regions_[region].load(std::memory_order_acquire)) return p;
  base::MutexLock lock(&map_mu_);
  // Another thread may have mapped it since the load above; the mutex orders us after it.
  if (uint8_t* p = regions_[region].load(std::memory_order_relaxed)) return p;
  uint8_t* p = nullptr;
  if (file_ == nullptr) {
    heap_.push_back(std::make_unique<uint8_t[]>(kRegionSize));  // zeroed
    p = heap_.back().get();
  } else {
    JKV_ASSIGN_OR_RETURN(p, file_->MapSharedRegion(region, kRegionSize));
  }
  JKV_RETURN_IF_ERROR(CheckAlignment(p, internal::IndexName(file_)));
  regions_[region].store(p, std::memory_order_release);
  return p;
}

absl::StatusOr<uint8_t*> WalIndex::ExistingRegion(uint32_t region) {
  JKV_DCHECK(region < kNumRegions);
  if (uint8_t* p = regions_[region].load(std::memory_order_acquire)) return p;
  // A heap region that was never mapped was never written either.
  if (file_ == nullptr) return nullptr;
  // Another process may have appended into it: it exists when the file covers it.
  JKV_ASSIGN_OR_RETURN(uint64_t size, file_->Size());
  if (size < (uint64_t{region} + 1) * kRegionSize) return nullptr;
  return Region(region);
}

// --- the index header

bool WalIndex::ReadHeader(IndexHeader* out) const {
  Point("shm:read_header");
  return ReadCopies(kHeaderAOffset, kHeaderBOffset, "shm:read_header:a_read", out);
}

bool WalIndex::ReadAppendedHeader(IndexHeader* out) const {
  Point("shm:read_appended");
  return ReadCopies(kAppendedCOffset, kAppendedDOffset, "shm:read_appended:c_read", out);
}

bool WalIndex::ReadCopies(size_t first, size_t second, const char* between,
                          IndexHeader* out) const {
  // The copies this thread last found whole: words equal to them hold a checksum already
  // checked against them (the checksum is among the words) and a plausible header, so checking
  // again would only repeat a pure function's answer. Most reads find the header unchanged
  // since the last (every read transaction reads it once, every write transaction more), and
  // its checksum was a tenth of a cached point read's time (BM_DbGet/posix_wal).
  thread_local HeaderWords last_whole{};
  thread_local bool has_last_whole = false;
  // Each word is compared as it is loaded. Comparing the arrays afterwards let the compiler
  // load them 16 bytes at a time right after the 4-byte stores that filled them, a load the
  // CPU cannot forward from those stores: it waited for them to retire, about 8% of a cached
  // point read (BM_DbGet/posix_wal).
  uint8_t* const r0 = region0();
  HeaderWords a;
  uint32_t since_last = 0;  // nonzero: a differs from last_whole
  for (int i = 0; i < kCopyWords; ++i) {
    a[i] = LoadHeaderWord(r0, first, i);
    since_last |= a[i] ^ last_whole[i];
  }
  Point(between);
  uint32_t torn = 0;  // nonzero: the copies differ
  for (int i = 0; i < kCopyWords; ++i) torn |= LoadHeaderWord(r0, second, i) ^ a[i];
  // A torn header is waited out (every caller retries it): the hook's "wait" lets the
  // publisher run.
  if (torn != 0) {  // a writer is between the copies (or died there)
    Point("wait");
    return false;
  }
  if (has_last_whole && since_last == 0) {
    *out = DecodeHeader(a);
    return true;
  }
  const uint64_t checksum = uint64_t{a[kHeaderWords + 1]} << 32 | a[kHeaderWords];
  if (checksum != HeaderChecksum(a)) {  // torn copies that happen to agree
    Point("wait");
    return false;
  }
  IndexHeader header = DecodeHeader(a);
  if (!Plausible(header)) return false;
  last_whole = a;
  has_last_whole = true;
  *out = header;
  return true;
}

bool WalIndex::ParseHeader(absl::Span<const uint8_t> prefix, IndexHeader* out) {
  if (prefix.size() < kCkptInfoOffset) return false;
  // A private, aligned copy: the accessors load through std::atomic_ref.
  alignas(8) uint8_t copy[kCkptInfoOffset];
  std::memcpy(copy, prefix.data(), kCkptInfoOffset);
  if (LayoutVersion(copy).load(std::memory_order_relaxed) != kShmLayoutVersion) return false;
  const HeaderWords a = LoadCopy(copy, kHeaderAOffset);
  const HeaderWords b = LoadCopy(copy, kHeaderBOffset);
  if (a != b) return false;
  const uint64_t checksum = uint64_t{a[kHeaderWords + 1]} << 32 | a[kHeaderWords];
  if (checksum != HeaderChecksum(a)) return false;
  IndexHeader header = DecodeHeader(a);
  if (!Plausible(header)) return false;
  *out = header;
  return true;
}

bool WalIndex::GenerationIs(int log, uint32_t ckpt_seq) const {
  JKV_DCHECK(log == 0 || log == 1);
  Point("shm:generation_is");
  const int word = 4 + 7 * log;  // LogState::ckpt_seq of `log` (EncodeHeader)
  // The caller's reads before this check (a hash lookup, a pread of a frame) must not be
  // satisfied after it: an acquire load orders only what follows it. With the release fence
  // at the end of WriteHeader, a read that saw anything the next generation wrote sees that
  // generation here. (A compiler barrier on x86; a real barrier on weakly ordered CPUs.)
  ThreadFence(std::memory_order_acquire);
  return LoadHeaderWord(region0(), kHeaderAOffset, word) == ckpt_seq &&
         LoadHeaderWord(region0(), kHeaderBOffset, word) == ckpt_seq;
}

bool WalIndex::ReadHeaderCopy(int copy, IndexHeader* out) const {
  return ReadOneCopy(copy == 0 ? kHeaderAOffset : kHeaderBOffset, out);
}

bool WalIndex::ReadAppendedHeaderCopy(int copy, IndexHeader* out) const {
  return ReadOneCopy(copy == 0 ? kAppendedCOffset : kAppendedDOffset, out);
}

bool WalIndex::ReadOneCopy(size_t offset, IndexHeader* out) const {
  const HeaderWords w = LoadCopy(region0(), offset);
  const uint64_t checksum = uint64_t{w[kHeaderWords + 1]} << 32 | w[kHeaderWords];
  if (checksum != HeaderChecksum(w)) return false;
  IndexHeader header = DecodeHeader(w);
  if (!Plausible(header)) return false;
  *out = header;
  return true;
}

void WalIndex::WriteHeader(const IndexHeader& header) {
  WriteAppendedHeader(header);
  PublishHeader(header);
}

void WalIndex::WriteAppendedHeader(const IndexHeader& header) {
  JKV_DCHECK(header.page_size != 0);
  JKV_DCHECK(header.current_log <= 1);
  const HeaderWords words = EncodeHeader(header);
  Point("shm:write_appended");
  StoreCopy(region0(), kAppendedDOffset, words);
  Point("shm:write_appended:d_written");
  StoreCopy(region0(), kAppendedCOffset, words);
}

void WalIndex::PublishHeader(const IndexHeader& header) {
  JKV_DCHECK(header.page_size != 0);
  JKV_DCHECK(header.current_log <= 1);
  const HeaderWords words = EncodeHeader(header);
  Point("shm:write_header");
  // B first: until A matches it again, readers see the copies disagree and retry.
  StoreCopy(region0(), kHeaderBOffset, words);
  Point("shm:write_header:b_written");
  StoreCopy(region0(), kHeaderAOffset, words);
  // Pairs with the acquire fence in GenerationIs: every store after this one (a restart's
  // cleared hash entries, its new frames written into the log) becomes visible after the new
  // generation does. Release stores alone order only what came before them.
  ThreadFence(std::memory_order_release);
}

bool WalIndex::CompletePublishFromB() {
  const HeaderWords words = LoadCopy(region0(), kHeaderBOffset);
  const uint64_t checksum = uint64_t{words[kHeaderWords + 1]} << 32 | words[kHeaderWords];
  if (checksum != HeaderChecksum(words) || !Plausible(DecodeHeader(words))) return false;
  Point("shm:complete_publish");
  StoreCopy(region0(), kHeaderAOffset, words);
  ThreadFence(std::memory_order_release);  // as PublishHeader's
  return true;
}

void WalIndex::CorruptHeaderForTesting() {
  Word<uint32_t>(region0(), kHeaderAOffset + 4 * kHeaderWords)
      .fetch_xor(0x5A5A5A5A, std::memory_order_release);
}

void WalIndex::CorruptAppendedCopyForTesting(int copy) {
  Word<uint32_t>(region0(), (copy == 0 ? kAppendedCOffset : kAppendedDOffset) + 4 * kHeaderWords)
      .fetch_xor(0x5A5A5A5A, std::memory_order_release);
}

// --- checkpoint info

uint32_t WalIndex::backfill(int log) const {
  Point("shm:backfill");
  return Backfill(region0(), log).load();
}
void WalIndex::set_backfill(int log, uint32_t frames) {
  Point("shm:set_backfill");
  Backfill(region0(), log).store(frames);
}
uint64_t WalIndex::ckpt_target(int log) const {
  Point("shm:ckpt_target");
  return CkptTarget(region0(), log).load();
}
void WalIndex::set_ckpt_target(int log, uint64_t target) {
  Point("shm:set_ckpt_target");
  CkptTarget(region0(), log).store(target);
}
uint64_t WalIndex::copied_through(int log) const {
  Point("shm:copied_through");
  return CopiedThrough(region0(), log).load();
}
void WalIndex::set_copied_through(int log, uint64_t v) {
  Point("shm:set_copied_through");
  CopiedThrough(region0(), log).store(v);
}
uint64_t WalIndex::written_through(int log) const {
  Point("shm:written_through");
  return WrittenThrough(region0(), log).load();
}
void WalIndex::set_written_through(int log, uint64_t v) {
  Point("shm:set_written_through");
  WrittenThrough(region0(), log).store(v);
}

// --- reader slots

uint64_t WalIndex::pin(int slot, int log) const {
  JKV_DCHECK(slot >= 0 && slot < kMaxSlots && (log == 0 || log == 1));
  return SlotWord(region0(), slot, log).load();
}
void WalIndex::set_pin(int slot, int log, uint64_t value) {
  JKV_DCHECK(slot >= 0 && slot < kMaxSlots && (log == 0 || log == 1));
  Point("shm:set_pin");
  SlotWord(region0(), slot, log).store(value);
}
void WalIndex::release_pin(int slot, int log, uint64_t value) {
  JKV_DCHECK(slot >= 0 && slot < kMaxSlots && (log == 0 || log == 1));
  Point("shm:set_pin");
  SlotWord(region0(), slot, log).store(value, std::memory_order_release);
}
uint64_t WalIndex::owner(int slot) const {
  JKV_DCHECK(slot >= 0 && slot < kMaxSlots);
  return SlotWord(region0(), slot, 2).load();
}
void WalIndex::set_owner(int slot, uint64_t owner) {
  JKV_DCHECK(slot >= 0 && slot < kMaxSlots);
  SlotWord(region0(), slot, 2).store(owner);
}

// --- overflow marks

uint64_t WalIndex::mark_pin(int mark, int log) const {
  JKV_DCHECK(mark >= 0 && mark < kOverflowMarks && (log == 0 || log == 1));
  return MarkWord(region0(), mark, log).load();
}
void WalIndex::set_mark_pin(int mark, int log, uint64_t value) {
  JKV_DCHECK(mark >= 0 && mark < kOverflowMarks && (log == 0 || log == 1));
  Point("shm:set_mark");
  MarkWord(region0(), mark, log).store(value);
}

uint64_t WalIndex::holder_pin(int holder, int log) const {
  return holder < kMaxSlots ? pin(holder, log) : mark_pin(holder - kMaxSlots, log);
}

absl::StatusOr<bool> WalIndex::HolderGone(int holder) {
  if (holder < kMaxSlots) return SlotOwnerGone(holder);
  if (holder >= kPinHolders) return absl::InvalidArgumentError("no such pin holder");
  if (file_ == nullptr) return true;
  // As SlotOwnerGone: the caller's own lock never conflicts with its own query.
  return file_->CanLock(kMarkLockBase + (holder - kMaxSlots), 1, LockMode::kExclusive);
}

// --- locks

absl::StatusOr<bool> WalIndex::TryLock(ShmLock lock, LockMode mode) {
  Point("shm:lock");
  if (file_ == nullptr) return true;
  return file_->TryLock(kLockBase + static_cast<uint64_t>(lock), 1, mode);
}

uint32_t WalIndex::wake_seq(Wake w) const {
  return WakeSeq(region0(), static_cast<int>(w)).load();
}

uint32_t WalIndex::wake_waiters(Wake w) const {
  return WakeWaiters(region0(), static_cast<int>(w)).load(std::memory_order_relaxed);
}

// A waiter counts itself, then looks at seq; a releaser bumps seq, then looks at the count
// (both seq_cst): either the waiter sees the bump and does not sleep, or the releaser sees the
// waiter and wakes it (the kernel compares seq again as it queues the waiter).
void WalIndex::WaitWake(Wake w, uint32_t seen, absl::Duration timeout) {
  const int kind = static_cast<int>(w);
  Point("wait");
  WakeWaiters(region0(), kind).fetch_add(1);
  if (WakeSeq(region0(), kind).load() == seen) {
    vfs::WaitForWordChange(
        reinterpret_cast<const uint32_t*>(region0() + kWakeOffset + 8 * kind), seen, timeout);
  }
  WakeWaiters(region0(), kind).fetch_sub(1);
}

void WalIndex::Bump(Wake w, uint32_t step) {
  const int kind = static_cast<int>(w);
  WakeSeq(region0(), kind).fetch_add(step);
  if (WakeWaiters(region0(), kind).load() != 0) {
    vfs::WakeWordWaiters(reinterpret_cast<const uint32_t*>(region0() + kWakeOffset + 8 * kind));
  }
}

void WalIndex::MarkHeld(Wake w) {
  std::atomic_ref<uint32_t> seq = WakeSeq(region0(), static_cast<int>(w));
  uint32_t v = seq.load();
  while (!seq.compare_exchange_weak(v, v + ((v & 1) == 0 ? 1 : 2))) {
  }
}

void WalIndex::MarkReleasing(Wake w) { WakeSeq(region0(), static_cast<int>(w)).fetch_add(1); }

absl::Status WalIndex::Unlock(ShmLock lock) {
  Point("shm:unlock");
  if (file_ == nullptr) return absl::OkStatus();
  return file_->Unlock(kLockBase + static_cast<uint64_t>(lock), 1);
}

absl::StatusOr<bool> WalIndex::TryLockSlot(int slot) {
  JKV_RETURN_IF_ERROR(CheckSlot(slot));
  if (file_ == nullptr) {
    base::MutexLock lock(&map_mu_);
    if (heap_slots_[slot]) return false;
    heap_slots_[slot] = true;
  } else {
    JKV_ASSIGN_OR_RETURN(bool locked,
                         file_->TryLock(kSlotLockBase + slot, 1, LockMode::kExclusive));
    if (!locked) return false;
  }
  // S1: raised before the slot's owner can store a pin in it.
  std::atomic_ref<uint32_t> used = SlotsUsed(region0());
  uint32_t seen = used.load();
  while (seen <= static_cast<uint32_t>(slot) && !used.compare_exchange_weak(seen, slot + 1)) {
  }
  return true;
}

int WalIndex::slots_used() const {
  return static_cast<int>(std::min<uint32_t>(SlotsUsed(region0()).load(), kMaxSlots));
}

absl::Status WalIndex::UnlockSlot(int slot) {
  JKV_RETURN_IF_ERROR(CheckSlot(slot));
  if (file_ == nullptr) {
    base::MutexLock lock(&map_mu_);
    heap_slots_[slot] = false;
    return absl::OkStatus();
  }
  return file_->Unlock(kSlotLockBase + slot, 1);
}

absl::StatusOr<bool> WalIndex::SlotOwnerGone(int slot) {
  JKV_RETURN_IF_ERROR(CheckSlot(slot));
  if (file_ == nullptr) {
    base::MutexLock lock(&map_mu_);
    return !heap_slots_[slot];
  }
  // Free to take exclusively means nobody holds it. (A File's own lock never conflicts with
  // its own query: asked about its own slot, this says true.)
  return file_->CanLock(kSlotLockBase + slot, 1, LockMode::kExclusive);
}

absl::StatusOr<bool> WalIndex::TryLockMark(int mark, LockMode mode) {
  if (mark < 0 || mark >= kOverflowMarks) return absl::InvalidArgumentError("no such mark");
  Point("shm:lock");
  if (file_ == nullptr) return true;
  return file_->TryLock(kMarkLockBase + mark, 1, mode);
}

absl::Status WalIndex::UnlockMark(int mark) {
  if (mark < 0 || mark >= kOverflowMarks) return absl::InvalidArgumentError("no such mark");
  Point("shm:unlock");
  if (file_ == nullptr) return absl::OkStatus();
  return file_->Unlock(kMarkLockBase + mark, 1);
}

}  // namespace journalkv::shm
