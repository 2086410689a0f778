// wal::Writer (wal/writer.h): WRITE as the connection's one role (W9), the writer's state
// table, appending a transaction's frames (W2, W4, V6, W11), its commit (W12 a, b) and its
// rollback.
#include "wal/writer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/checkpoint_copy.h"
#include "wal/group_flush.h"
#include "wal/wal_connection.h"

namespace journalkv::wal {

void Writer::EnterState(State to) {
  const State from = state_.load(std::memory_order_relaxed);
  using S = State;
  // The edges of the table in wal/writer.h; nothing else.
  JKV_DCHECK((from == S::kIdle && to == S::kLocked) ||
             ((from == S::kLocked || from == S::kAppended) && to == S::kAppended) ||
             (from == S::kAppended && to == S::kCommitted) ||
             ((from == S::kLocked || from == S::kAppended) && to == S::kLocked) ||
             to == S::kIdle);
  state_.store(to, std::memory_order_release);
}

absl::StatusOr<bool> Writer::TryLock() {
  base::MutexLock role(&role_mu_);  // W9
  JKV_ASSIGN_OR_RETURN(bool locked,
                       index().TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive));
  if (locked) {
    thread_.store(std::this_thread::get_id(), std::memory_order_release);
    EnterState(State::kLocked);
  }
  return locked;
}

void Writer::Unlock() {
  JKV_DCHECK(write_locked());
  base::MutexLock role(&role_mu_);  // W9
  EnterState(State::kIdle);
  thread_.store(std::thread::id(), std::memory_order_release);
  index().Unlock(shm::ShmLock::kWrite).IgnoreError();  // closing the file drops it anyway
  index().Bump(shm::WalIndex::Wake::kWrite);  // a writer of another connection may sleep on it
}

void Writer::Begin(const shm::IndexHeader& h, uint32_t epoch) {
  JKV_DCHECK(state() == State::kLocked);
  header_ = h;
  cursor_ = WriterCursor::AtEndOf(h, env_.wal2);
  epoch_ = epoch;
  ForgetTransaction();
  CheckInvariants();
}

void Writer::MoveTo(const shm::IndexHeader& h) {
  JKV_DCHECK(state() == State::kLocked);
  header_ = h;
  cursor_ = WriterCursor::AtEndOf(header_, env_.wal2);
  CheckInvariants();
}

// W11's checks and the cursor's; W9's pairing. Reads the published header (a debug build's
// cost only).
void Writer::CheckInvariants() const {
  if (!JKV_DCHECK_IS_ON) return;
  const State s = state();
  // W9: a writer thread exactly while WRITE is this connection's (the writer thread reads its
  // own stores here).
  JKV_DCHECK((s == State::kIdle) == (thread_.load(std::memory_order_acquire) == std::thread::id()));
  if (s == State::kIdle) return;
  if (txn_first_frame_ == 0) {
    // No frame of a transaction: none remembered, and the cursor at the header's end.
    JKV_DCHECK(txn_frames_.empty() && rechain_from_ == 0);
    cursor_.CheckInvariants(header_, env_.wal2);
    return;
  }
  // W11: a transaction's frames exist only while it appends (kAppended), ...
  JKV_DCHECK(s == State::kAppended);
  // ... in the cursor's log past the writer's header, ...
  JKV_DCHECK(cursor_.log == CurrentLog(header_, env_.wal2));
  JKV_DCHECK(txn_first_frame_ == header_.logs[cursor_.log].mx_frame + 1);
  JKV_DCHECK(txn_first_frame_ < cursor_.next_frame);
  JKV_DCHECK(rechain_from_ == 0 ||
             (rechain_from_ >= txn_first_frame_ && rechain_from_ < cursor_.next_frame));
  for (const auto& [page, frame] : txn_frames_) {
    JKV_DCHECK(frame >= txn_first_frame_ && frame < cursor_.next_frame);
  }
  // ... and past the published header of the same generation (what readers, checkpoints and
  // recovery see): a rewrite never touches a frame anyone else looks at.
  shm::IndexHeader published;
  if (GroupFlush::ReadPublished(index(), &published) &&
      published.logs[cursor_.log].ckpt_seq == header_.logs[cursor_.log].ckpt_seq) {
    JKV_DCHECK(txn_first_frame_ > published.logs[cursor_.log].mx_frame);
  }
}

void Writer::LimitLogSize(int log) {
  const std::unique_ptr<WalLog>& file = (*env_.logs)[log];
  if (env_.options->size_limit == 0 || file == nullptr) return;
  absl::StatusOr<uint64_t> size = file->Size();
  if (!size.ok() || *size <= env_.options->size_limit) return;
  // Only once the new generation's header is written (and, at sync != OFF, durable: W4): cut
  // while the old header stood, the log would hold a prefix of the old generation that
  // recovery accepts, older than the database file. After it, every frame past the cut
  // carries the old salts, so a power loss that undoes the cut loses nothing; the cut itself
  // needs no sync, and a failed cut only leaves the file long.
  if (file->Truncate(env_.options->size_limit).ok()) {
    env_.counters->Add(base::Counter::kLogSizeCuts);
  }
}

// W11: a page this transaction already wrote to the log (a spill) goes over its frame, not
// after it, so a transaction's frames are at most its distinct pages plus the commit frame. The
// commit frame is always a new one (a commit frame ends the log), and before it is written the
// chain is recomputed from the first frame rewritten.
absl::Status Writer::WriteFrames(absl::Span<const FramePage> pages, uint32_t commit_db_size,
                                 std::vector<uint32_t>* frames) {
  JKV_DCHECK(write_locked());
  JKV_DCHECK(!pages.empty());
  if (txn_first_frame_ == 0) cursor_.CheckInvariants(header_, env_.wal2);  // none appended yet
  WalLog& log = *(*env_.logs)[cursor_.log];
  shm::WalIndex& index = this->index();
  const bool commit = commit_db_size != 0;
  frames->assign(pages.size(), 0);
  std::vector<FramePage> appends;
  std::vector<size_t> appended_at;                    // appends[k] is pages[appended_at[k]]
  std::vector<std::pair<uint32_t, size_t>> rewrites;  // (its frame, index in pages)
  for (size_t i = 0; i < pages.size(); ++i) {
    const bool commit_frame = commit && i + 1 == pages.size();
    auto it = txn_frames_.find(pages[i].page_no.value());
    if (it != txn_frames_.end() && !commit_frame) {
      rewrites.emplace_back(it->second, i);
      (*frames)[i] = it->second;
    } else {
      appends.push_back(pages[i]);
      appended_at.push_back(i);
    }
  }
  // A transaction the index cannot take (past the frame limit, or a -shm that cannot grow)
  // fails here, before the log holds any of it: its frames written first, the commit frame
  // among them, would be recovered after a crash although the commit was refused.
  const uint32_t limit = shm::MaxLogFrames();
  if (appends.size() > limit || cursor_.next_frame > limit - appends.size() + 1) {
    return absl::ResourceExhaustedError(absl::StrCat(
        log.path(), ": the log is full: ", appends.size(), " frames from frame ",
        cursor_.next_frame, " would pass the limit of ", limit,
        " frames a log generation holds; checkpoint it (the log restarts once no reader holds "
        "an older snapshot) or commit smaller transactions"));
  }
  if (!appends.empty()) {
    JKV_RETURN_IF_ERROR(index.Reserve(
        cursor_.log, cursor_.next_frame,
        cursor_.next_frame + static_cast<uint32_t>(appends.size()) - 1));
  }
  EnterState(State::kAppended);  // from here the log may hold unpublished frames
  const WalHeader log_header = LogHeaderFor(header_, cursor_.log);
  if (cursor_.next_frame == 1) {
    // The chain starts from the header written here. The index's last_checksum of a
    // generation with no frames is only a copy of this seed, and may differ (an index rebuilt
    // from a log whose header was lost has none; a damaged -shm, anything); Publish replaces it.
    JKV_ASSIGN_OR_RETURN(uint64_t seed, log.WriteHeader(log_header));
    cursor_.chain = seed;
    const vfs::SyncLevel level = env_.maintenance_sync();  // D1
    if (level != vfs::SyncLevel::kOff) {
      // W4: the new generation's header is durable before any of its frames is written (and,
      // in WAL2, before this log is taken for the newer one by recovery, V1). A failed sync
      // needs no record (W13): the header is written again before the next first frame.
      JKV_RETURN_IF_ERROR(vfs::SyncFile(log.file(), vfs::SyncKind::kData, "W4 log header"));
    }
    LimitLogSize(cursor_.log);
    const int other = 1 - cursor_.log;
    const shm::LogState& from = header_.logs[other];
    if (env_.wal2 && level != vfs::SyncLevel::kOff && from.mx_frame > 0 &&
        from.mx_frame > index.backfill(other)) {
      // V6: the log switched from is durable before the new one gets a frame: a power loss
      // that kept this log's frames but lost that log's tail would leave a state that was
      // never committed. Its frames may have been published unsynced, by a NORMAL commit, an
      // OFF flush or a recovery, whatever this writer's level (D2); only they are synced.
      JKV_RETURN_IF_ERROR(env_.make_log_durable(other, from, "V6 previous log",
                                                absl::Now() + env_.options->busy_timeout)
                              .status());
    }
  }
  if (txn_first_frame_ == 0) {
    txn_first_frame_ = cursor_.next_frame;
    txn_start_chain_ = cursor_.chain;
  }
  // Rewrites, one write per run of consecutive frames (a spill's pages keep their order).
  std::sort(rewrites.begin(), rewrites.end());
  for (size_t r = 0; r < rewrites.size();) {
    size_t end = r + 1;
    while (end < rewrites.size() && rewrites[end].first == rewrites[end - 1].first + 1) ++end;
    std::vector<FramePage> run;
    run.reserve(end - r);
    for (size_t k = r; k < end; ++k) run.push_back(pages[rewrites[k].second]);
    JKV_RETURN_IF_ERROR(log.RewriteFrames(log_header, rewrites[r].first, run));
    if (rechain_from_ == 0 || rewrites[r].first < rechain_from_) rechain_from_ = rewrites[r].first;
    r = end;
  }
  if (!rewrites.empty()) env_.counters->Add(base::Counter::kFramesRewritten, rewrites.size());
  if (commit && rechain_from_ != 0) {
    // W11: the commit frame vouches for every frame before it as it is now.
    uint64_t prev = txn_start_chain_;
    if (rechain_from_ > txn_first_frame_) {
      JKV_ASSIGN_OR_RETURN(FrameHeader before,
                           log.ReadFrameHeader(rechain_from_ - 1, env_.page_size));
      prev = before.checksum;  // never rewritten: the chain is right up to it
    }
    JKV_ASSIGN_OR_RETURN(cursor_.chain,
                         log.Rechain(log_header, rechain_from_, cursor_.next_frame - 1, prev));
    rechain_from_ = 0;
  }
  if (!appends.empty()) {
    JKV_ASSIGN_OR_RETURN(uint64_t chain, log.Append(log_header, cursor_.next_frame,
                                                    cursor_.chain, appends, commit_db_size));
    for (size_t k = 0; k < appends.size(); ++k) {
      const uint32_t page_no = appends[k].page_no.value();
      JKV_RETURN_IF_ERROR(index.Append(cursor_.log, cursor_.next_frame, page_no));  // W2
      (*frames)[appended_at[k]] = cursor_.next_frame;
      txn_frames_[page_no] = cursor_.next_frame++;
    }
    cursor_.chain = chain;
  }
  CheckInvariants();
  return absl::OkStatus();
}

void Writer::ForgetTransaction() {
  txn_frames_.clear();
  rechain_from_ = 0;
  txn_first_frame_ = 0;
}

absl::StatusOr<Writer::CommitTicket> Writer::Commit(absl::Span<const FramePage> pages,
                                                    uint32_t db_size) {
  JKV_DCHECK(!pages.empty() && db_size > 0);
  CommitTicket ticket;
  JKV_RETURN_IF_ERROR(WriteFrames(pages, db_size, &ticket.frames));
  CallWalHook("commit:appended");
  const shm::IndexHeader base = header_;
  shm::LogState& state = header_.logs[cursor_.log];
  state.mx_frame = cursor_.next_frame - 1;
  state.last_checksum = cursor_.chain;
  header_.page_count = db_size;  // as recovery would find it (HeaderFromScans)
  ++header_.change;
  checked_change_ = header_.change;  // its last frame is the one just written
  ticket.header = header_;
  ticket.epoch = epoch_;
  ForgetTransaction();
  shm::IndexHeader published;
  if (env_.options->sync < vfs::SyncLevel::kFull &&
      GroupFlush::ReadPublished(index(), &published) && published == base) {
    // W12 b: nothing pending, and NORMAL and OFF need no sync before the publish: published
    // under WRITE (W2: entries first, then the header).
    index().WriteHeader(header_);
    ticket.published = true;
    EnterState(State::kLocked);
  } else {
    // W12 a: the next writer's base; AwaitDurable publishes it once it is durable.
    index().WriteAppendedHeader(header_);
    EnterState(State::kCommitted);
  }
  CheckInvariants();
  return ticket;
}

absl::Status Writer::Rollback() {
  JKV_DCHECK(cursor_.log == CurrentLog(header_, env_.wal2));  // the log stays the same
  cursor_ = WriterCursor::AtEndOf(header_, env_.wal2);
  const uint32_t appended = cursor_.next_frame - 1;
  // Whether or not the entries go now, the next BeginWrite removes any left (W2), and no
  // reader looks past the published mx_frame.
  ForgetTransaction();
  EnterState(State::kLocked);
  CheckInvariants();
  return index().Truncate(cursor_.log, appended);  // W2
}

}  // namespace journalkv::wal
