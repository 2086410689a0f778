// The pager's side of WAL mode: read and write transactions over wal::WalConnection, checkpoints,
// and switching a database between the rollback and WAL journal families.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/pager.h"
#include "pager/pager_internal.h"
#include "vfs/sync.h"

namespace journalkv::pager {
namespace {

using checkpoint::CheckpointMode;
using checkpoint::CheckpointResult;

constexpr uint32_t kCacheGenerationSpan = 1u << 29;
std::atomic<uint32_t> cache_generation_span{kCacheGenerationSpan};

// Every word of it, not a hash of them: two published states must never share a key.
std::array<uint32_t, 4> HeaderKey(const wal::WalSnapshot& s) {
  return {s.change, s.cur().seq, s.cur().mx, static_cast<uint32_t>(s.current)};
}

// A write transaction's dirty pages as frames to append, sealed and in page order (the last
// becomes a commit's commit frame); *order gets their page numbers.
template <typename DirtyMap>
std::vector<wal::FramePage> SealedFrames(DirtyMap& dirty, std::vector<uint32_t>* order) {
  order->clear();
  for (const auto& [n, page] : dirty) order->push_back(n);
  std::sort(order->begin(), order->end());
  std::vector<wal::FramePage> pages;
  pages.reserve(order->size());
  for (uint32_t n : *order) {
    PageBuffer& buffer = *dirty.at(n).buffer;
    SealPage(PageNo(n), Whole(buffer));
    pages.push_back({PageNo(n), absl::MakeConstSpan(buffer.bytes.get(), buffer.size)});
  }
  return pages;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const PageBuffer>> Pager::LoadWalPage(const wal::WalSnapshot& snapshot,
                                                                     PageNo page_no,
                                                                     wal::PageVersion* version) {
  auto buffer = std::make_shared<PageBuffer>(page_size_);
  absl::Status s = wal_->ReadPage(snapshot, page_no, version, Whole(*buffer));
  JKV_RETURN_IF_ERROR(CheckLoaded(page_no, s, *buffer));
  return std::shared_ptr<const PageBuffer>(std::move(buffer));
}

void SetCacheGenerationSpanForTesting(uint32_t span) {
  cache_generation_span.store(span == 0 ? kCacheGenerationSpan : span, std::memory_order_relaxed);
}

void Pager::NoteGenerationLocked(const wal::WalSnapshot& snapshot) {
  const uint32_t seq = snapshot.cur().seq;
  if (((seq - cache_generation_) & 0x7fffffffu) >=
      cache_generation_span.load(std::memory_order_relaxed)) {
    cache_.Clear();
    cache_generation_ = seq;
  }
}

absl::StatusOr<DbHeader> Pager::WalHeaderLocked(const wal::WalSnapshot& snapshot) {
  NoteGenerationLocked(snapshot);
  if (HeaderKey(snapshot) == wal_header_key_) return header_;
  JKV_ASSIGN_OR_RETURN(wal::PageVersion version, wal_->Locate(snapshot, PageNo(1)));
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> page1,
                       LoadWalPage(snapshot, PageNo(1), &version));
  JKV_ASSIGN_OR_RETURN(DbHeader header,
                       DecodeDbHeader(absl::MakeConstSpan(page1->bytes.get(), page1->size), path_));
  if (header.page_size != page_size_) {
    return absl::DataLossError(absl::StrCat(path_, " page 1: inconsistent page size"));
  }
  if (version.cacheable) cache_.Insert(PageNo(1), page1, version.key);
  header_ = header;
  wal_header_key_ = HeaderKey(snapshot);
  return header;
}

// W3: a read transaction that finds the index unchanged makes no system call: the snapshot
// comes from shared memory, the pin goes to this connection's slot, the header from memory.
absl::StatusOr<std::unique_ptr<ReadTxn>> Pager::BeginWalRead() {
  JKV_RETURN_IF_ERROR(TakeDeferredError());
  base::MutexLock lock(&mu_);
  JKV_RETURN_IF_ERROR(sticky_);
  JKV_ASSIGN_OR_RETURN(wal::WalSnapshot snapshot, wal_->BeginRead(Deadline(), writer_active_));
  absl::StatusOr<DbHeader> header = WalHeaderLocked(snapshot);
  if (!header.ok()) {
    wal_->EndRead(snapshot);
    return header.status();
  }
  ++readers_;
  ++reading_threads_[std::this_thread::get_id()];
  return std::unique_ptr<ReadTxn>(new ReadTxn(this, *header, snapshot));
}

absl::StatusOr<wal::WalSnapshot> Pager::AcquireWalWriterLocked(absl::Time deadline) {
  JKV_RETURN_IF_ERROR(sticky_);
  while (writer_active_) {
    JKV_RETURN_IF_ERROR(sticky_);
    if (cv_.WaitUntil(&mu_, deadline) == std::cv_status::timeout && writer_active_) {
      return absl::ResourceExhaustedError(
          "busy: another write transaction of this handle is open");
    }
  }
  writer_active_ = true;
  // The WRITE lock may take a while: readers of this handle go on meanwhile.
  mu_.Unlock();
  absl::StatusOr<wal::WalSnapshot> snapshot = wal_->BeginWrite(deadline);
  mu_.Lock();
  if (!snapshot.ok()) {
    writer_active_ = false;
    cv_.NotifyAll();
  }
  return snapshot;
}

void Pager::ReleaseWalWriter() {
  wal_->EndWrite();
  base::MutexLock lock(&mu_);
  writer_active_ = false;
  cv_.NotifyAll();
}

absl::StatusOr<std::unique_ptr<WriteTxn>> Pager::BeginWalWrite() {
  JKV_RETURN_IF_ERROR(TakeDeferredError());
  const absl::Time start = absl::Now();
  base::MutexLock lock(&mu_);
  JKV_ASSIGN_OR_RETURN(wal::WalSnapshot snapshot, AcquireWalWriterLocked(start + options_.busy_timeout));
  const absl::Time locked = absl::Now();
  absl::StatusOr<DbHeader> header = WalHeaderLocked(snapshot);
  if (!header.ok()) {
    mu_.Unlock();
    ReleaseWalWriter();
    mu_.Lock();
    return header.status();
  }
  auto txn = std::unique_ptr<WriteTxn>(new WriteTxn(this, *header, snapshot));
  txn->locked_at_ = locked;
  txn->lock_wait_ = locked - start;
  return txn;
}

absl::Status WriteTxn::SpillToLog() {
  std::vector<uint32_t> order;
  const std::vector<wal::FramePage> pages = SealedFrames(dirty_, &order);
  // Frames past the published mx_frame: no other connection looks at them, and a rollback or
  // a crash leaves them to be overwritten (W2).
  JKV_ASSIGN_OR_RETURN(std::vector<uint32_t> frames, pager_->wal_->Spill(pages));
  for (size_t i = 0; i < order.size(); ++i) log_frames_[order[i]] = frames[i];
  dirty_.clear();
  base::MutexLock lock(&pager_->mu_);
  ++pager_->stats_.spills;
  return absl::OkStatus();
}

absl::Status WriteTxn::CommitToLog() {
  DbHeader new_header = header_;
  new_header.journal_family = FamilyOf(pager_->options_.journal_mode);
  // Page 1 is logged only when the header changed (or no other page carries the commit
  // frame): WAL readers find commits through the index, not through a change counter, so a
  // one-page update costs one frame.
  dirty_.erase(1);
  if (new_header != start_header_ || dirty_.empty()) {
    ++new_header.change_counter;
    DirtyPage& page1 = dirty_[1];
    page1.buffer = std::make_shared<PageBuffer>(new_header.page_size);
    page1.original = nullptr;
    EncodeDbHeader(new_header, Whole(*page1.buffer));
  }
  std::vector<uint32_t> order;
  const std::vector<wal::FramePage> pages = SealedFrames(dirty_, &order);
  JKV_ASSIGN_OR_RETURN(std::vector<uint32_t> frames,
                       pager_->wal_->Commit(pages, new_header.page_count));
  wal::WalSnapshot published;
  {
    base::MutexLock lock(&pager_->mu_);
    published = pager_->wal_->Publish();
    pager_->NoteGenerationLocked(published);
    for (size_t i = 0; i < order.size(); ++i) {
      pager_->cache_.Insert(PageNo(order[i]), dirty_[order[i]].buffer,
                            wal::PageVersionKey(published.cur().seq, frames[i]));
    }
    pager_->header_ = new_header;
    pager_->wal_header_key_ = HeaderKey(published);
    ++pager_->stats_.commits;
  }
  End(/*clear_cache=*/false);
  pager_->AfterWalCommit(static_cast<uint32_t>(order.size()));
  return absl::OkStatus();
}

absl::Status Pager::AdoptLogPageSizeLocked(const absl::Status& failure) {
  // Either log may be the one with a header: in WAL2 a TRUNCATE leaves -wal empty (or a power
  // loss leaves it so) while -wal2 holds the frames, page 1 among them. (Looking at -wal only
  // as long as it existed left a WAL2 database whose page 1 a power loss tore during a
  // checkpoint unopenable: wal_crash_sweep_test, a recovery cut and a second power loss.)
  absl::StatusOr<wal::WalHeader> header = failure;
  for (const char* suffix : {"-wal", "-wal2"}) {
    absl::StatusOr<std::unique_ptr<vfs::File>> log =
        fs_->Open(path_ + suffix, {vfs::OpenMode::kReadOnly, vfs::FileKind::kWal});
    if (!log.ok()) continue;
    uint8_t bytes[wal::kWalHeaderSize];
    if (!(*log)->Read(0, absl::MakeSpan(bytes)).ok()) continue;
    header = wal::DecodeWalHeader(absl::MakeConstSpan(bytes));
    if (header.ok()) break;
  }
  if (!header.ok()) return failure;
  DbHeader placeholder;  // replaced by page 1 as the log has it at the first snapshot
  placeholder.page_size = header->page_size;
  placeholder.journal_family = FamilyOf(options_.journal_mode);
  header_ = placeholder;
  page_size_ = header->page_size;
  cache_.Clear();
  return absl::OkStatus();
}

// An opener in another mode of a database of a WAL family (wal or wal2, `header_`'s): when no
// other connection has it open, copy the whole log(s) into the database file and remove them
// and -shm; the caller then records its own family in page 1. REQUIRES: SHARED held.
absl::Status Pager::LeaveWalLocked() {
  const JournalMode from =
      header_.journal_family == JournalFamily::kWal2 ? JournalMode::kWal2 : JournalMode::kWal;
  const absl::string_view from_name = JournalModeName(from);
  if (options_.access == AccessMode::kReadOnly) {
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database is in ", from_name, " mode; open it in ", from_name,
        " mode to read it read-only"));
  }
  JKV_ASSIGN_OR_RETURN(bool reserved, lock_.TryReserved());
  bool exclusive = false;
  if (reserved) {
    JKV_ASSIGN_OR_RETURN(exclusive, lock_.TryExclusive());
  }
  if (!exclusive) {
    lock_.DowngradeToShared().IgnoreError();  // the error below is the one to report
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": the database is in ", from_name, " mode and other connections have it open; "
        "it can switch to ", JournalModeName(options_.journal_mode),
        " mode only when no other connection is open"));
  }
  // Alone: every WAL connection holds SHARED for its whole life, so no process has the -shm
  // mapped. The log is copied back through a heap index (as with exclusive locking), which
  // also works where the file system has no shared memory (a database a WAL opener created
  // there before it failed is not stuck), and the -shm, if any, is removed after it.
  PagerOptions alone = options_;
  alone.exclusive_locking = true;
  alone.journal_mode = from;
  absl::StatusOr<std::unique_ptr<wal::WalConnection>> wal =
      wal::WalConnection::Open(fs_, path_, db_file_.get(), page_size_, WalOptionsOf(alone));
  absl::Status s = wal.ok() ? (*wal)->CloseLast() : wal.status();
  if (wal.ok()) wal->reset();
  if (s.ok()) {
    absl::StatusOr<bool> shm_left = fs_->Exists(path_ + "-shm");
    s = shm_left.ok() ? (*shm_left ? fs_->Delete(path_ + "-shm") : absl::OkStatus())
                      : shm_left.status();
  }
  if (!s.ok()) {
    lock_.DowngradeToShared().IgnoreError();
    return s;
  }
  JKV_ASSIGN_OR_RETURN(bool wal_left, fs_->Exists(path_ + "-wal"));
  if (!wal_left && from == JournalMode::kWal2) {
    JKV_ASSIGN_OR_RETURN(wal_left, fs_->Exists(path_ + "-wal2"));
  }
  if (wal_left) {
    lock_.DowngradeToShared().IgnoreError();
    return absl::FailedPreconditionError(absl::StrCat(
        path_, ": could not copy the whole log back; the database stays in ", from_name,
        " mode"));
  }
  JKV_RETURN_IF_ERROR(lock_.DowngradeToShared());
  cache_.Clear();
  JKV_ASSIGN_OR_RETURN(header_, ReadHeaderFromFile());
  return absl::OkStatus();
}

absl::Status Pager::SetFamily(JournalFamily family) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTxn> txn, BeginWrite());
  txn->header_.journal_family = family;
  return txn->Commit();
}

}  // namespace journalkv::pager
