// WAL and WAL2 transactions over wal::WalConnection (wal_strategy.h): snapshots and the page
// cache's page versions, the writer role, and a write transaction's spill and commit to the
// log. The checkpoint policy is wal_policy.cc.
#include "pager/wal_strategy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "pager/txn.h"
#include "pager/pager_internal.h"

namespace journalkv::pager {
namespace {

constexpr uint32_t kCacheGenerationSpan = 1u << 29;
std::atomic<uint32_t> cache_generation_span{kCacheGenerationSpan};

// How many generations `to` is after `from` in serial order (modulo 2^31).
uint32_t GenerationsAfter(uint32_t from, uint32_t to) { return (to - from) & 0x7fffffffu; }

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

class WalReadTxn final : public ReadTxn {
 public:
  WalReadTxn(WalStrategy* strategy, PagerCore* core, const DbHeader& header,
             const wal::WalSnapshot& snapshot, HotPages* hot, MappedPages::ReadStart map)
      : ReadTxn(core, header),
        strategy_(strategy),
        snapshot_(snapshot),
        hot_(hot),
        mapped_(strategy->mapped_.get()),
        map_(map) {}
  ~WalReadTxn() override {
    // The table's hits are counted once per transaction: a shared counter's atomic add per
    // page was about 4% of a cached point read, and every reading thread's adds fought over it.
    if (hot_hits_ != 0) core_->counters_.Add(base::Counter::kCacheHits, hot_hits_);
    if (mapped_pages_ != 0) core_->counters_.Add(base::Counter::kMapPages, mapped_pages_);
    strategy_->EndRead(snapshot_, thread_, hot_);
  }

  absl::StatusOr<PageRef> Get(PageNo page_no) override {
    JKV_RETURN_IF_ERROR(CheckPageNo(page_no));
    if (mapped_ != nullptr) JKV_RETURN_IF_ERROR(mapped_->CheckDamage(map_.damage));  // O2
    if (const HotPages::Entry* hot = hot_->Find(page_no.value())) {
      ++hot_hits_;
      // O8: a leaf read in place, at its address in the map.
      if (hot->image == nullptr) return PageRef::Mapped(page_no, hot->bytes, usable_size());
      // H2: hot_ keeps the image until this transaction ends, and no PageRef outlives it.
      return PageRef::Borrowed(page_no, hot->image.get(), hot->bytes, usable_size());
    }
    if (mapped_ == nullptr) {
      JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer,
                           strategy_->CleanPage(snapshot_, page_no));
      AddHot(page_no, buffer, HotPages::Kind::kAny);
      return PageRef(page_no, std::move(buffer), usable_size(), PageRef::Bytes::kFixed);
    }
    if (snapshot_.copied) {
      // O9 (wal/wal_types.h): every frame of this snapshot is in the database file, and stays
      // there while it is pinned: the page is the file's, with no wal-index lookup. Not for
      // the page cache (its key for the file's page means "no frame"): a page the map does
      // not hand out (O7) goes the Locate way below.
      const uint8_t* bytes = mapped_->Page(page_no, map_.key);
      JKV_RETURN_IF_ERROR(mapped_->CheckDamage(map_.damage));  // O2
      if (bytes != nullptr) {
        ++mapped_pages_;
        return PageRef::Mapped(page_no, bytes, usable_size());
      }
    }
    JKV_ASSIGN_OR_RETURN(wal::PageVersion version, strategy_->wal_->Locate(snapshot_, page_no));
    if (version.frame == 0 && version.cacheable) {
      // The database file's page, in place in the map: checked once per key (O5..O7).
      const uint8_t* bytes = mapped_->Page(page_no, map_.key);
      JKV_RETURN_IF_ERROR(mapped_->CheckDamage(map_.damage));  // O2: the check may have faulted
      if (bytes != nullptr) {
        ++mapped_pages_;
        return PageRef::Mapped(page_no, bytes, usable_size());
      }
    }
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> buffer,
                         strategy_->CleanPageAt(snapshot_, page_no, version));
    JKV_RETURN_IF_ERROR(mapped_->CheckDamage(map_.damage));  // O2: a copy of zeros (O7)
    AddHot(page_no, buffer, HotPages::Kind::kAny);
    return PageRef(page_no, std::move(buffer), usable_size(), PageRef::Bytes::kFixed);
  }

  absl::Status CheckReads() const override {
    return mapped_ == nullptr ? absl::OkStatus() : mapped_->CheckDamage(map_.damage);  // O2
  }

  // The table's pages only: a lock-free probe, no lookup in the wal-index or the cache.
  const uint8_t* BytesAtHand(PageNo page_no) override {
    if (page_no.value() < 2) return nullptr;
    const HotPages::Entry* hot = hot_->Find(page_no.value());
    return hot != nullptr ? hot->bytes : nullptr;
  }

  // O8: a leaf read in place enters the table at its address in the map.
  void NoteLeaf(const PageRef& page) override {
    if (page.mapped() && hot_->HasRoom(HotPages::Kind::kAny) &&
        hot_->Find(page.page_no().value()) == nullptr) {
      wal::CallWalHook("read:hot_add");
      hot_->AddMapped(page.page_no().value(), page.data().data());
    }
  }

  // An interior page may take the table's last quarter, which leaves may not (hot_pages.h).
  void NoteInterior(const PageRef& page) override {
    // A borrowed page came from the table: only one read through the cache may need adding.
    if (page.owner() != nullptr && hot_->Find(page.page_no().value()) == nullptr) {
      AddHot(page.page_no(), page.owner(), HotPages::Kind::kInterior);
    } else if (page.mapped() && hot_->HasRoom(HotPages::Kind::kInterior) &&
               hot_->Find(page.page_no().value()) == nullptr) {
      // An interior page read in place: copied into the table, where it gets its search hints
      // (a mapped page keeps none) and every read of the identity finds it without a lookup.
      // The copy is guarded and checked again: the map may have read zeros (O1), and the
      // table's images are trusted by every transaction of the identity.
      auto image = std::make_shared<PageBuffer>(core_->page_size_);
      const uint8_t* bytes = page.data().data();
      if (!vfs::GuardedCopy(image->bytes.get(), bytes, image->size) ||
          !PageChecksumOk(page.page_no(), Whole(*image))) {
        return;
      }
      AddHot(page.page_no(), image, HotPages::Kind::kInterior);
    }
  }

 private:
  // H1, H2 (hot_pages.h): into this transaction's own table, which only transactions of its
  // snapshot's identity read, an image read at this snapshot.
  void AddHot(PageNo page_no, const std::shared_ptr<const PageBuffer>& buffer,
              HotPages::Kind kind) {
    if (!hot_->HasRoom(kind)) return;
    wal::CallWalHook("read:hot_add");
    hot_->Add(page_no.value(), buffer, kind);
  }

  absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadUncached(PageNo page_no) override {
    JKV_ASSIGN_OR_RETURN(wal::PageVersion version, strategy_->wal_->Locate(snapshot_, page_no));
    return strategy_->LoadPage(snapshot_, page_no, &version);
  }

  WalStrategy* const strategy_;
  const wal::WalSnapshot snapshot_;  // the snapshot this transaction reads
  HotPages* const hot_;  // the pages met at snapshot_'s identity, alive until EndRead (H2)
  uint64_t hot_hits_ = 0;                 // pages found in hot_, for the cache_hits counter
  MappedPages* const mapped_;             // the strategy's, or null without a map
  const MappedPages::ReadStart map_;      // the key and damage at begin (O2, O5)
  uint64_t mapped_pages_ = 0;             // pages handed out of the map, for map_pages
};

class WalWriteTxn final : public WriteTxn {
 public:
  WalWriteTxn(WalStrategy* strategy, PagerCore* core, const DbHeader& header,
              const wal::WalSnapshot& snapshot, absl::Time locked_at, absl::Duration lock_wait)
      : WriteTxn(core, header),
        strategy_(strategy),
        snapshot_(snapshot),
        locked_at_(locked_at),
        lock_wait_(lock_wait) {}
  ~WalWriteTxn() override { Rollback().IgnoreError(); }  // a failure is sticky

 private:
  absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) override;
  bool KeepsOriginal(PageNo) const override { return false; }  // the log never needs them
  // L8: the page at the writer's start snapshot, past which its own frames lie unpublished.
  absl::StatusOr<std::shared_ptr<const PageBuffer>> StartImage(PageNo page_no) override {
    return strategy_->CleanPage(snapshot_, page_no);
  }
  bool HasWritten() const override { return !log_frames_.empty(); }
  JournalFamily family() const override { return strategy_->family(); }
  absl::Status SpillPages() override;
  absl::Status CommitPages() override;
  absl::Status CommitPagesAsync(std::function<void(const CommitRecord&)> on_durable,
                                std::shared_ptr<CommitPromise>* promise) override;
  // The commit's append (frames, index entries, the appended header; W2, W12 a) and its
  // record, up to but not including End: *ticket and *new_header are what the flush needs.
  absl::Status AppendCommit(wal::WalConnection::CommitTicket* ticket, DbHeader* new_header,
                            uint32_t* commit_frames);
  absl::Status UndoWrites(bool* clear_cache) override;
  void EndWrite(bool clear_cache) override;

  WalStrategy* const strategy_;
  const wal::WalSnapshot snapshot_;
  const absl::Time locked_at_;       // when the writer role and WRITE lock were held
  const absl::Duration lock_wait_;   // how long that took
  // Spilled page -> its frame. The cache holds the frame's image under the version key of
  // that frame (SpillPages), which only this transaction looks up (no snapshot reaches past
  // the published mx_frame) until the commit publishes it; a rollback erases those entries
  // before any later transaction can write other images at those frames.
  absl::flat_hash_map<uint32_t, uint32_t> log_frames_;
  uint64_t FrameKey(uint32_t frame) const {
    return wal::PageVersionKey(snapshot_.cur().seq, frame);
  }
};

absl::StatusOr<std::unique_ptr<WalStrategy>> WalStrategy::Open(PagerCore* core) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<wal::WalConnection> wal,
                       wal::WalConnection::Open(core->fs_, core->path_, core->db_file_.get(),
                                                core->page_size_, WalOptionsOf(core->options_),
                                                &core->mu_));
  std::unique_ptr<WalStrategy> strategy(new WalStrategy(core, std::move(wal)));
  if (vfs::ReadMap* map = core->db_file_->read_map(); map != nullptr) {
    strategy->mapped_ = std::make_unique<MappedPages>(map, core->page_size_, core->path_);
  }
  strategy->StartPolicy();
  return strategy;
}

wal::WalOptions WalOptionsOf(const PagerOptions& options) {
  wal::WalOptions w;
  w.wal2 = options.journal_mode == JournalMode::kWal2;
  w.sync = options.sync;
  w.read_only = options.access == AccessMode::kReadOnly;
  w.exclusive_locking = options.exclusive_locking;
  w.wal2_switch_pages = options.wal2_switch_pages;
  w.size_limit = options.wal_size_limit;
  w.grow_bytes = options.wal_grow_bytes;
  w.log_map_bytes = options.mmap_size;  // Q1: the logs are mapped with the database file
  w.reader_slots = options.reader_slots;
  w.busy_timeout = options.busy_timeout;
  w.private_reader_byte = kPrivateReaderByte;
  return w;
}

void SetCacheGenerationSpanForTesting(uint32_t span) {
  cache_generation_span.store(span == 0 ? kCacheGenerationSpan : span, std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// Reads

absl::StatusOr<std::shared_ptr<const PageBuffer>> WalStrategy::LoadPage(const wal::WalSnapshot& snapshot,
                                                                     PageNo page_no,
                                                                     wal::PageVersion* version) {
  auto buffer = std::make_shared<PageBuffer>(core_->page_size_);
  absl::Status s = wal_->ReadPage(snapshot, page_no, version, Whole(*buffer));
  JKV_RETURN_IF_ERROR(core_->CheckLoaded(page_no, s, *buffer));
  return std::shared_ptr<const PageBuffer>(std::move(buffer));
}

// G1 (wal_strategy.h).
void WalStrategy::NoteEpochLocked() {
  const uint32_t epoch = wal_->append_epoch();  // after the snapshot was taken (G2)
  if (epoch == cache_epoch_) return;
  cache_epoch_ = epoch;
  core_->cache_.Clear();
  header_key_.reset();
}

void WalStrategy::NoteGenerationLocked(const wal::WalSnapshot& snapshot) {
  const uint32_t seq = snapshot.cur().seq;
  const uint32_t span = cache_generation_span.load(std::memory_order_relaxed);
  const uint32_t from_oldest = GenerationsAfter(cache_oldest_, seq);
  if (from_oldest <= GenerationsAfter(cache_oldest_, cache_newest_)) return;  // inside
  if (from_oldest < span) {
    cache_newest_ = seq;
    return;
  }
  if (GenerationsAfter(seq, cache_newest_) < span) {  // an older snapshot, noted late
    cache_oldest_ = seq;
    return;
  }
  core_->cache_.Clear();
  // H5: reads of the current table keep it. One without readers is freed here, under the
  // mutex: at most once in 2^29 generations.
  std::unique_ptr<HotPages> retired;
  RetireHotLocked(&retired);
  cache_oldest_ = cache_newest_ = seq;
}

void WalStrategy::RetireHotLocked(std::unique_ptr<HotPages>* retired) {
  JKV_DCHECK(hot_ != nullptr || hot_readers_ == 0);  // H5
  if (hot_readers_ > 0) {
    replaced_hot_.emplace_back(std::move(hot_), hot_readers_);  // H2: its reads go on
  } else {
    *retired = std::move(hot_);
  }
  hot_readers_ = 0;
}

absl::StatusOr<DbHeader> WalStrategy::HeaderLocked(const wal::WalSnapshot& snapshot) {
  NoteEpochLocked();
  NoteGenerationLocked(snapshot);
  if (HeaderKey(snapshot) == header_key_) return core_->header_;
  JKV_ASSIGN_OR_RETURN(wal::PageVersion version, wal_->Locate(snapshot, PageNo(1)));
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> page1,
                       LoadPage(snapshot, PageNo(1), &version));
  JKV_ASSIGN_OR_RETURN(DbHeader header,
                       DecodeDbHeader(absl::MakeConstSpan(page1->bytes.get(), page1->size), core_->path_));
  if (header.page_size != core_->page_size_) {
    return absl::DataLossError(absl::StrCat(core_->path_, " page 1: inconsistent page size"));
  }
  if (version.cacheable) core_->cache_.Insert(PageNo(1), page1, version.key);
  core_->header_ = header;
  header_key_ = HeaderKey(snapshot);
  return header;
}

// W3: a read transaction that finds the index unchanged makes no system call: the snapshot
// comes from shared memory, the pin goes to this connection's slot, the header from memory.
absl::StatusOr<std::unique_ptr<ReadTxn>> WalStrategy::BeginRead() {
  JKV_RETURN_IF_ERROR(TakeDeferredError());
  std::unique_ptr<HotPages> retired;  // a replaced table goes after the mutex is let go
  base::MutexLock lock(&core_->mu_);
  PinMutexHeld();
  JKV_RETURN_IF_ERROR(core_->sticky_);
  JKV_ASSIGN_OR_RETURN(wal::WalSnapshot snapshot,
                       wal_->BeginRead(core_->busy_timeout(), core_->writer_active_));
  absl::StatusOr<DbHeader> header = HeaderLocked(snapshot);
  if (!header.ok()) {
    wal_->EndRead(snapshot);
    return header.status();
  }
  ++core_->readers_;
  const std::thread::id self = std::this_thread::get_id();
  auto mine = FindReadingThreadLocked(self);
  if (mine != reading_threads_.end()) {
    ++mine->second;
  } else {
    reading_threads_.emplace_back(self, 1);
  }
  // O5: the key after the pin (wal_->BeginRead) and after any repair.
  MappedPages::ReadStart map;
  if (mapped_ != nullptr) map = mapped_->BeginRead(wal_->db_epoch());
  return std::unique_ptr<ReadTxn>(new WalReadTxn(this, core_, *header, snapshot,
                                                 HotPagesLocked(snapshot, &retired), map));
}

// H1 (hot_pages.h).
HotPages* WalStrategy::HotPagesLocked(const wal::WalSnapshot& snapshot,
                                      std::unique_ptr<HotPages>* retired) {
  // Every word Locate reads of the snapshot: equal identities find each page at one version.
  const std::array<uint32_t, 5> identity = {snapshot.logs[0].seq, snapshot.logs[0].mx,
                                            snapshot.logs[1].seq, snapshot.logs[1].mx,
                                            static_cast<uint32_t>(snapshot.current)};
  if (hot_ == nullptr || identity != hot_identity_) {
    RetireHotLocked(retired);  // H5
    hot_ = std::make_unique<HotPages>(HotPages::LimitForCache(core_->options_.cache_pages));
    hot_identity_ = identity;
  }
  ++hot_readers_;
  return hot_.get();
}

void WalStrategy::EndRead(const wal::WalSnapshot& snapshot, std::thread::id thread,
                          HotPages* hot) {
  std::unique_ptr<HotPages> unused;  // a replaced table's last read: freed after the mutex
  base::MutexLock lock(&core_->mu_);
  // H5: `hot` lives until this, so its address names it, not a later table.
  if (hot == hot_.get()) {
    JKV_DCHECK(hot_readers_ > 0);
    --hot_readers_;
  } else {
    auto it = std::find_if(replaced_hot_.begin(), replaced_hot_.end(),
                           [hot](const auto& t) { return t.first.get() == hot; });
    JKV_DCHECK(it != replaced_hot_.end());
    if (it != replaced_hot_.end() && --it->second == 0) {
      unused = std::move(it->first);
      replaced_hot_.erase(it);
    }
  }
  PinMutexHeld();
  --core_->readers_;
  wal_->EndRead(snapshot);
  auto it = FindReadingThreadLocked(thread);
  if (it != reading_threads_.end() && --it->second == 0) reading_threads_.erase(it);
  core_->cv_.NotifyAll();
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> WalStrategy::CleanPage(const wal::WalSnapshot& snapshot,
                                                                   PageNo page_no) {
  JKV_ASSIGN_OR_RETURN(wal::PageVersion version, wal_->Locate(snapshot, page_no));
  return CleanPageAt(snapshot, page_no, version);
}

absl::StatusOr<std::shared_ptr<const PageBuffer>> WalStrategy::CleanPageAt(
    const wal::WalSnapshot& snapshot, PageNo page_no, wal::PageVersion version) {
  if (version.cacheable) {
    if (std::shared_ptr<const PageBuffer> hit = core_->cache_.Lookup(page_no, version.key)) {
      core_->counters_.Add(base::Counter::kCacheHits);
      return hit;
    }
  }
  JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> loaded,
                       LoadPage(snapshot, page_no, &version));
  core_->counters_.Add(base::Counter::kCacheMisses);
  if (version.cacheable) core_->cache_.Insert(page_no, loaded, version.key);
  return loaded;
}

// ---------------------------------------------------------------------------------------------
// The writer role

absl::StatusOr<wal::WalSnapshot> WalStrategy::AcquireWriterLocked(absl::Time deadline) {
  JKV_RETURN_IF_ERROR(core_->sticky_);
  // A group flush running meanwhile waits for this writer to append and join it (W12).
  wal_->AddWaitingWriters(1);
  // The writer role changes hands once a commit is appended, and a waiter that blocks in the
  // kernel wakes tens of microseconds later, each time; a short yield loop first takes it
  // as it is released.
  for (int spin = 0; spin < 64 && core_->writer_active_; ++spin) {
    core_->mu_.Unlock();
    std::this_thread::yield();
    core_->mu_.Lock();
  }
  while (core_->writer_active_) {
    absl::Status s = core_->sticky_;
    if (s.ok() && core_->cv_.WaitUntil(&core_->mu_, deadline) == std::cv_status::timeout &&
        core_->writer_active_) {
      s = absl::UnavailableError("busy: another write transaction of this handle is open");
    }
    if (!s.ok()) {
      wal_->AddWaitingWriters(-1);
      return s;
    }
  }
  core_->writer_active_ = true;
  // The WRITE lock may take a while: readers of this handle go on meanwhile.
  core_->mu_.Unlock();
  absl::StatusOr<wal::WalSnapshot> snapshot = wal_->BeginWrite(deadline);
  wal_->AddWaitingWriters(-1);
  core_->mu_.Lock();
  if (!snapshot.ok()) {
    core_->writer_active_ = false;
    core_->cv_.NotifyAll();
  }
  return snapshot;
}

void WalStrategy::ReleaseWriter() {
  wal_->EndWrite();
  base::MutexLock lock(&core_->mu_);
  core_->writer_active_ = false;
  core_->cv_.NotifyAll();
}

absl::StatusOr<std::unique_ptr<WriteTxn>> WalStrategy::BeginWrite() {
  JKV_RETURN_IF_ERROR(TakeDeferredError());
  const absl::Time start = absl::Now();
  base::MutexLock lock(&core_->mu_);
  JKV_ASSIGN_OR_RETURN(wal::WalSnapshot snapshot, AcquireWriterLocked(start + core_->options_.busy_timeout));
  const absl::Time locked = absl::Now();
  absl::StatusOr<DbHeader> header = HeaderLocked(snapshot);
  if (!header.ok()) {
    core_->mu_.Unlock();
    ReleaseWriter();
    core_->mu_.Lock();
    return header.status();
  }
  return std::unique_ptr<WriteTxn>(
      new WalWriteTxn(this, core_, *header, snapshot, locked, locked - start));
}

// ---------------------------------------------------------------------------------------------
// A write transaction's spill and commit to the log

absl::StatusOr<std::shared_ptr<const PageBuffer>> WalWriteTxn::CleanPage(PageNo page_no) {
  if (auto it = log_frames_.find(page_no.value()); it != log_frames_.end()) {
    const uint64_t key = FrameKey(it->second);
    if (std::shared_ptr<const PageBuffer> hit = core_->cache_.Lookup(page_no, key)) {
      core_->counters_.Add(base::Counter::kCacheHits);
      return hit;
    }
    wal::PageVersion version{snapshot_.current, it->second, key, false};
    JKV_ASSIGN_OR_RETURN(std::shared_ptr<const PageBuffer> loaded,
                         strategy_->LoadPage(snapshot_, page_no, &version));
    core_->counters_.Add(base::Counter::kCacheMisses);
    core_->cache_.Insert(page_no, loaded, key);
    return loaded;
  }
  return strategy_->CleanPage(snapshot_, page_no);
}

absl::Status WalWriteTxn::UndoWrites(bool* clear_cache) {
  *clear_cache = false;  // only this transaction's own frames are cached past mx_frame: erased
  for (const auto& [page, frame] : log_frames_) core_->cache_.Erase(PageNo(page), FrameKey(frame));
  return strategy_->wal_->Rollback();  // unpublished frames only
}

absl::Status WalWriteTxn::SpillPages() {
  std::vector<uint32_t> order;
  const std::vector<wal::FramePage> pages = SealedFrames(dirty_, &order);
  // Frames past the published mx_frame: no other connection looks at them, and a rollback or
  // a crash leaves them to be overwritten (W2).
  JKV_ASSIGN_OR_RETURN(std::vector<uint32_t> frames, strategy_->wal_->Spill(pages));
  for (size_t i = 0; i < order.size(); ++i) {
    log_frames_[order[i]] = frames[i];
    // Kept as the frame's image (the rollback journal keeps its spilled pages cached too), so
    // that the transaction's next visit to the page costs no read of the log.
    core_->cache_.Insert(PageNo(order[i]), std::move(dirty_[order[i]].buffer), FrameKey(frames[i]));
  }
  dirty_.clear();
  return absl::OkStatus();
}

absl::Status WalWriteTxn::AppendCommit(wal::WalConnection::CommitTicket* ticket,
                                       DbHeader* header_out, uint32_t* commit_frames) {
  DbHeader new_header = header_;
  new_header.journal_family = FamilyOf(core_->options_.journal_mode);
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
  JKV_ASSIGN_OR_RETURN(*ticket, strategy_->wal_->Commit(pages, new_header.page_count));
  const shm::LogState& log = ticket->header.logs[ticket->header.current_log & 1];
  {
    CommitRecord& c = commit_record_;
    LogCommit& r = c.log.emplace();
    c.change_counter = new_header.change_counter;
    r.log = static_cast<int>(ticket->header.current_log & 1);
    r.generation = log.ckpt_seq;
    r.last_frame = log.mx_frame;
    r.first_frame = log.mx_frame;
    c.pages = static_cast<uint32_t>(order.size());
    for (uint32_t f : ticket->frames) r.first_frame = std::min(r.first_frame, f);
    for (const auto& [page, frame] : log_frames_) {
      r.first_frame = std::min(r.first_frame, frame);
      if (!dirty_.contains(page)) ++c.pages;  // spilled, not written again at commit
    }
    r.log_bytes = wal::LogEnd(log.mx_frame, new_header.page_size);
  }
  // The new pages, cached under their frames' versions: no snapshot reaches those frames
  // before a publish covers them, and from then on they are these images for good.
  for (size_t i = 0; i < order.size(); ++i) {
    core_->cache_.Insert(PageNo(order[i]), dirty_[order[i]].buffer,
                         wal::PageVersionKey(log.ckpt_seq, ticket->frames[i]));
  }
  *header_out = new_header;
  *commit_frames = static_cast<uint32_t>(order.size());
  return absl::OkStatus();
}

absl::Status WalStrategy::FinishCommit(const wal::WalConnection::CommitTicket& ticket,
                                       const DbHeader& new_header) {
  absl::StatusOr<wal::WalSnapshot> published = wal_->AwaitDurable(ticket);
  if (!published.ok()) {
    // I7, W13, N3: the commit failed; it may be present after a crash, and this handle trusts
    // nothing of the log any more. (Its pages stay cached under its frames' versions until the
    // next transaction of the handle begins, which finds the append epoch moved: G2.)
    base::MutexLock lock(&core_->mu_);
    core_->SetStickyError(published.status());
    return published.status();
  }
  // Test hook: the published snapshot is taken and not yet noted; meanwhile other threads'
  // reads may note a later generation (tests/hot_pages_test.cc).
  wal::CallWalHook("commit:published");
  const shm::LogState& log = ticket.header.logs[ticket.header.current_log & 1];
  base::MutexLock lock(&core_->mu_);
  NoteGenerationLocked(*published);
  if (published->change == ticket.header.change && published->cur().seq == log.ckpt_seq &&
      published->cur().mx == log.mx_frame) {
    // The published state is this commit's (no later commit came with its flush).
    core_->header_ = new_header;
    header_key_ = HeaderKey(*published);
  }
  core_->counters_.AddOwned(base::Counter::kCommits);
  return absl::OkStatus();
}

absl::Status WalWriteTxn::CommitPages() {
  wal::WalConnection::CommitTicket ticket;
  DbHeader new_header;
  uint32_t frames = 0;
  JKV_RETURN_IF_ERROR(AppendCommit(&ticket, &new_header, &frames));
  // WRITE and this handle's writer role go now: the next writer (a thread of this handle or
  // another connection) appends while this commit waits for its flush (W12).
  End(/*clear_cache=*/false);
  JKV_RETURN_IF_ERROR(strategy_->FinishCommit(ticket, new_header));
  strategy_->AfterCommit(frames);
  return absl::OkStatus();
}

absl::Status WalWriteTxn::CommitPagesAsync(std::function<void(const CommitRecord&)> on_durable,
                                           std::shared_ptr<CommitPromise>* promise) {
  if (core_->options_.sync != SyncLevel::kFull && core_->options_.sync != SyncLevel::kExtra) {
    // NORMAL and OFF: complete on return (a commit that finds FULL commits pending flushes
    // them here, W12 b, as Commit does).
    return WriteTxn::CommitPagesAsync(std::move(on_durable), promise);
  }
  wal::WalConnection::CommitTicket ticket;
  DbHeader new_header;
  uint32_t frames = 0;
  JKV_RETURN_IF_ERROR(AppendCommit(&ticket, &new_header, &frames));
  auto p = std::make_shared<CommitPromise>(commit_record_);
  // N1: queued while this writer still holds the writer role, so the queue's order is the
  // order of the appends of every thread of this handle.
  WalStrategy* strategy = strategy_;
  strategy_->pipeline_.Push(
      p, [strategy, ticket, new_header] { return strategy->FinishCommit(ticket, new_header); },
      std::move(on_durable));
  End(/*clear_cache=*/false);
  // The checkpoint policy runs on the writer's thread, as after Commit: a policy that blocks
  // commits blocks this writer, not the flusher (which would stall every commit queued).
  strategy_->AfterCommit(frames);
  *promise = std::move(p);
  return absl::OkStatus();
}

void WalWriteTxn::EndWrite(bool) {
  {
    base::MutexLock lock(&core_->mu_);
    base::Counters& c = core_->counters_;
    c.AddOwned(base::Counter::kWriteTxns);
    c.AddDurationOwned(base::Counter::kWriteLockWait, lock_wait_);
    c.AddDurationOwned(base::Counter::kWriteWork, absl::Now() - locked_at_);
  }
  strategy_->ReleaseWriter();
}

// ---------------------------------------------------------------------------------------------
// Stats and the close

void WalStrategy::AddStats(base::CounterArray& c, PagerStats& s) {
  using base::Counter;
  c += wal_->Stats();  // its tickers and the log's state, as rows of the table
  const checkpoint::BackgroundCheckpointer::Stats b = background_->GetStats();
  c.Set(Counter::kBackgroundCheckpoints, b.steps);
  c.Set(Counter::kBackgroundErrors, b.errors);
  c.SetDuration(Counter::kBackgroundTime, b.busy);
  if (mapped_ != nullptr) c.Set(Counter::kMapChecks, mapped_->checks());
  s.background_last_error = b.last_error;
  base::MutexLock lock(&core_->mu_);
  s.checkpoint_policy = policy_name_;
  s.policy_last_error = policy_last_error_;
}

void WalStrategy::Close() {
  // N4: every pipelined commit is flushed or failed (its promise settled, its hooks run) before
  // anything of the connection goes.
  pipeline_.Drain();
  // No checkpoint touches a closed database: a running background step stops at its next page.
  background_->Stop();
  base::MutexLock lock(&core_->mu_);
  // The last connection (the only one that can take EXCLUSIVE: every WAL connection holds
  // SHARED) copies the log into the database file and removes -wal and -shm. A failure
  // leaves them for the next opener, which recovers from them.
  if (core_->lock_.level() == LockLevel::kExclusive) {
    if (core_->sticky_.ok()) wal_->CloseLast().IgnoreError();  // exclusive locking: alone
  } else if (core_->sticky_.ok() && core_->options_.access != AccessMode::kReadOnly) {
    absl::StatusOr<bool> reserved = core_->lock_.TryReserved();
    if (reserved.ok() && *reserved) {
      absl::StatusOr<bool> exclusive = core_->lock_.TryExclusive();
      if (exclusive.ok() && *exclusive) wal_->CloseLast().IgnoreError();
    }
  } else if (core_->sticky_.ok()) {
    wal_->CloseReadOnly().IgnoreError();  // read-only: at most the -shm it created goes
  }
}

}  // namespace journalkv::pager
