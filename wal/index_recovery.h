// wal::IndexRecovery: how a WAL connection finds what the logs hold and whether the wal-index
// agrees with them: the scan of every log, the header that describes the scans (V1), the
// rebuild of the index entries from them (W6), and under WRITE the appended header a writer
// builds on, repaired when a writer died writing it (W12 e) or between it and the published
// one (W12 f), and checked against the log (IndexDamage, W6). Also the one place the index
// header is read until whole (ReadWholeHeader).
//
// It also makes a connection's index whole again: RecoverIndex (the rebuild, which makes the
// frames found durable first and drops the commits it loses through the durability role, D1
// and W13), RepairHeader (a torn published header) and ReadHeaderOrRepair (the published header
// read until whole, repaired by whoever may, W9). WalConnection composes it: Join and
// BeginWrite (wal/wal_connection.cc, wal/wal_writer.cc) take the locks and call in here;
// BeginWrite takes its base from AppendedOrDamage.
//
// Locks: WRITE and RECOVER are the connection's (wal::LockByte, wal/lock_byte.h), FLUSH its
// group flush's (wal/group_flush.h). The functions that need them take the byte as an argument
// and REQUIRE it, so that clang checks that the caller holds the very byte it passes
// (tools/check_thread_safety.sh).
//
// CheckInvariants (debug builds) asserts W6 at the end of every rebuild: the header published
// is the one the scans describe, every frame of each log up to its mx_frame is indexed with the
// page the log holds there and nothing past it, and nothing of the logs counts as copied
// (backfill 0).
//
// Thread-safety: the scans and HeaderFromScans from any thread; the rest under the locks they
// name, which also serialize the writer's checked-change cache (wal::Writer::Checked).
#ifndef JOURNALKV_WAL_INDEX_RECOVERY_H_
#define JOURNALKV_WAL_INDEX_RECOVERY_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/counters.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "wal/group_flush.h"
#include "wal/lock_byte.h"
#include "wal/log_durability.h"
#include "wal/writer.h"

namespace journalkv::wal {

// Which header of the index: the published one (what readers snapshot) or the appended one
// (what the next writer builds on, W12).
enum class HeaderCopy { kPublished, kAppended };

// Reads header `which` of `index` until its two copies agree, up to
// internal::kTornHeaderSpins times (a publish or an append keeps them apart for nanoseconds);
// false when they stay torn (a process died writing them: the caller waits or repairs, W6).
bool ReadWholeHeader(const shm::WalIndex& index, HeaderCopy which, shm::IndexHeader* out);

class IndexRecovery {
 public:
  // What it shares with its connection (not owned; each outlives this object).
  struct Env {
    // The connection's index, created when it joins, after this object: read through the
    // owning pointer.
    const std::unique_ptr<shm::WalIndex>* index = nullptr;
    const std::array<std::unique_ptr<WalLog>, 2>* logs = nullptr;  // logs[1] null in WAL
    bool wal2 = false;
    uint32_t page_size = 0;
    const std::string* shm_path = nullptr;  // for the messages
    // IndexDamage's cache: the last header found consistent with the log (or published by the
    // writer) is not checked again.
    Writer* writer = nullptr;
    // The durability role: the frames a rebuild publishes are made durable by its sync level
    // (D1), and the commits a rebuild or repair loses fail through it (W13).
    LogDurability* durability = nullptr;
    base::Counters* counters = nullptr;  // the connection's: counts the recoveries
  };

  explicit IndexRecovery(Env env) : env_(env), nlogs_(env.wal2 ? 2 : 1) {}
  IndexRecovery(const IndexRecovery&) = delete;
  IndexRecovery& operator=(const IndexRecovery&) = delete;

  // The scan of every log this mode uses (an empty result for a log not open).
  absl::StatusOr<std::array<ScanResult, 2>> ScanLogs() const;
  // The index header describing `scans`: the later valid generation is current (V1); a log
  // with no valid header gets `old`'s generation (or the first one) and no frames.
  shm::IndexHeader HeaderFromScans(const std::array<ScanResult, 2>& scans,
                                   const shm::IndexHeader* old) const;
  // W6: the index entries of every log replaced by the scans' frames, and what was copied
  // forgotten (C3, C4) for the generations `h` names, before the caller publishes `h` (W8).
  absl::Status RebuildEntries(const std::array<ScanResult, 2>& scans, const shm::IndexHeader& h,
                              const LockByte& write, const LockByte& recover)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, recover);

  // --- the index made whole again
  // W6: rebuilds the index from the logs (the scans, the entries, then the header: W8), making
  // the frames found durable first (D1) and dropping the commits it loses (W13). REQUIRES:
  // WRITE, RECOVER and FLUSH held (W12 d; at open, alone: GroupFlush::AssumeAlone).
  absl::Status RecoverIndex(const LockByte& write, const LockByte& recover, GroupFlush& flush)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, recover, flush);
  // W6: republishes the whole copy of a header a publisher died writing (or rebuilds the
  // index when neither copy is whole); the appended header is repaired too (W12 e).
  absl::Status RepairHeader(const LockByte& write, const LockByte& recover, GroupFlush& flush)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write, recover, flush);
  // The published header, read until whole (ReadWholeHeader); one that stays torn is repaired
  // (W6) by the connection's writer thread, or, with `may_recover`, by another thread while
  // the connection holds no WRITE (W9), which then takes WRITE, RECOVER and FLUSH itself
  // (`write`, `recover`, `flush`: the connection's); else waited for until `deadline`.
  absl::StatusOr<shm::IndexHeader> ReadHeaderOrRepair(absl::Time deadline, bool may_recover,
                                                      const LockByte& write,
                                                      const LockByte& recover, GroupFlush& flush);

  // Debug builds: W6 (above) after a rebuild that published `h` from `scans`. A no-op under
  // NDEBUG.
  void CheckInvariants(const std::array<ScanResult, 2>& scans, const shm::IndexHeader& h) const;

  // W12 e: the appended header, rewritten from its whole copy when it stays torn (D, then C);
  // false when neither copy is whole.
  bool RepairAppended(shm::IndexHeader* out, const LockByte& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write);
  // W12: whether appended header `a` is `published` with pending commits only (more frames of
  // the same generation of the current log) or none.
  bool ExtendsPublished(const shm::IndexHeader& a, const shm::IndexHeader& published) const;
  // The appended header (W12; repaired when a writer died writing it, W12 e, or between it
  // and the published one, W12 f), checked by IndexDamage. DataLoss when both copies are
  // damaged, it names another page size, or it contradicts the log: the caller rebuilds the
  // index (W6).
  absl::StatusOr<shm::IndexHeader> AppendedOrDamage(const shm::IndexHeader& published,
                                                    const LockByte& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write);
  // What makes header `h` impossible beside the logs themselves (a -shm damaged by a buggy
  // process: a backfill past a log's last frame, or a current log whose last frame is not the
  // commit frame the header describes), or OK. The frame is read only when `h` is not the
  // header last checked or published by this connection's writer.
  absl::Status IndexDamage(const shm::IndexHeader& h, const LockByte& write)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write);

 private:
  shm::WalIndex& index() const { return **env_.index; }

  const Env env_;
  const int nlogs_;
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_INDEX_RECOVERY_H_
