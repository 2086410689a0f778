// FaultInjectingFileSystem: a FileSystem wrapper for crash and error tests (and benchmarks that
// want its counters). It forwards every call to a base FileSystem (MemFileSystem or
// PosixFileSystem) and adds three things:
//
// 1. A power-loss model. For every file opened or created through it, it keeps in memory the
//    file's durable image (what a disk is guaranteed to hold after a power loss) and the writes
//    and truncates made since the file's last Sync; per directory, the creates and deletes made
//    since its last SyncDirectory. A file that already exists when first opened through the
//    wrapper (or deleted through it) is taken to be durable as it is. SimulatePowerLoss(seed)
//    rewrites the base to one state a real disk could hold (power_loss_model.h):
//      - each unsynced write is kept, dropped, or torn into 512-byte sectors (aligned to file
//        offsets), a dropped sector sometimes holding garbage (SetTornSectorGarbage);
//      - each unsynced truncate is kept or dropped;
//      - every unsynced create is undone (the file disappears) and every unsynced delete is
//        undone (the file returns with its durable image plus a replay of its unsynced writes).
//    Strict POSIX: a file Sync makes the file's content and size durable, never its directory
//    entry; only SyncDirectory of the directory (DirName of the path, compared as spelled, so
//    spell paths consistently) does that. After the power loss the new state counts as durable,
//    and every File opened before it is dead: each call fails with FailedPrecondition ("file
//    handle invalidated by simulated power loss"). A dead File keeps its base File, and so its
//    base locks, until it is destroyed; the base files are deleted and recreated by the power
//    loss, so new Files never conflict with a dead File's locks on PosixFileSystem or
//    MemFileSystem. Files never opened or deleted through the wrapper are left untouched.
//    Shared-memory mappings are not modelled: a -shm file comes back with its last tracked
//    content (typically its content when first opened), which is a state a disk may hold.
// 2. Crash points. CrashAfterMutations(n): after n more mutating operations succeed, every
//    mutating operation fails with Internal ("simulated power loss: ...") without reaching the
//    base, until SimulatePowerLoss. Mutating operations, each counted once by mutation_count():
//    Write, Truncate, Sync, Delete, SyncDirectory, and an Open that creates a file. Reads, Size,
//    locks and opens of existing files still work.
// 3. Error injection. FailNth(op, n, err): the n-th operation of kind op counted from the call
//    fails with ErrnoToStatus(err, ...) — the code and message PosixFileSystem would return —
//    and is not applied; with persistent = true every later one fails too. ShortWriteNth: the
//    n-th write applies its first half, rounded down to a multiple of 512 bytes (maybe nothing),
//    then fails. A failed operation never counts as a mutation (a short write's applied part is
//    still tracked as unsynced data). A failed Sync leaves the file's changes unsynced.
//
// Counters: stats() counts like the other file systems (operations that succeed through the
// wrapper); the base counts its own I/O, including the reads that load a file's durable image
// and the rewrite done by SimulatePowerLoss.
//
// Thread-safety: thread-safe. Mutating operations are serialized by one mutex held across the
// base call, so the bookkeeping always matches the base; reads, Size, locks and mappings go to
// the base without it. The base must outlive the wrapper, and the wrapper its Files. Nothing
// else may change the tracked files in the base behind the wrapper's back.
#ifndef JOURNALKV_VFS_FAULT_INJECTING_FS_H_
#define JOURNALKV_VFS_FAULT_INJECTING_FS_H_

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/mutex.h"
#include "vfs/vfs.h"

namespace journalkv::vfs {

// The kinds of operation FailNth can target and op_count counts.
enum class FaultOp { kRead, kWrite, kSync, kTruncate, kCreate, kDelete, kDirSync };
inline constexpr int kNumFaultOps = 7;

class FaultInjectingFile;  // fault_injecting_fs.cc

class FaultInjectingFileSystem : public FileSystem {
 public:
  explicit FaultInjectingFileSystem(FileSystem* base);  // base is not owned
  ~FaultInjectingFileSystem() override;
  FaultInjectingFileSystem(const FaultInjectingFileSystem&) = delete;
  FaultInjectingFileSystem& operator=(const FaultInjectingFileSystem&) = delete;

  absl::StatusOr<std::unique_ptr<File>> Open(const std::string& path,
                                             const OpenOptions& options) override;
  absl::Status Delete(const std::string& path) override;
  absl::StatusOr<bool> Exists(const std::string& path) override;
  absl::StatusOr<bool> IsDirectory(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir_path) override;

  // Power loss. Rewrites every tracked file in the base to a state drawn with
  // std::mt19937_64(seed) (the same seed and history give the same state), kills every open
  // File, and clears the crash point. Errors come from the base.
  absl::Status SimulatePowerLoss(uint64_t seed);
  // Whether a dropped sector of a torn write may hold random bytes (default true). With false,
  // every sector of a torn write holds either its old or its new bytes.
  void SetTornSectorGarbage(bool enabled);

  uint64_t mutation_count() const;
  uint64_t sync_count() const;  // successful file syncs and directory syncs
  // mutation_count() right after each successful Sync or SyncDirectory, in order.
  std::vector<uint64_t> sync_mutation_indexes() const;

  // Crash point: lets n more mutating operations succeed, then fails all of them.
  void CrashAfterMutations(uint64_t n);

  // Error injection; n is 1-based and counted from this call (0 is taken as 1).
  void FailNth(FaultOp op, uint64_t n, int err, bool persistent = false);
  void ShortWriteNth(uint64_t n, int err = ENOSPC);
  void ClearFaults();  // drops every FailNth and ShortWriteNth rule
  // Operations of kind op attempted so far, including those an injected fault failed (not those
  // refused earlier: on a dead or read-only File, or after a crash point).
  uint64_t op_count(FaultOp op) const;

 private:
  friend class FaultInjectingFile;
  struct Inode;  // the tracked state of one file: durable image and unsynced changes

  // An unsynced create or delete of a directory entry.
  struct EntryOp {
    enum class Kind { kCreate, kDelete };
    Kind kind;
    std::string path;
    std::shared_ptr<Inode> inode;  // kDelete: the file the name pointed to
  };

  struct FaultRule {
    FaultOp op;
    uint64_t nth;  // fires when op_counts_[op] reaches nth (and beyond when persistent)
    int err;
    bool persistent;
    bool short_write;
  };

  // The File operations that touch the model; FaultInjectingFile forwards to them.
  absl::Status FileRead(FaultInjectingFile& file, uint64_t offset, absl::Span<uint8_t> out);
  absl::Status FileWrite(FaultInjectingFile& file, uint64_t offset, absl::Span<const uint8_t> data);
  absl::Status FileTruncate(FaultInjectingFile& file, uint64_t size_bytes);
  absl::Status FileSync(FaultInjectingFile& file, SyncKind kind);
  absl::Status CheckAlive(const FaultInjectingFile& file) const;

  absl::Status CheckNotCrashed(absl::string_view context) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts one operation of kind op; returns the fault rule it triggers, if any.
  std::optional<FaultRule> CountOp(FaultOp op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddFaultRule(const FaultRule& rule);
  void CountSync() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::StatusOr<std::unique_ptr<File>> CreateFile(const std::string& path,
                                                   const OpenOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The tracked file path names, loaded from the base when untracked; nullptr when the base has
  // no regular file there.
  absl::StatusOr<std::shared_ptr<Inode>> InodeOf(const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::unique_ptr<File> Wrap(std::unique_ptr<File> base_file, std::shared_ptr<Inode> inode,
                             const OpenOptions& options);

  // The names the directories hold after a power loss: every unsynced entry change undone.
  std::map<std::string, std::shared_ptr<Inode>> NamesAfterPowerLoss() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RewriteBase(const std::map<std::string, std::vector<uint8_t>>& images)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const base_;
  // Bumped by every SimulatePowerLoss; a File opened in an older generation is dead.
  std::atomic<uint64_t> generation_{0};

  mutable base::Mutex mu_;
  // Tracked files by their current name, and the unsynced entry changes per directory.
  std::map<std::string, std::shared_ptr<Inode>> names_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<EntryOp>> dir_ops_ ABSL_GUARDED_BY(mu_);
  bool garbage_in_torn_sectors_ ABSL_GUARDED_BY(mu_) = true;
  uint64_t mutation_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> sync_mutation_indexes_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> crash_at_mutation_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, kNumFaultOps> op_counts_ ABSL_GUARDED_BY(mu_) = {};
  std::vector<FaultRule> fault_rules_ ABSL_GUARDED_BY(mu_);
};

}  // namespace journalkv::vfs

#endif  // JOURNALKV_VFS_FAULT_INJECTING_FS_H_
