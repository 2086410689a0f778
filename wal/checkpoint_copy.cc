#include "wal/checkpoint_copy.h"

#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/backoff.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "log/wal_format.h"
#include "shm/pin_scan.h"

namespace journalkv::wal {

using shm::EncodeTarget;
using shm::SeqAfter;

namespace {

// A checkpoint waiting for the CKPT lock or for readers polls at this fixed step (its waits are
// for another checkpoint's copy or a reader's transaction: milliseconds, not microseconds).
constexpr absl::Duration kWaitStep = absl::Microseconds(200);

std::atomic<CheckpointHook> hook{nullptr};

void Hook(const char* point) {
  if (CheckpointHook h = hook.load(std::memory_order_relaxed)) h(point);
}

// Releases the CKPT lock when the checkpoint ends, however it ends; byte() is CKPT to the
// thread-safety analysis (wal/lock_byte.h), asserted held once Take returned true.
class CkptLock {
 public:
  const LockByte& byte() const { return byte_; }
  explicit CkptLock(shm::WalIndex* index) : index_(index) {}
  ~CkptLock() {
    if (held_) index_->Unlock(shm::ShmLock::kCkpt).IgnoreError();  // closing drops it anyway
  }
  absl::StatusOr<bool> Take(absl::Time deadline, bool wait) {
    base::Backoff backoff(deadline, kWaitStep, kWaitStep);
    while (true) {
      JKV_ASSIGN_OR_RETURN(held_, index_->TryLock(shm::ShmLock::kCkpt, vfs::LockMode::kExclusive));
      if (held_ || !wait || backoff.Expired()) return held_;
      Hook("wait");
      backoff.Sleep();
    }
  }

 private:
  shm::WalIndex* const index_;
  bool held_ = false;
  LockByte byte_;
};

// The frame of a checkpoint-info word (EncodeTarget) when it names generation `seq` and a frame
// no later than `mx`, else 0.
uint32_t FrameOfGeneration(uint64_t word, uint32_t seq, uint32_t mx) {
  const uint32_t frame = static_cast<uint32_t>(word);
  return (word >> 32) == seq && frame <= mx ? frame : 0;
}

// Copies the newest version <= safe of every page written in frames (backfill, safe] of the
// generation `state` describes. Returns false when files.stop ended it early.
// The wal-index is shared memory that a buggy process can overwrite, and a damaged entry must
// not send a page to the wrong place: each frame's own header (checksummed when it was
// indexed) must name the generation's salts and the page the index says, else DataLoss.
// (A page past its commit's db_size is copied all the same: a transaction that spilled it and
// then released the free tail it was in, PagerOptions::auto_vacuum, leaves it in the log; no
// snapshot reads it, and C7 cuts it off again once the whole log is copied.)
absl::StatusOr<bool> CopyFrames(const CheckpointFiles& files, int log_no,
                                const shm::LogState& state, uint32_t backfill, uint32_t safe) {
  wal::WalLog* log = files.logs[log_no];
  if (log == nullptr) return absl::InternalError("checkpoint of a log that is not open");
  const auto damaged = [&](uint32_t frame, absl::string_view what) {
    return absl::DataLossError(absl::StrCat(
        log->path(), ": frame ", frame, " ", what, ": the wal-index (-shm) is damaged; "
        "closing every connection to the database rebuilds it from the log"));
  };
  const auto ours = [&](const wal::FrameHeader& h) {
    return h.salt1 == state.salt1 && h.salt2 == state.salt2;
  };
  absl::flat_hash_map<uint32_t, uint32_t> newest;  // page -> frame
  for (uint32_t f = backfill + 1; f <= safe; ++f) {
    JKV_ASSIGN_OR_RETURN(uint32_t page, files.index->PageOfFrame(log_no, f));
    if (page == 0) return damaged(f, "is missing from the wal-index");
    newest[page] = f;
  }
  std::vector<std::pair<uint32_t, uint32_t>> order(newest.begin(), newest.end());
  std::sort(order.begin(), order.end());
  std::vector<uint8_t> image(files.page_size);
  for (const auto& [page, frame] : order) {
    if (files.stop != nullptr && files.stop->load(std::memory_order_acquire)) return false;
    JKV_ASSIGN_OR_RETURN(const wal::FrameHeader h,
                         log->ReadFrame(frame, files.page_size, absl::MakeSpan(image)));
    if (!ours(h) || h.page_no != page) {
      return damaged(frame, absl::StrCat("holds page ", h.page_no,
                                         ours(h) ? "" : " of another generation",
                                         " where the wal-index says page ", page));
    }
    if (!wal::FrameImageValid(h, image)) {
      // C6: the header's image_sum vouches for the image the writer wrote; another one here
      // is an older image read back from the disk (a failed sync dropped the frame) or a torn
      // one. Copied, it would put an older version of the page into the database file.
      return absl::DataLossError(absl::StrCat(
          log->path(), ": frame ", frame, " (page ", page, ") holds an image other than the one "
          "its header vouches for: the log lost it (a failed sync?); closing every connection "
          "to the database recovers the log's durable prefix"));
    }
    Hook("copy:page");
    JKV_RETURN_IF_ERROR(
        files.db->Write(uint64_t{page - 1} * files.page_size, absl::MakeConstSpan(image)));
  }
  return true;
}

// O4 (shm/wal_index.h): the database file is written and cut only while this lives, between
// the epoch's odd store and its even one. REQUIRES: CKPT held.
class DbWriteEpoch {
 public:
  explicit DbWriteEpoch(shm::WalIndex* index) : index_(index), odd_(index->BeginDbWrite()) {}
  ~DbWriteEpoch() { index_->EndDbWrite(odd_); }
  DbWriteEpoch(const DbWriteEpoch&) = delete;
  DbWriteEpoch& operator=(const DbWriteEpoch&) = delete;

 private:
  shm::WalIndex* const index_;
  const uint32_t odd_;
};

// C7: once the database file holds every commit `header` names (each log's backfill at its
// mx_frame), the file past the newest commit's size belongs to no snapshot a reader can take,
// and is cut. The size is the index's, checked against the newest commit frame's own (the
// index is shared memory a buggy process can overwrite: when they differ nothing is cut).
absl::Status CutPastNewestCommit(const CheckpointFiles& files, const shm::IndexHeader& header) {
  const int cur = files.two_logs ? static_cast<int>(header.current_log & 1) : 0;
  for (int l = 0; l < (files.two_logs ? 2 : 1); ++l) {
    if (files.index->backfill(l) != header.logs[l].mx_frame) return absl::OkStatus();
  }
  const int newest = header.logs[cur].mx_frame > 0 || !files.two_logs ? cur : 1 - cur;
  const shm::LogState& state = header.logs[newest];
  wal::WalLog* log = files.logs[newest];
  if (state.mx_frame == 0 || header.page_count == 0 || log == nullptr) return absl::OkStatus();
  JKV_ASSIGN_OR_RETURN(const wal::FrameHeader commit,
                       log->ReadFrameHeader(state.mx_frame, files.page_size));
  if (commit.salt1 != state.salt1 || commit.salt2 != state.salt2 ||
      commit.db_size != header.page_count) {
    return absl::OkStatus();
  }
  JKV_ASSIGN_OR_RETURN(const uint64_t size, files.db->Size());
  const uint64_t end = uint64_t{header.page_count} * files.page_size;
  if (size <= end) return absl::OkStatus();
  Hook("cut");
  const DbWriteEpoch epoch(files.index);  // O4: a cut moves the epoch as a write does
  // Unsynced: a power loss that undoes the cut leaves a tail nothing reads.
  return files.db->Truncate(end);
}

// Whether no read-only connection with a private index is open (CheckpointFiles::
// private_reader_lock), waiting for them up to `deadline` when `wait`.
absl::StatusOr<bool> NoPrivateReaders(const CheckpointFiles& files, absl::Time deadline,
                                      bool wait) {
  if (files.private_reader_lock == 0) return true;
  base::Backoff backoff(deadline, kWaitStep, kWaitStep);
  while (true) {
    JKV_ASSIGN_OR_RETURN(bool free, files.db->CanLock(files.private_reader_lock, 1,
                                                      vfs::LockMode::kExclusive));
    if (free || !wait || backoff.Expired()) return free;
    Hook("wait");
    backoff.Sleep();
  }
}

}  // namespace

absl::string_view CheckpointModeName(CheckpointMode mode) {
  switch (mode) {
    case CheckpointMode::kPassive: return "passive";
    case CheckpointMode::kFull: return "full";
    case CheckpointMode::kRestart: return "restart";
    case CheckpointMode::kTruncate: return "truncate";
  }
  return "?";
}

absl::StatusOr<CheckpointMode> ParseCheckpointMode(absl::string_view text) {
  for (CheckpointMode m : {CheckpointMode::kPassive, CheckpointMode::kFull,
                           CheckpointMode::kRestart, CheckpointMode::kTruncate}) {
    if (text == CheckpointModeName(m)) return m;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown checkpoint mode '", text, "' (expected passive, full, restart or truncate)"));
}

void ForgetCopies(shm::WalIndex& index, int log, uint32_t ckpt_seq, uint32_t mx_frame) {
  index.set_ckpt_target(log, EncodeTarget(ckpt_seq, mx_frame));
  index.set_written_through(log, EncodeTarget(ckpt_seq, mx_frame));
  index.set_copied_through(log, EncodeTarget(ckpt_seq, 0));
  index.set_backfill(log, 0);
}

wal::WalHeader LogHeaderFor(const shm::IndexHeader& header, int log) {
  wal::WalHeader h;
  h.page_size = header.page_size;
  h.ckpt_seq = header.logs[log].ckpt_seq;
  h.salt1 = header.logs[log].salt1;
  h.salt2 = header.logs[log].salt2;
  return h;
}

namespace {

// Restarts logs[0..n) of `logs` in the index, in one publish: each gets the next generation
// after the newest of both (so the last one listed is the newest, V1), new salts and no
// frames; `current` becomes the current log. REQUIRES: every frame of each copied (C2).
absl::Status RestartLogs([[maybe_unused]] const LockByte& write,
                         [[maybe_unused]] const LockByte& ckpt, shm::WalIndex& index,
                         shm::IndexHeader& header, std::initializer_list<int> logs, int current,
                         bool two_logs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, ckpt) {
  // Salts must differ between generations and between processes: one generator per thread,
  // seeded from the system's entropy once per process (a std::random_device per restart cost
  // an open and a read of /dev/urandom each time). A forked child, which inherits the parent's
  // generator, seeds its own at its first restart.
  static std::atomic<uint64_t> counter{0};
  thread_local pid_t seeded_by = 0;
  thread_local std::mt19937 rng;
  if (seeded_by != getpid()) {
    seeded_by = getpid();
    std::seed_seq seed{static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())),
                       counter.fetch_add(1), static_cast<uint64_t>(seeded_by),
                       uint64_t{std::random_device()()}};
    rng.seed(seed);
  }
  const shm::IndexHeader before = header;
  // The newest generation of the logs in use. In WAL mode log 1's words stay 0, and 0 is the
  // later generation whenever log 0's is past 2^30: counted, it sent the generation back to 1.
  uint32_t seq = two_logs && SeqAfter(header.logs[1].ckpt_seq, header.logs[0].ckpt_seq)
                     ? header.logs[1].ckpt_seq
                     : header.logs[0].ckpt_seq;
  for (int log : logs) {
    // Every frame copied (C2). Callers check it; a damaged index must not lose frames here.
    if (index.backfill(log) != header.logs[log].mx_frame) {
      return absl::DataLossError(absl::StrCat(
          "wal-index: log ", log, " cannot restart: its backfill ", index.backfill(log),
          " is not its last frame ", header.logs[log].mx_frame, " (a damaged -shm)"));
    }
  }
  for (int log : logs) {
    seq = (seq + 1) & 0x7fffffffu;
    shm::LogState& state = header.logs[log];
    state.ckpt_seq = seq;
    state.salt1 = static_cast<uint32_t>(rng());
    state.salt2 = static_cast<uint32_t>(rng());
    state.mx_frame = 0;
    uint8_t bytes[wal::kWalHeaderSize];
    state.last_checksum = wal::EncodeWalHeader(LogHeaderFor(header, log), absl::MakeSpan(bytes));
  }
  header.current_log = static_cast<uint32_t>(current);
  ++header.change;
  // W8: every step leaves a state that is whole, so a process killed at any of them leaves
  // none that a reader or the next writer misreads:
  //   1. the target names the old generation's last frame: a reader that read the old header
  //      (G, m < mx) and pins from now on finds the target past its snapshot and takes a newer
  //      one (the database file already holds every frame of G);
  //   2. the backfill is cleared: a reader of (G, mx) still settles (every page it does not
  //      find in the log is in the file as of mx), and a checkpoint would merely copy again;
  //   3. the new generation is published;
  //   4. its target and what the file holds of it (C3) start empty. The words of step 1 and of
  //      C3 name generation G, so for G+1 they read as nothing until then.
  // (Cleared first with the target of G+1, as before, a reader of (G, m) pinning between the
  // clear and the publish settled on m, read some pages from the log and, after the publish,
  // the rest from a file that holds a later state. Published first, a writer killed before
  // the clear left the new generation with the old backfill, whose frames were then never
  // copied.) Readers must also see the new generation before any hash entry or frame of the
  // old one goes: they check the generation after every lookup and frame read (W7).
  for (int log : logs) {
    index.set_ckpt_target(log, EncodeTarget(before.logs[log].ckpt_seq, before.logs[log].mx_frame));
  }
  for (int log : logs) index.set_backfill(log, 0);
  Hook("restart:midway");
  index.WriteHeader(header);
  for (int log : logs) {
    const uint64_t none = EncodeTarget(header.logs[log].ckpt_seq, 0);
    index.set_ckpt_target(log, none);
    index.set_copied_through(log, none);
    index.set_written_through(log, none);
  }
  for (int log : logs) JKV_RETURN_IF_ERROR(index.Truncate(log, 0));
  return absl::OkStatus();
}

}  // namespace

absl::Status RestartLog(const LockByte& write, const LockByte& ckpt, shm::WalIndex& index,
                        shm::IndexHeader& header, int log, bool make_current, bool two_logs) {
  return RestartLogs(write, ckpt, index, header, {log},
                     make_current ? log : static_cast<int>(header.current_log), two_logs);
}

absl::Status RestartBothLogs(const LockByte& write, const LockByte& ckpt, shm::WalIndex& index,
                             shm::IndexHeader& header, int log) {
  // `log` gets the earlier new generation, the other one the later and becomes current (V1).
  return RestartLogs(write, ckpt, index, header, {log, 1 - log}, 1 - log, /*two_logs=*/true);
}

absl::StatusOr<CheckpointResult> CheckpointLog(const CheckpointFiles& files, CheckpointMode mode) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + files.busy_timeout;
  const bool wait = mode != CheckpointMode::kPassive;
  CheckpointResult result;
  CkptLock lock(files.index);
  shm::IndexHeader header;
  JKV_ASSIGN_OR_RETURN(bool locked, lock.Take(deadline, wait));
  // The two header copies disagree only while a writer is publishing (microseconds), or when
  // a process died publishing (the next writer repairs it): retry until the busy timeout.
  while (!files.index->ReadHeader(&header)) {
    if (absl::Now() >= deadline) {
      return absl::AbortedError(
          "the wal-index header stays torn (a process died publishing?); retry");
    }
    Hook("wait");
    std::this_thread::yield();
  }
  // Under CKPT no switch happens (it needs CKPT), so the non-current log stays so.
  const int L = files.log_no == kNonCurrentLog ? 1 - static_cast<int>(header.current_log & 1)
                                               : files.log_no;
  result.log_frames = header.logs[L].mx_frame;
  if (!locked) {
    result.blocked = true;
    result.backfilled = files.index->backfill(L);
    result.lock_wait = absl::Now() - start;
    return result;
  }
  const LockByte& ckpt = lock.byte();
  ckpt.AssumeHeld();  // Take returned true
  const uint32_t mx = header.logs[L].mx_frame;
  const uint32_t seq = header.logs[L].ckpt_seq;
  // The backfill moves only under CKPT, and mx only grows within a generation, so a backfill
  // past mx is a damaged -shm: what was copied is unknown, and it is all copied again (taken
  // as complete, a restart would lose the frames not copied).
  if (files.index->backfill(L) > mx) ForgetCopies(*files.index, L, seq, mx);
  const uint32_t backfill = files.index->backfill(L);
  JKV_ASSIGN_OR_RETURN(bool no_private_readers, NoPrivateReaders(files, deadline, wait));
  if (!no_private_readers) {
    result.blocked = backfill < mx || mode == CheckpointMode::kRestart ||
                     mode == CheckpointMode::kTruncate;
    result.backfilled = backfill;
    result.lock_wait = absl::Now() - start;
    return result;
  }
  // What the database file holds past the published backfill, from any connection's earlier
  // checkpoint of this generation: every page complete up to `copied`, none later than
  // `written` (C3). A deferred copy (CheckpointFiles::publish false) leaves them past the
  // backfill; a copy stopped part way leaves `written` past `copied`.
  const uint32_t copied = std::max(backfill, FrameOfGeneration(files.index->copied_through(L),
                                                               seq, mx));
  const uint32_t written = std::max(copied, FrameOfGeneration(files.index->written_through(L),
                                                              seq, mx));
  uint32_t safe = backfill;
  base::Backoff backoff(deadline, kWaitStep, kWaitStep);
  while (true) {
    files.index->set_ckpt_target(L, EncodeTarget(seq, mx));  // announce, then scan the pins
    // Step 2: the oldest pin of generation `seq` (an older generation's reader reads the
    // database file and allows nothing past `backfill`). A reader that pins after this scan
    // checks the announced target itself.
    JKV_ASSIGN_OR_RETURN(const shm::PinScanResult pins,
                         shm::OldestLivePin(*files.index, L, seq, backfill, mx, files.own,
                                            shm::PinScanUse::kCheckpoint));
    safe = pins.limit;
    const bool own_limits = pins.own_limits;
    // C4: never below what the file may hold. A reader that pinned a snapshot older than
    // `written` after an earlier checkpoint's scan sees this target and takes a newer one; a
    // target lowered to its pin would let it settle on a snapshot whose pages the file already
    // holds in later versions.
    files.index->set_ckpt_target(L, EncodeTarget(seq, std::max(safe, written)));
    if (safe == mx || !wait || own_limits || backoff.Expired()) break;
    Hook("wait");
    backoff.Sleep();
  }
  const absl::Time work_start = absl::Now();
  result.lock_wait = work_start - start;
  // C3: copy only when the readers allow every frame the file may already hold: copying the
  // versions <= safe of pages over later versions another checkpoint wrote would take those
  // back (and once backfill passed them, the log restart would lose them). Otherwise this
  // checkpoint copies nothing and may only publish what is complete.
  const uint32_t from = copied;
  // The window of race 2 (WAL-races issue): a reader pinned below what another connection's
  // copy may have written. The schedule explorer counts the schedules that reach it.
  if (safe < written) Hook("held_back");
  const uint32_t to = safe >= written ? std::max(safe, from) : from;
  const bool defer = !files.publish && to > from;
  if (to > from && files.logs[L] == nullptr) {
    return absl::InternalError(absl::StrCat("checkpoint of log ", L, ", which is not open"));
  }
  if (to > from) {
    if (files.make_log_durable) {
      // C1: the frames about to be copied survive a power loss before the database changes.
      JKV_ASSIGN_OR_RETURN(const bool synced, files.make_log_durable(L, header.logs[L]));
      if (synced) ++result.syncs;
    }
    Hook("copy");
    // O4: odd from before the first page write (and C5's cut) until this block is left.
    const DbWriteEpoch epoch(files.index);
    files.index->set_written_through(L, EncodeTarget(seq, to));  // C3: before the first write
    JKV_ASSIGN_OR_RETURN(const uint64_t db_size, files.db->Size());
    absl::StatusOr<bool> copy = CopyFrames(files, L, header.logs[L], from, to);
    if (absl::IsResourceExhausted(copy.status())) {
      // C5: a copy the disk cannot take gives back the pages it appended to the database
      // file, so that the space goes to commits (the log has room for them; a log that must
      // grow would otherwise find the disk taken by a copy that cannot finish). Every page
      // past the old end is a page some commit appended, so every snapshot that has it finds
      // it in the log; the backfill has not moved, and written_through keeps saying the file
      // may hold versions up to `to` (C3), which holding fewer pages keeps true.
      files.db->Truncate(db_size).IgnoreError();  // the copy's own error is the one to report
      return copy.status();
    }
    JKV_ASSIGN_OR_RETURN(bool copied_all, std::move(copy));
    if (!copied_all) {
      result.stopped = true;
      result.blocked = true;
      result.backfilled = backfill;
      result.work = absl::Now() - work_start;
      return result;
    }
    files.index->set_copied_through(L, EncodeTarget(seq, to));
    Hook("copied");
  }
  if (!defer && to > backfill) {
    if (files.sync_db) {
      // C2: the copied pages are durable before backfill says so; the log may restart (and
      // overwrite those frames) as soon as it does.
      const absl::Status synced = vfs::SyncFile(*files.db, vfs::SyncKind::kData, "C2 database");
      if (!synced.ok()) {
        // C8: the failed sync may have lost every page written since the last one that
        // succeeded (this copy's, and deferred copies of any connection), and a later sync
        // would succeed without them: none of it is taken as copied any more, so the next
        // checkpoint writes them again before its own C2 (before, it only synced, published
        // the backfill, and the restart that followed lost those commits:
        // wal_group_fault_test's failing syncs at C2).
        files.index->set_copied_through(L, EncodeTarget(seq, backfill));
        return synced;
      }
      ++result.syncs;
    }
    Hook("synced");
    files.index->set_backfill(L, to);
  }
  safe = to;
  const uint32_t published = defer ? backfill : safe;
  result.copied = safe - from;
  result.backfilled = published;
  result.blocked = published < mx;
  const int other = 1 - L;
  if ((mode == CheckpointMode::kRestart || mode == CheckpointMode::kTruncate) &&
      !result.blocked && files.two_logs &&
      files.index->backfill(other) != header.logs[other].mx_frame) {
    result.blocked = true;  // WAL2: the other log must be copied first (it is older)
  }
  if (!defer && published == mx) JKV_RETURN_IF_ERROR(CutPastNewestCommit(files, header));
  if ((mode == CheckpointMode::kRestart || mode == CheckpointMode::kTruncate) &&
      !result.blocked) {
    if (files.write == nullptr) {
      return absl::FailedPreconditionError(
          "a checkpoint restarts the log only as the writer (W7): RESTART and TRUNCATE need "
          "the WRITE lock (CheckpointFiles::write)");
    }
    files.write->AssumeHeld();  // the caller's writer role
    Hook("restart");
    // WAL2: the log whose file holds the newest frames. A log restarted in the index (an
    // empty current log) keeps its older generation's header in its file until its first
    // frame is written, so when the current log is empty the other one holds the newest.
    const int newest_file = header.logs[L].mx_frame > 0 ? L : other;
    if (files.two_logs) {
      // Both logs are in the database file: both restart in one publish (a snapshot that saw
      // one restarted and the other not would read the older log's frames over newer pages
      // in the database file). Readers of either old generation read the database file (W7).
      // The log with the older file becomes current and is overwritten first: the file left
      // as it is must never be older than the database's pages (R2).
      JKV_RETURN_IF_ERROR(RestartBothLogs(*files.write, ckpt, *files.index, header, newest_file));
      result.restarted = true;
    } else if (mx > 0) {
      JKV_RETURN_IF_ERROR(RestartLog(*files.write, ckpt, *files.index, header, L, false, files.two_logs));
      result.restarted = true;
    }
    if (mode == CheckpointMode::kTruncate) {
      // WAL2: the older log first, and durably (R2): a power loss that undid the older cut but
      // kept the newer one would bring back the older log alone, and replaying it over a
      // database that holds the newer log's pages would take them back. The newer log alone
      // coming back is harmless (the database holds all of it).
      wal::WalLog* older = files.two_logs ? files.logs[1 - newest_file] : nullptr;
      if (older != nullptr) {
        JKV_RETURN_IF_ERROR(older->Truncate(0));
        if (files.sync_db) {
          JKV_RETURN_IF_ERROR(vfs::SyncFile(older->file(), vfs::SyncKind::kAll, "R2 older log cut"));
          ++result.syncs;
        }
      }
      wal::WalLog* newer = files.two_logs ? files.logs[newest_file] : files.logs[L];
      if (newer != nullptr) JKV_RETURN_IF_ERROR(newer->Truncate(0));
    }
  }
  result.work = absl::Now() - work_start;
  return result;
}

void CallCheckpointHook(const char* point) { Hook(point); }

void SetCheckpointHookForTesting(CheckpointHook h) { hook.store(h, std::memory_order_relaxed); }

}  // namespace journalkv::wal
