// WalConnection's writer: the WRITE lock and a restart or switch when the log is copied (W7,
// W8, V3), appending frames (W2, W4, V6), the commit's sync (W1), its publish, a rollback of
// unpublished frames and the end of the write.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "wal/wal_connection.h"
#include "wal/wal_internal.h"

namespace journalkv::wal {

using internal::kMaxWait;
using internal::Sleep;

void WalConnection::EnterWriterState(WriterState to) {
  const WriterState from = writer_state_.load(std::memory_order_relaxed);
  using S = WriterState;
  // The edges of the table in wal_connection.h; nothing else.
  JKV_DCHECK((from == S::kIdle && to == S::kLocked) ||
             ((from == S::kLocked || from == S::kAppended) && to == S::kAppended) ||
             (from == S::kAppended && to == S::kCommitted) ||
             ((from == S::kLocked || from == S::kAppended) && to == S::kLocked) ||
             to == S::kIdle);
  writer_state_.store(to, std::memory_order_release);
}

absl::StatusOr<WalSnapshot> WalConnection::BeginWrite(absl::Time deadline) {
  JKV_DCHECK(!write_locked());
  if (private_) {
    return absl::ResourceExhaustedError(absl::StrCat(db_path_, ": ", private_reason_));
  }
  base::Backoff wait(deadline, kMaxWait);
  while (true) {
    const uint32_t seen = index_->wake_seq(shm::WalIndex::Wake::kWrite);
    absl::Status s;
    {
      base::MutexLock role(&write_role_mu_);  // W9
      absl::StatusOr<bool> locked =
          index_->TryLock(shm::ShmLock::kWrite, vfs::LockMode::kExclusive);
      s = locked.status();
      if (s.ok() && *locked) {
        writer_thread_.store(std::this_thread::get_id(), std::memory_order_release);
        EnterWriterState(WriterState::kLocked);
      }
    }
    if (s.ok() && write_locked()) break;  // WRITE held until EndWrite
    if (s.ok() && wait.Expired()) {
      s = absl::UnavailableError("busy: another connection is writing the database");
    }
    if (!s.ok()) return s;
    // Asleep until the holder releases WRITE (EndWrite bumps the word), or the back-off's step;
    // counted as the word's waiter, so that a group flush lets this writer join it (W12).
    index_->WaitWake(shm::WalIndex::Wake::kWrite, seen, wait.Step());
  }
  write_lock_.AssumeHeld();  // taken above (kLocked)
  // The published header (readers') and the appended one (this writer's base, W12).
  absl::StatusOr<shm::IndexHeader> published = ReadHeaderOrRecover(deadline, true);
  absl::Status s = published.status();
  // W13 c: commits a failed log sync left unpublished are dropped before anything builds on
  // them (one load when no sync failed).
  // The published header stays as it is: the appended one goes back to it.
  if (s.ok()) s = ResetAfterFailure(deadline);
  absl::StatusOr<shm::IndexHeader> h = published;  // the appended one, once read below
  if (s.ok()) {
    h = AppendedOrDamage(*published);
    absl::Status damage = h.status();
    if (!damage.ok() && !absl::IsDataLoss(damage)) {
      s = damage;  // an I/O error reading the log: not the index's fault
    } else if (!damage.ok()) {
      // W6: the index contradicts the log, the truth: rebuilt from it, as at a torn header,
      // under FLUSH too (W12 d).
      absl::StatusOr<bool> r = index_->TryLock(shm::ShmLock::kRecover, vfs::LockMode::kExclusive);
      s = !r.ok() ? r.status()
          : *r    ? LockFlush(deadline)
                  : absl::UnavailableError(absl::StrCat(
                        "busy: ", shm_path_, " is being recovered (", damage.message(), ")"));
      if (s.ok()) {
        flush_.AssertHeld();        // s is OK only after LockFlush returned OK,
        recover_lock_.AssumeHeld();  // which follows a taken RECOVER
        s = RecoverIndex();
        flush_.Unlock(*index_);
      }
      if (r.ok() && *r) index_->Unlock(shm::ShmLock::kRecover).IgnoreError();
      if (s.ok()) published = ReadHeaderOrRecover(deadline, true);
      if (s.ok()) s = published.status();
      if (s.ok()) h = AppendedOrDamage(*published);  // still damaged: the rebuild did not take
      if (s.ok()) s = h.status();
    }
  }
  if (s.ok() && !wal2_) {
    // W7. A generation with no frames restarts too, so that every generation the writer
    // writes has salts of its own (a rebuilt index may describe a log whose header was lost).
    const uint32_t backfill = index_->backfill(0);
    const uint32_t published_mx = published->logs[0].mx_frame;
    if (backfill == h->logs[0].mx_frame) {
      s = MaybeRestart(*h, 0, false);
    } else if (published->logs[0].ckpt_seq == h->logs[0].ckpt_seq && backfill <= published_mx &&
               published_mx - backfill <= internal::kRestartCopyFrames &&
               published_mx >= internal::RestartThroughPendingFrames()) {
      s = RestartThroughPending(*h);
    }
  } else if (s.ok()) {
    const int cur = CurrentLog(*h, wal2_);
    const int other = 1 - cur;
    const shm::LogState& c = h->logs[cur];
    if (c.mx_frame == 0) {
      // An empty current log restarts in place (salts of its own, as in WAL).
      s = MaybeRestart(*h, cur, true);
    } else if (index_->backfill(other) == h->logs[other].mx_frame &&
               (c.mx_frame >= std::min(options_.wal2_switch_pages, shm::MaxLogFrames() / 2) ||
                index_->backfill(cur) == c.mx_frame)) {
      // (At half the frame limit at the latest, so that a log near it is left while the
      // other one can take a whole transaction.)
      // V3: the switch. The other log is in the database file: it becomes the current one,
      // once what is pending in this one is durable and published (W12 c).
      const uint32_t before = h->current_log;
      writer_header_ = *h;
      if (*h != *published) s = FlushPendingAsWriter();
      if (s.ok()) s = MaybeRestart(*h, other, true);
      if (s.ok() && h->current_log != before) counters_.Add(base::Counter::kLogSwitches);
    }
  }
  if (s.ok()) {
    cursor_ = WriterCursor::AtEndOf(*h, wal2_);
    s = index_->Truncate(cursor_.log, cursor_.next_frame - 1);  // W2
  }
  if (!s.ok()) {
    EndWrite();
    return s;
  }
  writer_header_ = *h;
  cursor_.CheckInvariants(writer_header_, wal2_);
  epoch_ = index_->append_epoch();  // W13 d: fixed while this connection holds WRITE
  ForgetTransaction();
  CallWalHook("begin_write:locked");
  return SnapshotOf(*h);
}

// W12 g: a long log copied up to a few frames of its published end, which only those frames
// and the commits appended since (pending, their flush not yet run) keep from restarting. With
// writers in several processes some commit is nearly always pending when a writer begins (it
// appended during the last flush), so without this the log never restarted: it grew by every
// commit, and the policy's checkpoint, finding it over its threshold, ran after every commit
// (one checkpoint and one database sync per commit with 4 writer processes). Holding WRITE,
// nobody appends: the pending commits are made durable and published (the flush their writers
// wait for, W12 c), copied with the frames left (a passive checkpoint: readers that began
// before the publish hold it back, and then the log waits for a later writer), and the log
// restarts when that copy reached them.
absl::Status WalConnection::RestartThroughPending(shm::IndexHeader& header) {
  CallWalHook("begin_write:restart_through_pending");
  writer_header_ = header;
  JKV_RETURN_IF_ERROR(FlushPendingAsWriter());
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, RunCheckpoint(CheckpointMode::kPassive, nullptr, false));
  checkpoints_.Count(r);
  if (index_->backfill(0) != header.logs[0].mx_frame) return absl::OkStatus();
  return MaybeRestart(header, 0, false);
}

// W7, V3: the restart is the checkpoint role's (wal/checkpoints.h), under its mutex and CKPT.
absl::Status WalConnection::MaybeRestart(shm::IndexHeader& header, int log, bool make_current,
                                       absl::Time ckpt_deadline) {
  // This connection's own checkpoint (the background checkpointer's, say) is waited for: every
  // frame is copied and no commit can start meanwhile, so it has nothing left to copy and ends
  // at once. Skipping the restart instead would let a checkpointer that runs after every commit
  // keep the log from ever restarting. In WAL2 the writer waits for no checkpoint (V3): its own
  // may be copying the other log, so the restart is left to a later transaction, unless the
  // generation has no salts of its own (a rebuilt index whose log header was lost), or a
  // checkpoint's switch asks to wait (`ckpt_deadline`, V4: the other log is copied, so any
  // checkpoint holding CKPT has nothing to copy and ends at once).
  const bool may_skip = wal2_ && (header.logs[log].salt1 | header.logs[log].salt2) != 0;
  // A read-only private reader's frames must stay where they are (asked under CKPT).
  return checkpoints_.RestartIfCopied(*index_, header, log, make_current, may_skip,
                                      ckpt_deadline, [this] { return RestartAllowed(); });
}

// W11: a page this transaction already wrote to the log (a spill) goes over its frame, not
// after it, so a transaction's frames are at most its distinct pages plus the commit frame. The
// commit frame is always a new one (a commit frame ends the log), and before it is written the
// chain is recomputed from the first frame rewritten.
void WalConnection::LimitLogSize(int log) {
  if (options_.size_limit == 0 || logs_[log] == nullptr) return;
  absl::StatusOr<uint64_t> size = logs_[log]->Size();
  if (!size.ok() || *size <= options_.size_limit) return;
  // Only once the new generation's header is written (and, at sync != OFF, durable: W4): cut
  // while the old header stood, the log would hold a prefix of the old generation that
  // recovery accepts, older than the database file. After it, every frame past the cut
  // carries the old salts, so a power loss that undoes the cut loses nothing; the cut itself
  // needs no sync, and a failed cut only leaves the file long.
  if (logs_[log]->Truncate(options_.size_limit).ok()) counters_.Add(base::Counter::kLogSizeCuts);
}

absl::Status WalConnection::WriteFrames(absl::Span<const wal::FramePage> pages,
                                        uint32_t commit_db_size, std::vector<uint32_t>* frames) {
  JKV_DCHECK(write_locked());
  JKV_DCHECK(!pages.empty());
  if (txn_first_frame_ == 0) cursor_.CheckInvariants(writer_header_, wal2_);  // none appended yet
  wal::WalLog& log = *logs_[cursor_.log];
  const bool commit = commit_db_size != 0;
  frames->assign(pages.size(), 0);
  std::vector<wal::FramePage> appends;
  std::vector<size_t> appended_at;                  // appends[k] is pages[appended_at[k]]
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
        cursor_.next_frame,
        " would pass the limit of ", limit,
        " frames a log generation holds; checkpoint it (the log restarts once no reader holds "
        "an older snapshot) or commit smaller transactions"));
  }
  if (!appends.empty()) {
    JKV_RETURN_IF_ERROR(index_->Reserve(
        cursor_.log, cursor_.next_frame,
        cursor_.next_frame + static_cast<uint32_t>(appends.size()) - 1));
  }
  EnterWriterState(WriterState::kAppended);  // from here the log may hold unpublished frames
  const wal::WalHeader log_header = LogHeaderFor(writer_header_, cursor_.log);
  if (cursor_.next_frame == 1) {
    // The chain starts from the header written here. The index's last_checksum of a
    // generation with no frames is only a copy of this seed, and may differ (an index rebuilt
    // from a log whose header was lost has none; a damaged -shm, anything); Publish replaces it.
    JKV_ASSIGN_OR_RETURN(uint64_t seed, log.WriteHeader(log_header));
    cursor_.chain = seed;
    const SyncLevel level = MaintenanceSync();  // D1
    if (level != SyncLevel::kOff) {
      // W4: the new generation's header is durable before any of its frames is written (and,
      // in WAL2, before this log is taken for the newer one by recovery, V1). A failed sync
      // needs no record (W13): the header is written again before the next first frame.
      JKV_RETURN_IF_ERROR(vfs::SyncFile(log.file(), vfs::SyncKind::kData, "W4 log header"));
    }
    LimitLogSize(cursor_.log);
    const int other = 1 - cursor_.log;
    const shm::LogState& from = writer_header_.logs[other];
    if (wal2_ && level != SyncLevel::kOff && from.mx_frame > 0 &&
        from.mx_frame > index_->backfill(other)) {
      // V6: the log switched from is durable before the new one gets a frame: a power loss
      // that kept this log's frames but lost that log's tail would leave a state that was
      // never committed. Its frames may have been published unsynced, by a NORMAL commit, an
      // OFF flush or a recovery, whatever this writer's level (D2); only they are synced.
      JKV_RETURN_IF_ERROR(
          MakeLogDurableLocking(other, from, "V6 previous log", absl::Now() + options_.busy_timeout)
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
    std::vector<wal::FramePage> run;
    run.reserve(end - r);
    for (size_t k = r; k < end; ++k) run.push_back(pages[rewrites[k].second]);
    JKV_RETURN_IF_ERROR(log.RewriteFrames(log_header, rewrites[r].first, run));
    if (rechain_from_ == 0 || rewrites[r].first < rechain_from_) rechain_from_ = rewrites[r].first;
    r = end;
  }
  if (!rewrites.empty()) counters_.Add(base::Counter::kFramesRewritten, rewrites.size());
  if (commit && rechain_from_ != 0) {
    // W11: the commit frame vouches for every frame before it as it is now.
    uint64_t prev = txn_start_chain_;
    if (rechain_from_ > txn_first_frame_) {
      JKV_ASSIGN_OR_RETURN(wal::FrameHeader before,
                           log.ReadFrameHeader(rechain_from_ - 1, page_size_));
      prev = before.checksum;  // never rewritten: the chain is right up to it
    }
    JKV_ASSIGN_OR_RETURN(cursor_.chain,
                         log.Rechain(log_header, rechain_from_, cursor_.next_frame - 1, prev));
    rechain_from_ = 0;
  }
  if (appends.empty()) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(uint64_t chain,
                       log.Append(log_header, cursor_.next_frame, cursor_.chain, appends,
                                  commit_db_size));
  for (size_t k = 0; k < appends.size(); ++k) {
    const uint32_t page_no = appends[k].page_no.value();
    JKV_RETURN_IF_ERROR(index_->Append(cursor_.log, cursor_.next_frame, page_no));  // W2
    (*frames)[appended_at[k]] = cursor_.next_frame;
    txn_frames_[page_no] = cursor_.next_frame++;
  }
  cursor_.chain = chain;
  return absl::OkStatus();
}

// The transaction's frames are published or dropped: its pages' frames are no longer its own.
void WalConnection::ForgetTransaction() {
  txn_frames_.clear();
  rechain_from_ = 0;
  txn_first_frame_ = 0;
}

absl::StatusOr<std::vector<uint32_t>> WalConnection::Spill(absl::Span<const wal::FramePage> pages) {
  std::vector<uint32_t> frames;
  JKV_RETURN_IF_ERROR(WriteFrames(pages, 0, &frames));
  return frames;
}

absl::StatusOr<WalConnection::CommitTicket> WalConnection::Commit(
    absl::Span<const wal::FramePage> pages, uint32_t db_size) {
  JKV_DCHECK(!pages.empty() && db_size > 0);
  CommitTicket ticket;
  JKV_RETURN_IF_ERROR(WriteFrames(pages, db_size, &ticket.frames));
  CallWalHook("commit:appended");
  const shm::IndexHeader base = writer_header_;
  shm::LogState& state = writer_header_.logs[cursor_.log];
  state.mx_frame = cursor_.next_frame - 1;
  state.last_checksum = cursor_.chain;
  writer_header_.page_count = db_size;  // as recovery would find it (HeaderFromScans)
  ++writer_header_.change;
  checked_change_ = writer_header_.change;  // its last frame is the one just written
  ticket.header = writer_header_;
  ticket.epoch = epoch_;
  ForgetTransaction();
  shm::IndexHeader published;
  if (options_.sync < SyncLevel::kFull && GroupFlush::ReadPublished(*index_, &published) &&
      published == base) {
    // W12 b: nothing pending, and NORMAL and OFF need no sync before the publish: published
    // under WRITE (W2: entries first, then the header).
    index_->WriteHeader(writer_header_);
    ticket.published = true;
    EnterWriterState(WriterState::kLocked);
  } else {
    // W12 a: the next writer's base; AwaitDurable publishes it once it is durable.
    index_->WriteAppendedHeader(writer_header_);
    EnterWriterState(WriterState::kCommitted);
  }
  cursor_.CheckInvariants(writer_header_, wal2_);
  return ticket;
}

absl::Status WalConnection::Rollback() {
  JKV_DCHECK(cursor_.log == CurrentLog(writer_header_, wal2_));  // the log stays the same
  cursor_ = WriterCursor::AtEndOf(writer_header_, wal2_);
  const uint32_t appended = cursor_.next_frame - 1;
  // Whether or not the entries go now, the next BeginWrite removes any left (W2), and no
  // reader looks past the published mx_frame.
  ForgetTransaction();
  EnterWriterState(WriterState::kLocked);
  return index_->Truncate(cursor_.log, appended);  // W2
}

void WalConnection::EndWrite() {
  if (!write_locked()) return;
  base::MutexLock role(&write_role_mu_);  // W9
  EnterWriterState(WriterState::kIdle);
  writer_thread_.store(std::thread::id(), std::memory_order_release);
  index_->Unlock(shm::ShmLock::kWrite).IgnoreError();  // closing the file drops it anyway
  index_->Bump(shm::WalIndex::Wake::kWrite);  // a writer of another connection may sleep on it
}

}  // namespace journalkv::wal
