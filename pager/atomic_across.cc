// A commit across databases in journal mode atomic and its recovery (atomic_across.h, Y1..Y7).
#include "pager/atomic_across.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "pager/across.h"
#include "pager/atomic_txn.h"
#include "pager/db_lock.h"
#include "vfs/sync.h"

namespace journalkv::pager {
namespace {

constexpr char kNoteMagic[8] = {'J', 'K', 'V', 'N', 'O', 'T', 'E', '1'};
constexpr char kRecordMagic[8] = {'J', 'K', 'V', 'S', 'U', 'P', 'R', '1'};

void Put64(std::string& out, uint64_t v) {
  char b[8];
  base::EncodeFixed64(reinterpret_cast<uint8_t*>(b), v);
  out.append(b, 8);
}
void Put32(std::string& out, uint32_t v) {
  char b[4];
  base::EncodeFixed32(reinterpret_cast<uint8_t*>(b), v);
  out.append(b, 4);
}
uint64_t Get64(const std::string& s, size_t at) {
  return base::DecodeFixed64(reinterpret_cast<const uint8_t*>(s.data() + at));
}
uint32_t Get32(const std::string& s, size_t at) {
  return base::DecodeFixed32(reinterpret_cast<const uint8_t*>(s.data() + at));
}

// The record: "JKVSUPR1" | total bytes u64 | nonce u64 | participants u32 |
// per participant: new counter u64, path bytes u32, path | Xxh3 of everything before u64.
std::string EncodeSuperRecord(const SuperRecord& record) {
  std::string out(kRecordMagic, 8);
  Put64(out, 0);
  Put64(out, record.nonce);
  Put32(out, static_cast<uint32_t>(record.participants.size()));
  for (const SuperRecord::Participant& p : record.participants) {
    Put64(out, p.new_counter);
    Put32(out, static_cast<uint32_t>(p.path.size()));
    out += p.path;
  }
  base::EncodeFixed64(reinterpret_cast<uint8_t*>(out.data() + 8), out.size() + 8);
  Put64(out, base::Xxh3(out.data(), out.size(), 0));
  return out;
}

// The change counter in page 1 of the database at `path` (its own file, opened for the read:
// counters only grow, so a read racing a commit gives the old or the new one).
absl::StatusOr<uint64_t> ReadCounter(vfs::File& file) {
  uint8_t counter[8];
  absl::Status s = file.Read(kChangeCounterOffset, absl::MakeSpan(counter));
  if (absl::IsOutOfRange(s)) return 0;  // an empty (new) database
  JKV_RETURN_IF_ERROR(s);
  return base::DecodeFixed64(counter);
}
absl::StatusOr<uint64_t> ReadCounterAt(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(bool exists, fs.Exists(path));
  if (!exists) return 0;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, vfs::OpenOptions{vfs::OpenMode::kReadOnly,
                                                      vfs::FileKind::kDatabase}));
  return ReadCounter(*file);
}

// The first participant of `record` (read from `record_path`) that does not carry its counter
// yet, or nullopt (Y5, Y7).
absl::StatusOr<std::optional<std::string>> Unresolved(vfs::FileSystem& fs,
                                                      const SuperRecord& record,
                                                      const std::string& record_path) {
  for (const SuperRecord::Participant& p : record.participants) {
    const std::string path = PathFrom(record_path, p.path);
    JKV_ASSIGN_OR_RETURN(uint64_t counter, ReadCounterAt(fs, path));
    if (counter < p.new_counter) return path;
  }
  return std::nullopt;
}

// Empties the record file: its magic overwritten with zeros (ReadSuperRecord then finds none).
// Not cut: the next record overwrites the same block, and an overwrite's flush logs no new
// allocation (a cut file's next record would allocate its block again, in the commit point's
// flush).
absl::Status ClearRecordFile(vfs::FileSystem& fs, const std::string& path) {
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, vfs::OpenOptions{vfs::OpenMode::kReadWrite,
                                                      vfs::FileKind::kOther}));
  const uint8_t zeros[8] = {};
  return file->Write(0, zeros);
}

// Y5's tail: the record goes once every participant it names carries its counter.
void ClearRecordIfResolved(vfs::FileSystem& fs, const std::string& path, uint64_t nonce) {
  absl::StatusOr<std::optional<SuperRecord>> record = ReadSuperRecord(fs, path);
  if (!record.ok() || !record->has_value() || (*record)->nonce != nonce) return;
  absl::StatusOr<std::optional<std::string>> open = Unresolved(fs, **record, path);
  if (!open.ok() || open->has_value()) return;
  (void)ClearRecordFile(fs, path);  // unsynced: a record that comes back is resolved (Y4)
}

// Runs step(i) for every participant and returns the statuses. On a real file system the
// participants run at once, one thread each (their flushes overlap: Y1's prepares and Y3's
// commits each cost about one flush of latency, not N); on the emulated batches in turn, so
// that a crash sweep replays the same mutations from the same seed. Each thread uses only its
// own participant's transaction and pager.
std::vector<absl::Status> ForEachParticipant(const std::vector<AtomicWriteTxn*>& t,
                                             const std::function<absl::Status(size_t)>& step) {
  std::vector<absl::Status> statuses(t.size());
  const bool at_once =
      t.size() > 1 && std::none_of(t.begin(), t.end(), [](AtomicWriteTxn* x) {
        return x->emulated();
      });
  if (!at_once) {
    for (size_t i = 0; i < t.size(); ++i) statuses[i] = step(i);
    return statuses;
  }
  std::vector<std::thread> threads;
  threads.reserve(t.size() - 1);
  for (size_t i = 1; i < t.size(); ++i) {
    threads.emplace_back([&, i] { statuses[i] = step(i); });
  }
  statuses[0] = step(0);
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

uint64_t NewNonce() {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^
                                          (uint64_t{std::random_device{}()} << 32));
  uint64_t nonce;
  do {
    nonce = rng();
  } while (nonce == 0);
  return nonce;
}

}  // namespace

std::string EncodeAcrossNote(const AcrossNote& note) {
  std::string out(kNoteMagic, 8);
  Put64(out, note.nonce);
  Put64(out, note.base_counter);
  Put64(out, note.new_counter);
  out += note.record_path;
  return out;
}

std::optional<AcrossNote> DecodeAcrossNote(const std::string& bytes) {
  if (bytes.size() < 32 || std::memcmp(bytes.data(), kNoteMagic, 8) != 0) return std::nullopt;
  AcrossNote note;
  note.nonce = Get64(bytes, 8);
  note.base_counter = Get64(bytes, 16);
  note.new_counter = Get64(bytes, 24);
  note.record_path = bytes.substr(32);
  return note;
}

std::string SuperRecordPath(const std::string& first_participant) {
  return first_participant + "-super";
}

absl::StatusOr<std::optional<SuperRecord>> ReadSuperRecord(vfs::FileSystem& fs,
                                                           const std::string& path) {
  JKV_ASSIGN_OR_RETURN(bool exists, fs.Exists(path));
  if (!exists) return std::nullopt;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs.Open(path, vfs::OpenOptions{vfs::OpenMode::kReadOnly,
                                                      vfs::FileKind::kOther}));
  JKV_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  if (size < 36) return std::nullopt;
  std::string head(16, '\0');
  JKV_RETURN_IF_ERROR(
      file->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(head.data()), head.size())));
  const uint64_t total = Get64(head, 8);
  if (std::memcmp(head.data(), kRecordMagic, 8) != 0 || total > size || total < 36) {
    return std::nullopt;
  }
  std::string bytes(total, '\0');
  JKV_RETURN_IF_ERROR(
      file->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size())));
  if (Get64(bytes, total - 8) != base::Xxh3(bytes.data(), total - 8, 0)) return std::nullopt;
  SuperRecord record;
  record.nonce = Get64(bytes, 16);
  const uint32_t count = Get32(bytes, 24);
  size_t at = 28;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + 12 > total - 8) return std::nullopt;
    SuperRecord::Participant p;
    p.new_counter = Get64(bytes, at);
    const uint32_t n = Get32(bytes, at + 8);
    at += 12;
    if (at + n > total - 8) return std::nullopt;
    p.path = bytes.substr(at, n);
    at += n;
    record.participants.push_back(std::move(p));
  }
  return record;
}

// ---------------------------------------------------------------------------------------------
// Y5: recovery

absl::Status RecoverPreparedLocked(PagerCore& core, absl::Time deadline) {
  vfs::File& file = *core.db_file_;
  JKV_ASSIGN_OR_RETURN(std::optional<std::string> first, file.PreparedBatch());
  if (!first.has_value()) return absl::OkStatus();  // the common case: one stat
  // A prepared batch next to a live writer (one holding RESERVED) is that writer's.
  JKV_ASSIGN_OR_RETURN(bool reserved_free, file.TryLock(kReservedByte, 1, vfs::LockMode::kShared));
  if (!reserved_free) return absl::OkStatus();
  JKV_RETURN_IF_ERROR(file.Unlock(kReservedByte, 1));
  if (core.options_.access == AccessMode::kReadOnly) {
    return absl::FailedPreconditionError(absl::StrCat(
        core.path_, ": a commit across databases left a prepared batch here that only a "
        "read-write connection can decide (open the database read-write once)"));
  }
  JKV_RETURN_IF_ERROR(
      core.Retry(deadline, false, "another connection is writing", &DbLock::TryReserved));
  absl::Status locked = core.Retry(deadline, false, "readers hold the database during recovery",
                                   &DbLock::TryExclusive);
  bool applied = false;
  absl::Status s = locked;
  std::optional<AcrossNote> note;
  if (s.ok()) {
    // Again under EXCLUSIVE: another connection may have decided it meanwhile.
    absl::StatusOr<std::optional<std::string>> again = file.PreparedBatch();
    s = again.status();
    if (s.ok() && again->has_value()) {
      note = DecodeAcrossNote(**again);
      if (note.has_value()) {
        note->record_path = PathFrom(core.path_, note->record_path);
      }
      bool apply = false;
      if (note.has_value()) {
        absl::StatusOr<uint64_t> counter = ReadCounter(file);
        s = counter.status();
        if (s.ok() && *counter == note->base_counter) {
          absl::StatusOr<std::optional<SuperRecord>> record =
              ReadSuperRecord(*core.fs_, note->record_path);
          s = record.status();
          apply = s.ok() && record->has_value() && (*record)->nonce == note->nonce;
        }
      }
      if (s.ok() && apply) {
        // Y5: the record durable (and its name) before any participant rolls forward.
        absl::StatusOr<std::unique_ptr<vfs::File>> record_file = core.fs_->Open(
            note->record_path, vfs::OpenOptions{vfs::OpenMode::kReadWrite, vfs::FileKind::kOther});
        s = record_file.status();
        if (s.ok()) s = vfs::SyncFile(**record_file, vfs::SyncKind::kData, "Y5 super record");
        if (s.ok()) s = vfs::SyncDir(*core.fs_, note->record_path, "Y5 super record (name)");
        if (s.ok()) {
          s = file.CommitPreparedBatch(vfs::BatchSync::kDurable);
          if (s.ok()) {
            applied = true;
          } else {
            s = absl::Status(s.code(), absl::StrCat("rolling forward a commit across databases: ",
                                                    s.message()));
          }
        }
      } else if (s.ok()) {
        s = file.DiscardPreparedBatch();
      }
    }
  }
  absl::Status down = core.lock_.DowngradeToShared();
  if (vfs::IsSyncFailure(s)) core.SetStickyError(s);  // I7
  JKV_RETURN_IF_ERROR(s);
  JKV_RETURN_IF_ERROR(down);
  if (note.has_value()) ClearRecordIfResolved(*core.fs_, note->record_path, note->nonce);
  if (!applied) return absl::OkStatus();
  core.counters_.AddOwned(base::Counter::kRecoveries);
  return core.RecoverLocked(deadline);  // the header anew, the cache emptied
}

// ---------------------------------------------------------------------------------------------
// The commit (Y1, Y2, Y3, Y4, Y6 and Y7)

absl::Status AcrossCommit::Atomic(absl::Span<WriteTxn* const> txns) {
  std::vector<AtomicWriteTxn*> t;
  for (WriteTxn* txn : txns) t.push_back(static_cast<AtomicWriteTxn*>(txn));
  // Before anything is durable: every participant rolls back (the batches are aborted,
  // prepared ones with them), the one that failed with `s`.
  auto abort_all = [&](absl::Status s) {
    for (WriteTxn* txn : txns) {
      txn->commit_retryable_ = false;
      (void)FinishCommit(*txn, s);
    }
    return s;
  };
  // Y1 (first half): page 1 and every page into each batch; nothing durable yet.
  for (AtomicWriteTxn* txn : t) {
    if (absl::Status s = txn->StageBatch(); !s.ok()) return abort_all(s);
  }
  // Y6: EXCLUSIVE in the canonical order; busy gives the ones taken back, all stay open.
  for (size_t i = 0; i < t.size(); ++i) {
    absl::Status s = t[i]->AcquireExclusive();
    if (s.ok()) continue;
    for (size_t j = 0; j < i; ++j) {
      if (absl::Status back = t[j]->ReleaseExclusive(); !back.ok()) return abort_all(back);
    }
    s = absl::Status(s.code(), absl::StrCat(t[i]->path(), ": ", s.message()));
    if (Retryable(*t[i])) {
      for (WriteTxn* txn : txns) txn->commit_retryable_ = true;
      return s;
    }
    return abort_all(s);
  }
  vfs::FileSystem& fs = *txns.front()->core_->fs_;
  const std::string record_path = SuperRecordPath(t.front()->path());
  // Y7: the record file's last record resolved before it is overwritten.
  {
    absl::StatusOr<std::optional<SuperRecord>> last = ReadSuperRecord(fs, record_path);
    if (!last.ok()) return abort_all(last.status());
    if (last->has_value()) {
      absl::StatusOr<std::optional<std::string>> open = Unresolved(fs, **last, record_path);
      if (!open.ok()) return abort_all(open.status());
      if (open->has_value()) {
        return abort_all(absl::FailedPreconditionError(absl::StrCat(
            record_path, ": an earlier transaction across databases committed here has not "
            "been rolled forward in ", **open, " yet (its writer failed after its commit "
            "point); open that database once to recover it, then retry")));
      }
    }
  }
  // Y1: every batch prepared, its note naming the record and the counters.
  SuperRecord record;
  record.nonce = NewNonce();
  for (AtomicWriteTxn* txn : t) {
    record.participants.push_back(
        {NameFrom(record_path, txn->path()), txn->new_counter()});
  }
  const std::vector<absl::Status> prepared = ForEachParticipant(t, [&](size_t i) {
    AcrossNote note{NameFrom(t[i]->path(), record_path), record.nonce,
                    t[i]->base_counter(), t[i]->new_counter()};
    return t[i]->PrepareBatch(EncodeAcrossNote(note));
  });
  for (size_t i = 0; i < t.size(); ++i) {
    const absl::Status& s = prepared[i];
    if (!s.ok()) {
      return abort_all(absl::Status(s.code(), absl::StrCat(t[i]->path(), ": ", s.message())));
    }
  }
  // Y2: the record written and synced: the commit point. From the write on, a failure leaves
  // every batch prepared and every pager in its error state: the disk may hold the record.
  absl::Status point = [&]() -> absl::Status {
    JKV_ASSIGN_OR_RETURN(const bool existed, fs.Exists(record_path));
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                         fs.Open(record_path, vfs::OpenOptions{vfs::OpenMode::kCreate,
                                                               vfs::FileKind::kOther}));
    const std::string bytes = EncodeSuperRecord(record);
    JKV_RETURN_IF_ERROR(file->Write(
        0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    JKV_RETURN_IF_ERROR(vfs::SyncFile(*file, vfs::SyncKind::kData, "Y2 super record"));
    if (!existed) JKV_RETURN_IF_ERROR(vfs::SyncDir(fs, record_path, "Y2 super record (created)"));
    return absl::OkStatus();
  }();
  if (!point.ok()) {
    point = absl::Status(point.code(),
                         absl::StrCat(record_path, ": writing the super record of a transaction "
                                      "across databases: ", point.message(),
                                      "; whether it committed is decided when the databases "
                                      "are next opened (all of them or none)"));
    for (AtomicWriteTxn* txn : t) {
      txn->LeavePrepared(point);
      (void)FinishCommit(*txn, point);
    }
    return point;
  }
  // Y3: committed. Each batch durably; a failure is rolled forward by the next opener.
  std::vector<std::string> pending;
  absl::Status first_failure;
  const std::vector<absl::Status> committed = ForEachParticipant(t, [&](size_t i) {
    return t[i]->CommitBatch(/*durable=*/true, "Y3 atomic commit across databases");
  });
  for (size_t i = 0; i < t.size(); ++i) {
    const absl::Status& s = committed[i];
    if (s.ok()) continue;
    if (first_failure.ok()) first_failure = s;
    pending.push_back(t[i]->path());
    t[i]->LeavePrepared(s);
    (void)FinishCommit(*t[i], s);
  }
  // Y4: the record goes once every batch is durable.
  if (pending.empty()) (void)ClearRecordFile(fs, record_path);
  for (AtomicWriteTxn* txn : t) {
    if (!txn->finished()) txn->Publish(/*durable=*/true);
  }
  if (first_failure.ok()) return absl::OkStatus();
  return absl::Status(first_failure.code(),
                      absl::StrCat(first_failure.message(), "; the transaction across databases "
                                   "is committed (its super record is durable): ",
                                   absl::StrJoin(pending, ", "),
                                   " will be rolled forward when next opened"));
}

}  // namespace journalkv::pager
