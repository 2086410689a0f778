// wal::Writer: the writer role of one WAL connection, that is what holding WRITE means for it:
// the WRITE lock as this connection's one role (W9), the writer's state (the state table in
// wal/wal_connection.h, WRITING split in three), the header the writer builds on and the cursor
// where it appends (wal/writer_cursor.h), the append epoch it joined (W13 d), and the current
// transaction's frames, which it may write again (W11). WalConnection::BeginWrite (wal/
// wal_writer.cc) takes WRITE through it and settles the header it starts from (a restart, a
// switch, a repair: the connection's work), then hands it to Begin; Spill, Commit, Rollback and
// EndWrite are this role's.
//
// The writer's states, changed only by the writer thread through EnterState, which checks each
// edge in debug builds:
//   kIdle -> kLocked                  TryLock (WRITE taken under role_mu())
//   kLocked, kAppended -> kAppended   WriteFrames (frames past the published mx_frame)
//   kAppended -> kCommitted           Commit (its commit frame written and indexed; the
//                                     appended header names it, W12)
//   kAppended -> kLocked              Commit at NORMAL or OFF with nothing pending: published
//   kLocked, kAppended -> kLocked     Rollback (the unpublished frames dropped)
//   any -> kIdle                      Unlock (WRITE released under role_mu())
// Other threads read the state only to tell whether the connection holds WRITE (W9).
//
// Invariants owned here (cited at their call sites; CheckInvariants asserts them in debug
// builds at the end of Begin, WriteFrames, Commit and Rollback):
//   W9 (wal/wal_connection.h: holding WRITE is one role per connection, not per thread): the
//       state is kIdle exactly when no thread is the writer thread; both change together,
//       under role_mu().
//   W11. A transaction may write a page it already wrote to the log (a spill, then the page
//       changed again) over its own frame instead of appending it again (WriteFrames), so
//       that a transaction's frames are at most its distinct pages plus one commit frame. Only
//       frames past the published mx_frame that this transaction appended are rewritten (no
//       reader, checkpoint or recovery looks at them). The rewrite leaves the checksum chain
//       stale from the first frame rewritten; the commit recomputes it from there
//       (WalLog::Rechain) before it appends the commit frame, which is always a new frame. A
//       crash before that leaves a chain that breaks at or before the commit, so recovery
//       takes nothing of the transaction, and a power loss that keeps only part of the
//       rechained frames breaks the chain too (each checksum covers its frame header, which
//       carries its image's own checksum; log/wal_format.h).
//       CheckInvariants: every frame of the transaction (and the first stale one) lies in
//       [first frame, cursor), and the first frame is past both the writer's header and the
//       published header of the same generation; outside a transaction (kIdle, kLocked,
//       kCommitted) there is none.
//   The cursor's invariant (wal/writer_cursor.h): AtEndOf the writer's header between
//       transactions.
//
// Thread-safety: the writer thread only, but for write_locked(), OnWriterThread() and
// role_mu(), which any thread of the connection uses (W9).
#ifndef JOURNALKV_WAL_WRITER_H_
#define JOURNALKV_WAL_WRITER_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/counters.h"
#include "base/mutex.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "vfs/sync.h"
#include "wal/wal_types.h"
#include "wal/writer_cursor.h"

namespace journalkv::wal {

class Writer {
 public:
  enum class State : uint8_t { kIdle, kLocked, kAppended, kCommitted };

  // What the writer shares with its connection (not owned; each outlives the writer).
  struct Env {
    // The connection's index, created when it joins (after the writer is constructed): read
    // through the owning pointer, and only once WRITE is taken.
    const std::unique_ptr<shm::WalIndex>* index = nullptr;
    // The logs (logs[1] null in WAL mode); logs[l] is open before a transaction appends to l.
    const std::array<std::unique_ptr<WalLog>, 2>* logs = nullptr;
    bool wal2 = false;
    uint32_t page_size = 0;
    const WalOptions* options = nullptr;  // sync, size_limit, busy_timeout
    base::Counters* counters = nullptr;
    // D1: the level of the syncs made for every connection's commits (W4's, V6's).
    std::function<vfs::SyncLevel()> maintenance_sync;
    // V6 (D2, W13): makes log `log` durable up to `state`, taking FLUSH until `deadline`.
    std::function<absl::StatusOr<bool>(int log, const shm::LogState& state, const char* reason,
                                       absl::Time deadline)>
        make_log_durable;
  };

  // A commit appended by Commit: its header (the appended header after it), its pages'
  // frames, and whether it is published already.
  struct CommitTicket {
    shm::IndexHeader header;
    std::vector<uint32_t> frames;
    bool published = false;
    uint32_t epoch = 0;  // the append epoch it was appended in (W13 d)
  };

  explicit Writer(Env env) : env_(std::move(env)) {}
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // --- WRITE (W9)
  // Tries WRITE once, under role_mu(): true when taken (the state is then kLocked and this
  // thread the writer thread).
  absl::StatusOr<bool> TryLock();
  // Releases WRITE under role_mu() (the state kIdle) and wakes the writers of other
  // connections that sleep on it. REQUIRES: write_locked().
  void Unlock();
  // Whether this connection holds WRITE (any thread; acquire).
  bool write_locked() const { return state_.load(std::memory_order_acquire) != State::kIdle; }
  // Whether the calling thread is the one that holds WRITE for this connection.
  bool OnWriterThread() const {
    return write_locked() && thread_.load(std::memory_order_acquire) == std::this_thread::get_id();
  }
  // Taken to change whether this connection holds WRITE: by TryLock and Unlock, and by a
  // thread that takes WRITE to repair only while write_locked() is false (W9).
  base::Mutex* role_mu() { return &role_mu_; }
  State state() const { return state_.load(std::memory_order_relaxed); }

  // --- a transaction (the writer thread, WRITE held)
  // Starts from header `h` (the appended header once any restart, switch or repair is done;
  // its index entries past it already removed, W2), in append epoch `epoch` (W13 d).
  void Begin(const shm::IndexHeader& h, uint32_t epoch);
  // Appends `pages` (the last a commit frame of `commit_db_size` pages when that is nonzero),
  // writing a page this transaction already appended over its frame (W11), and indexes them
  // (W2); `frames` gets each page's frame. A new generation's first frame writes the log
  // header first (W4, V6).
  absl::Status WriteFrames(absl::Span<const FramePage> pages, uint32_t commit_db_size,
                           std::vector<uint32_t>* frames);
  // Appends the transaction's last frames and its commit frame, then, at NORMAL or OFF with
  // nothing pending, publishes them (W12 b), else writes them as the appended header (W12 a).
  absl::StatusOr<CommitTicket> Commit(absl::Span<const FramePage> pages, uint32_t db_size);
  // Drops the transaction's frames from the index (W2).
  absl::Status Rollback();
  // The transaction's frames are published or dropped: its pages' frames are no longer its own.
  void ForgetTransaction();

  // The writer's header: the published state at Begin, then as the writer appends.
  const shm::IndexHeader& header() const { return header_; }
  // Where the next append goes: WriterCursor::AtEndOf(header()) between transactions.
  const WriterCursor& cursor() const { return cursor_; }
  uint32_t epoch() const { return epoch_; }
  // Between transactions, as the writer: the header is now `h` (a restart or a WAL2 switch the
  // writer made, W7, V3; pending commits flushed, W12 g), and the cursor its end. The one place
  // besides Begin that builds the cursor from a header.
  void MoveTo(const shm::IndexHeader& h);
  // For the death test of the cursor's invariant only.
  WriterCursor& mutable_cursor_for_testing() { return cursor_; }

  // The change word of the last header found consistent with the log (IndexDamage) or
  // published by this writer: such a header's last frame need not be read again.
  bool Checked(uint32_t change) const { return checked_change_ == change; }
  void NoteChecked(uint32_t change) { checked_change_ = change; }

  // Debug builds: asserts W9's pairing, W11 and the cursor's invariant (above). A no-op under
  // NDEBUG.
  void CheckInvariants() const;

 private:
  // The one place the state changes; checks the edge (the table above).
  void EnterState(State to);
  // Cuts log `log` back to WalOptions::size_limit when it is longer: at a new generation's
  // first append, once its header is written (W4).
  void LimitLogSize(int log);
  shm::WalIndex& index() const { return **env_.index; }

  const Env env_;
  // W9: byte-range locks belong to the -shm File, which every thread of this connection
  // shares, so TryLock(WRITE) succeeds for a reader thread while the writer thread holds it.
  // role_mu_ makes holding WRITE this connection's one role.
  base::Mutex role_mu_;
  std::atomic<State> state_{State::kIdle};
  std::atomic<std::thread::id> thread_{};
  shm::IndexHeader header_;
  // Where the next append goes (log, frame, chain): AtEndOf(header_) between transactions,
  // ahead of it by the transaction's frames inside one.
  WriterCursor cursor_;
  uint32_t epoch_ = 0;  // the append epoch at Begin (W13 d)
  // The current transaction's frames (W11): page -> the frame it last appended the page at,
  // the first rewritten frame whose checksum is stale (0: none), and the transaction's first
  // frame (0: none yet) with the chain value before it.
  absl::flat_hash_map<uint32_t, uint32_t> txn_frames_;
  uint32_t rechain_from_ = 0;
  uint32_t txn_first_frame_ = 0;
  uint64_t txn_start_chain_ = 0;
  std::optional<uint32_t> checked_change_;
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_WAL_WRITER_H_
