// WalConnection's checkpoints: the files a checkpoint works on, PASSIVE in both WAL modes and
// FULL, RESTART and TRUNCATE (WAL: as the writer; WAL2: in phases stepped through by the
// caller, which holds its writer role only for the switches, V4), and the log's progress the
// checkpoint policy looks at.
#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "wal/wal_connection.h"

namespace journalkv::wal {

CheckpointFiles WalConnection::Files() {
  CheckpointFiles f;
  f.index = index_.get();
  f.two_logs = wal2_;
  f.logs[0] = logs_[0].get();
  f.logs[1] = logs_[1].get();
  f.db = db_file_;
  f.page_size = page_size_;
  const SyncLevel level = durability_.MaintenanceSync();  // D1
  if (level != SyncLevel::kOff) {
    // C1 by the frames (D2): synced already (W1, an earlier C1), or synced here.
    f.make_log_durable = [this](int log, const shm::LogState& state) {
      return durability_.MakeLogDurableLocking(flush_, log, state, "C1 log",
                                                 absl::Now() + options_.busy_timeout);
    };
  }
  f.sync_db = level != SyncLevel::kOff;
  f.busy_timeout = options_.busy_timeout;
  f.own = pins_.Own();  // M5
  f.private_reader_lock = options_.private_reader_byte;
  return f;
}

absl::StatusOr<CheckpointResult> WalConnection::Checkpoint(CheckpointMode mode,
                                                         const std::atomic<bool>* stop,
                                                         bool defer) {
  JKV_RETURN_IF_ERROR(private_.CheckCanCheckpoint());
  // As the writer (FULL, RESTART, TRUNCATE): what other writers appended and a flush has not
  // published yet is made durable and published first, so that the checkpoint copies it and
  // the log can restart (W12 c).
  if (mode != CheckpointMode::kPassive && writer_.write_locked()) {
    JKV_RETURN_IF_ERROR(FlushPendingAsWriter());
  }
  JKV_ASSIGN_OR_RETURN(CheckpointResult r, RunCheckpoint(mode, stop, defer));
  checkpoints_.Count(r);
  return r;
}

absl::StatusOr<CheckpointResult> WalConnection::RunCheckpoint(CheckpointMode mode,
                                                            const std::atomic<bool>* stop,
                                                            bool defer, bool non_current) {
  // As the writer, with nothing unpublished: the state table's LOCKED.
  const bool as_writer = mode != CheckpointMode::kPassive && !(wal2_ && non_current);
  JKV_DCHECK(!as_writer || writer_.state() == Writer::State::kLocked);
  CheckpointFiles files = Files();
  files.stop = stop;
  if (as_writer) files.write = &write_lock_;  // W7: only the writer restarts the log
  // Only a deferred checkpoint may leave its copy unpublished, and only where published frames
  // are durable (W1); every checkpoint starts past any connection's unpublished copy (C3).
  files.publish = !(defer && mode == CheckpointMode::kPassive && options_.sync >= SyncLevel::kFull);
  JKV_ASSIGN_OR_RETURN(CheckpointResult r,
                       checkpoints_.Run(files, mode, as_writer ? writer_.cursor().log : -1));
  if (wal2_ && as_writer && r.restarted) {
    // The writer's view of the index: both logs restarted, the other one is current.
    shm::IndexHeader h;
    if (index_->ReadHeader(&h)) {
      writer_.MoveTo(h);
      JKV_DCHECK(writer_.cursor().next_frame == 1);  // W7: a restarted log holds no frame
    }
  }
  return r;
}

absl::StatusOr<Wal2Checkpoint> WalConnection::StartWal2Checkpoint(CheckpointMode mode) {
  JKV_DCHECK(wal2_ && mode != CheckpointMode::kPassive);
  JKV_RETURN_IF_ERROR(private_.CheckCanCheckpoint());
  Wal2Checkpoint c;
  c.mode = mode;
  c.deadline = absl::Now() + options_.busy_timeout;
  // The current log's generation now: the commits made before this call are in it or in the
  // other log.
  JKV_ASSIGN_OR_RETURN(
      shm::IndexHeader start,
      recovery_.ReadHeaderOrRepair(c.deadline, false, write_lock_, recover_lock_, flush_));
  c.seq = start.logs[CurrentLog(start, wal2_)].ckpt_seq;
  c.caller_writes = writer_.OnWriterThread();
  return c;
}

// V4. One phase of WAL2's FULL, RESTART and TRUNCATE (wal/checkpoints.h): none copies as the
// writer, and the switches run only as the writer, whose role the caller took.
absl::Status WalConnection::Wal2CheckpointStep(Wal2Checkpoint& c) {
  JKV_DCHECK(wal2_ && !c.done());
  JKV_DCHECK(!c.needs_writer() ||
             writer_.state() == Writer::State::kLocked);
  using Phase = Wal2Checkpoint::Phase;
  const Phase before = c.next;
  const bool as_writer = writer_.OnWriterThread();
  absl::Status s = Wal2Phase(c);
  if (s.ok() && !c.caller_writes) Checkpoints::CheckInvariants(c, before, as_writer);  // V4
  return s;
}

absl::Status WalConnection::Wal2Phase(Wal2Checkpoint& c) {
  using Phase = Wal2Checkpoint::Phase;
  const auto finish = [&](bool restart_counted = false) {
    checkpoints_.Count(c.result, restart_counted);
    c.next = Phase::kDone;
  };
  // FULL's wait for readers, on the log no writer appends to.
  const auto copy_non_current = [&]() -> absl::StatusOr<bool> {
    JKV_ASSIGN_OR_RETURN(
        CheckpointResult phase,
        RunCheckpoint(CheckpointMode::kFull, nullptr, false, /*non_current=*/true));
    Checkpoints::AddPhase(c.result, phase);
    if (phase.blocked) finish();
    return !phase.blocked;
  };
  switch (c.next) {
    case Phase::kCopy: {
      // 1. The non-current log, completely.
      JKV_ASSIGN_OR_RETURN(const bool copied, copy_non_current());
      if (copied) c.next = Phase::kSwitch;
      return absl::OkStatus();
    }
    case Phase::kSwitch: {
      // 2. As the writer, only to switch: the current log, if it is still generation `seq` and
      // has frames, becomes the non-current one. (Already switched by a writer, V3: its commits
      // are in the non-current log. Restarted in place, or still empty: it holds none.)
      CallWalHook("checkpoint:switching");
      write_lock_.AssumeHeld();  // V4: this phase runs as the writer (Wal2CheckpointStep)
      const shm::LogState& current = writer_.header().logs[writer_.cursor().log];
      c.nothing_new = current.ckpt_seq == c.seq && current.mx_frame == 0;
      bool moved = true;
      if (current.ckpt_seq == c.seq && current.mx_frame > 0) {
        JKV_ASSIGN_OR_RETURN(moved, SwitchLogs(c.deadline));
      }
      if (!moved) {  // a reader holds the other log, or CKPT stayed busy
        c.result.blocked = true;
        finish();
        return absl::OkStatus();
      }
      c.next = Phase::kCopySwitched;
      return absl::OkStatus();
    }
    case Phase::kCopySwitched: {
      // 3. The log switched from, completely: every commit made before the call is in the
      // database file.
      if (!c.nothing_new) {
        CallWalHook("checkpoint:switched");
        JKV_ASSIGN_OR_RETURN(const bool copied, copy_non_current());
        if (!copied) return absl::OkStatus();
      }
      if (c.mode == CheckpointMode::kFull) {
        finish();
        return absl::OkStatus();
      }
      CallWalHook("checkpoint:copied");  // before the caller takes the writer role again
      c.next = Phase::kRestart;
      return absl::OkStatus();
    }
    case Phase::kRestart: {
      // 4. RESTART, TRUNCATE: as the writer again, restart what holds nothing left to copy.
      CallWalHook("checkpoint:restarting");
      write_lock_.AssumeHeld();  // V4: this phase runs as the writer (Wal2CheckpointStep)
      bool switched = false;  // the restart was a switch, which MaybeRestart counted
      JKV_ASSIGN_OR_RETURN(const CheckpointResult last,
                           RestartCopiedLogs(c.mode, c.deadline, &switched));
      c.result.restarted = last.restarted;
      c.result.syncs += last.syncs;
      c.result.lock_wait += last.lock_wait;
      c.result.work += last.work;
      finish(/*restart_counted=*/switched);
      return absl::OkStatus();
    }
    case Phase::kDone:
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> WalConnection::SwitchLogs(absl::Time deadline) {
  JKV_DCHECK(wal2_ && writer_.state() == Writer::State::kLocked);
  const int other = 1 - writer_.cursor().log;
  if (index_->backfill(other) != writer_.header().logs[other].mx_frame) return false;
  JKV_RETURN_IF_ERROR(FlushPendingAsWriter());  // W12 c: nothing pending across a switch
  shm::IndexHeader h = writer_.header();
  JKV_RETURN_IF_ERROR(MaybeRestart(h, other, /*make_current=*/true, deadline));
  writer_.MoveTo(h);
  if (CurrentLog(h, wal2_) != other) return false;  // CKPT busy
  JKV_DCHECK(writer_.cursor().next_frame == 1);  // V3: switched to a restarted log
  counters_.Add(base::Counter::kLogSwitches);
  return true;
}

absl::StatusOr<CheckpointResult> WalConnection::RestartCopiedLogs(CheckpointMode mode,
                                                                absl::Time deadline,
                                                                bool* switched) {
  JKV_DCHECK(wal2_ && writer_.state() == Writer::State::kLocked);
  CheckpointResult r;
  const int other = 1 - writer_.cursor().log;
  // A writer switched after step 3 (not before its end: until then the log it copied was not
  // all copied, V3), so the log it appends to began after every commit made before the call
  // was in the database file, as this restart would have made it; the other log holds the
  // commits made since, not this checkpoint's to copy, and no file is free to cut.
  if (index_->backfill(other) != writer_.header().logs[other].mx_frame) {
    r.restarted = true;
    *switched = true;  // counted by that writer's restart
    return r;
  }
  if (writer_.header().logs[writer_.cursor().log].mx_frame == 0) {
    // Nothing committed since step 2: both logs restart in one publish (and TRUNCATE cuts
    // both files, the older first and durably, R2). Neither has a frame left to copy.
    return RunCheckpoint(mode, nullptr);
  }
  // Commits made during the checkpoint are in the current log: the writer goes on in a new
  // generation of the copied one (V3), whose file, older than the other's (W4 wrote the
  // current log's header before its first frame), TRUNCATE cuts. Unsynced: the cut undone by
  // a power loss brings back a log the database file holds all of, older than the other.
  JKV_ASSIGN_OR_RETURN(r.restarted, SwitchLogs(deadline));
  *switched = r.restarted;
  if (r.restarted && mode == CheckpointMode::kTruncate && logs_[writer_.cursor().log] != nullptr) {
    JKV_RETURN_IF_ERROR(logs_[writer_.cursor().log]->Truncate(0));
  }
  return r;
}

WalProgress WalConnection::Progress() {
  WalProgress p;
  shm::IndexHeader h;
  // The copies disagree only while a writer publishes: a few tries see them agree.
  bool read = index_->ReadHeader(&h);
  for (int i = 0; i < 1000 && !read; ++i) {
    std::this_thread::yield();
    read = index_->ReadHeader(&h);
  }
  const int l = read ? PolicyLog(h, wal2_) : 0;
  if (read) {
    p.seq = h.logs[l].ckpt_seq;
    p.log_frames = h.logs[l].mx_frame;
    p.total_frames = h.logs[0].mx_frame + (wal2_ ? h.logs[1].mx_frame : 0);
  }
  p.backfilled = index_->backfill(l);
  p.total_uncopied = p.log_frames - std::min(p.backfilled, p.log_frames);
  if (read && wal2_) {
    const int c = 1 - l;
    p.total_uncopied += h.logs[c].mx_frame - std::min(index_->backfill(c), h.logs[c].mx_frame);
  }
  // What a blocked commit waits to see drop: WAL, the log's frames until every one is copied
  // (the log then restarts). WAL2, the frames of both logs while the non-current one has frames
  // to copy: only that copy lets the writer switch, and so bounds the logs; once it is copied
  // the next transaction switches, and nothing is left to wait for. (Counting the non-current
  // log alone, which never holds much more than wal2_switch_pages frames, let a blocking
  // threshold above that never block, and the current log grow without bound whenever the
  // background checkpointer did not get to run.)
  p.live_frames = p.backfilled >= p.log_frames ? 0 : (wal2_ ? p.total_frames : p.log_frames);
  p.log = l;
  return p;
}

LogSnapshot WalConnection::PolicyView(uint32_t* total_frames) {
  const WalProgress p = Progress();
  if (total_frames != nullptr) *total_frames = p.total_frames;
  LogSnapshot log;
  log.log_frames = p.log_frames;
  log.uncopied = p.log_frames - std::min(p.backfilled, p.log_frames);
  log.live_frames = p.live_frames;
  if (wal2_) {
    // The policy's thresholds count both logs, so that one above wal2_switch_pages still
    // fires (the non-current log alone may never reach it, and then never be copied, and the
    // writer never switch); but it acts only when the non-current log, the one a checkpoint
    // copies while writers run, has frames to copy. Blocking too counts both logs, and only
    // while that log has frames to copy (live_frames, Progress): a commit cannot wait for the
    // current log, which only the next switch releases.
    log.log_frames = p.total_frames;
    log.uncopied = log.uncopied > 0 ? p.total_uncopied : 0;
  }
  // A pin of an older generation holds the checkpoint at the backfill (shm/pin_scan.h). A
  // kView scan never fails.
  const shm::PinScanResult pins = *shm::OldestLivePin(*index_, p.log, p.seq, p.backfilled,
                                                     p.log_frames, pins_.Own(), shm::PinScanUse::kView);
  log.active_readers = pins.live;
  log.pinned_back = p.log_frames - std::min(pins.limit, p.log_frames);
  return log;
}

}  // namespace journalkv::wal
