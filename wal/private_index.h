// wal::PrivateIndex: the private-mode reader of one WAL connection. A read-only connection
// that may not write the -shm, and a read-write one whose -shm the disk cannot hold, read
// through a wal-index of their own on the heap, rebuilt from the log(s) up to the header the
// -shm publishes (read with pread), or with no -shm (no other connection is open) from the
// logs' valid prefixes. It holds WalOptions::private_reader_byte SHARED on the database file
// for its life, so that no checkpoint or restart changes the database file or the log under it
// (a checkpoint tests that byte: wal/checkpoint_copy.h, NoPrivateReaders). A full-disk
// connection refuses writes and checkpoints with ResourceExhausted naming the full disk.
//
// WalConnection composes it: Join (wal/wal_connection.cc) enters private mode through Join or
// JoinFullDisk; BeginRead (wal/wal_reader.cc) calls Refresh instead of pinning; BeginWrite and
// the checkpoints ask active() and reason().
//
// Invariants (CheckInvariants asserts them in debug builds at the end of Join and Refresh):
//   U1. The private index never shows a frame past the header it was built from: the
//       published header it last read from the -shm (frames past it may belong to a commit
//       that failed and are about to be overwritten), or the logs' valid prefixes without
//       one. Its header is that header, and it only grows within a generation (Refresh appends
//       the new frames only: open snapshots keep reading the old ones).
//   U2. Private mode never publishes: its index is on the heap, the connection holds no -shm
//       for writing, and takes no reader slot (a checkpoint never sees it but through the
//       private reader byte).
//
// Locks: the private index's state is the pin mutex's (the connection's, held around
// BeginRead). Refresh and OpenLogForReading take it as an argument and REQUIRE it, so that clang
// checks that the caller holds the very mutex it passes (tools/check_thread_safety.sh).
//
// Thread-safety: Join and JoinFullDisk once, before any other thread has the connection;
// active() and reason() from any thread after that; the rest under the pin mutex.
#ifndef JOURNALKV_WAL_PRIVATE_INDEX_H_
#define JOURNALKV_WAL_PRIVATE_INDEX_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "base/mutex.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/vfs.h"
#include "wal/index_recovery.h"
#include "wal/wal_types.h"

namespace journalkv::wal {

class PrivateIndex {
 public:
  // What it shares with its connection (not owned; each outlives this object).
  struct Env {
    vfs::FileSystem* fs = nullptr;
    vfs::File* db_file = nullptr;
    const std::string* db_path = nullptr;
    const std::string* shm_path = nullptr;
    const std::array<std::string, 2>* log_paths = nullptr;
    int nlogs = 1;
    uint32_t page_size = 0;
    const WalOptions* options = nullptr;  // private_reader_byte, busy_timeout
    // The connection's index and logs, which private mode creates and opens.
    std::unique_ptr<shm::WalIndex>* index = nullptr;
    std::array<std::unique_ptr<WalLog>, 2>* logs = nullptr;
    // The connection's -shm, which a full disk gives up (JoinFullDisk).
    std::unique_ptr<vfs::File>* shm_file = nullptr;
    // HeaderFromScans, for a private index built without a -shm.
    const IndexRecovery* recovery = nullptr;
  };

  explicit PrivateIndex(Env env) : env_(env) {}
  ~PrivateIndex();
  PrivateIndex(const PrivateIndex&) = delete;
  PrivateIndex& operator=(const PrivateIndex&) = delete;

  // A read-only connection that may not write the -shm (`why`): takes the private reader
  // byte, waits out a checkpoint or restart begun before it, opens the logs read-only and
  // builds the private index (Refresh, under `pin_mu`).
  absl::Status Join(const absl::Status& why, base::Mutex& pin_mu) ABSL_LOCKS_EXCLUDED(pin_mu);
  // A read-write connection whose -shm the disk cannot hold (`why`): lets the -shm and the logs
  // go, then Join; writes and checkpoints are refused with ResourceExhausted (reason()).
  absl::Status JoinFullDisk(const absl::Status& why, base::Mutex& pin_mu)
      ABSL_LOCKS_EXCLUDED(pin_mu);
  // Whether `s` says the disk is full (busy is Unavailable).
  static bool DiskFull(const absl::Status& s);

  // Indexes the frames published since the last look (U1).
  absl::Status Refresh(const base::Mutex& pin_mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu);
  // Opens log `log` read-only where the connection joined without it (a read-only connection
  // that found no log file), once a snapshot has frames in it.
  absl::Status OpenLogForReading(int log, const base::Mutex& pin_mu)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu);

  // Whether the connection reads through a private index (set by Join, for its life).
  bool active() const { return active_; }
  // JoinFullDisk's reason; empty for a read-only connection.
  const std::string& reason() const { return reason_; }
  // OK unless the connection reads through a private index, which cannot checkpoint: names
  // why (ResourceExhausted for a full disk, else FailedPrecondition).
  absl::Status CheckCanCheckpoint() const;
  // Whether no connection of any process reads through a private index now (none holds the
  // private reader byte of the database file shared): the log may restart (W7).
  bool NoPrivateReaders() const;
  // The change word of the header last indexed.
  uint32_t change() const { return change_; }

  // Debug builds: asserts U1 and U2 (above). A no-op under NDEBUG or outside private mode.
  void CheckInvariants(const base::Mutex& pin_mu) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(pin_mu);

 private:
  const Env env_;
  bool active_ = false;
  std::string reason_;               // JoinFullDisk's; empty for read-only
  std::unique_ptr<vfs::File> shm_;   // the -shm opened read-only, if any
  uint32_t change_ = 0;              // the header last indexed
  shm::IndexHeader built_from_;      // U1: the header the index was last built up to
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_PRIVATE_INDEX_H_
