// Db::Backup: a consistent copy of one snapshot, written beside the destination under a
// temporary name and given the destination's name only once it is whole and durable.
//
// Crash states (tests/backup_test.cc sweeps them):
//   B1. Until the rename is durable, DEST does not exist (or, after a power loss, never did):
//       the copy is built in DEST.jkv-backup and synced before the rename, because a rename
//       can reach the disk before the data it names (a power loss would then leave DEST with
//       pages missing).
//   B2. The directory is synced after the rename, so that a backup reported done stays done:
//       without it a power loss may undo the rename and DEST is gone.
//   B3. A crash before B2 leaves DEST.jkv-backup behind (whole or not). The next backup to the
//       same DEST refuses to start until it is removed, naming it: the name may be another
//       backup's that is still running, and a backup never deletes what it did not create.
// Other processes (tests/backup_test.cc, BackupRaceTest):
//   B4. A backup never replaces a file. DEST is checked before the copy starts (a clear error
//       before any work), and the copy takes DEST's name only while it is free, checked and
//       renamed in one step (vfs::FileSystem::RenameNoReplace): another process may create DEST
//       while the copy is made. Then the backup fails with AlreadyExists naming DEST, deletes
//       only its own temporary files, and leaves DEST and the database as they are.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "engine/db.h"
#include "pager/db_format.h"
#include "pager/pager.h"
#include "wal/wal_connection.h"

namespace journalkv {
namespace {

// Side files a database may have. One left beside DEST would be taken as DEST's own when the
// backup is opened (a hot journal rolled back over it, a log replayed onto it).
constexpr const char* kSideSuffixes[] = {"-journal", "-wal", "-wal2", "-shm"};

// Pages written per call: large sequential writes, a bounded buffer.
constexpr uint32_t kPagesPerWrite = 64;

absl::Status RefuseDestination(vfs::FileSystem& fs, const std::string& dest,
                               const std::string& tmp) {
  JKV_ASSIGN_OR_RETURN(const bool exists, fs.Exists(dest));
  if (exists) {
    return absl::AlreadyExistsError(
        absl::StrCat("backup: ", dest, " exists (a backup never overwrites a file)"));
  }
  for (const char* suffix : kSideSuffixes) {
    const std::string side = dest + suffix;
    JKV_ASSIGN_OR_RETURN(const bool side_exists, fs.Exists(side));
    if (side_exists) {
      return absl::FailedPreconditionError(absl::StrCat(
          "backup: ", side, " exists and would be taken for the backup's own ",
          suffix + 1, " when it is opened; remove it first"));
    }
  }
  JKV_ASSIGN_OR_RETURN(const bool tmp_exists, fs.Exists(tmp));
  if (tmp_exists) {
    return absl::FailedPreconditionError(absl::StrCat(
        "backup: ", tmp, " exists: another backup to ", dest,
        " is running, or one was interrupted (then remove it)"));
  }
  return absl::OkStatus();
}

// Writes every page of `snap` into `out`, page 1 last (a copy torn before its end has no
// valid header), free leaves as blank sealed pages (their content is meaningless, and it
// need not even pass its checksum: pager/freelist.h).
absl::Status CopyPages(pager::ReadTxn& snap, vfs::File& out, uint64_t* bytes) {
  const pager::DbHeader& h = snap.header();
  const uint32_t page_size = h.page_size;
  absl::flat_hash_set<uint32_t> leaves;
  {
    JKV_ASSIGN_OR_RETURN(std::vector<PageNo> free_pages, snap.FreelistPages());
    for (PageNo p : free_pages) leaves.insert(p.value());
    for (PageNo p = h.freelist_head; p.value() != 0;) {
      leaves.erase(p.value());
      JKV_ASSIGN_OR_RETURN(pager::PageRef trunk, snap.Get(p));
      p = PageNo(base::DecodeFixed32(trunk.data().data()));
    }
  }
  std::vector<uint8_t> buffer(static_cast<size_t>(kPagesPerWrite) * page_size);
  for (uint32_t first = 2; first <= h.page_count; first += kPagesPerWrite) {
    const uint32_t last = std::min<uint64_t>(h.page_count, uint64_t{first} + kPagesPerWrite - 1);
    for (uint32_t n = first; n <= last; ++n) {
      absl::Span<uint8_t> page(buffer.data() + static_cast<size_t>(n - first) * page_size,
                               page_size);
      std::memset(page.data(), 0, page_size);
      if (!leaves.contains(n)) {
        JKV_ASSIGN_OR_RETURN(pager::PageRef ref, snap.Get(PageNo(n)));
        std::memcpy(page.data(), ref.data().data(), ref.data().size());
      }
      pager::SealPage(PageNo(n), page);
    }
    const size_t len = static_cast<size_t>(last - first + 1) * page_size;
    JKV_RETURN_IF_ERROR(out.Write(uint64_t{first - 1} * page_size,
                                  absl::Span<const uint8_t>(buffer.data(), len)));
  }
  std::vector<uint8_t> page1(page_size);
  pager::EncodeDbHeader(h, absl::MakeSpan(page1));
  pager::SealPage(PageNo(1), absl::MakeSpan(page1));
  JKV_RETURN_IF_ERROR(out.Write(0, page1));
  *bytes = uint64_t{h.page_count} * page_size;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BackupResult> Db::Backup(const std::string& dest, const BackupOptions& options) {
  if (pager_ == nullptr) return absl::FailedPreconditionError("database is closed");
  if (dest.empty()) return absl::InvalidArgumentError("backup: the destination path is empty");
  JKV_ASSIGN_OR_RETURN(const std::string resolved, fs_->ResolveLinks(dest));
  JKV_ASSIGN_OR_RETURN(const std::string self, fs_->ResolveLinks(path_));
  if (resolved == self) {
    return absl::InvalidArgumentError(
        absl::StrCat("backup: ", dest, " is the database itself"));
  }
  const std::string tmp = dest + kBackupTempSuffix;
  JKV_RETURN_IF_ERROR(RefuseDestination(*fs_, dest, tmp));

  // One snapshot for the whole copy: WAL readers pin it (writers and checkpoints go on), the
  // rollback modes hold SHARED (writers wait to commit, up to their busy timeout).
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> read, BeginRead());
  pager::ReadTxn& snap = *read->txn_;
  const pager::DbHeader header = snap.header();
  BackupResult result;
  result.change_counter = header.change_counter;
  result.source_pages = header.page_count;

  absl::Status s;
  bool created = false;  // tmp is ours to delete on failure (B3)
  if (!options.compact) {
    JKV_ASSIGN_OR_RETURN(
        std::unique_ptr<vfs::File> out,
        fs_->Open(tmp, vfs::OpenOptions{vfs::OpenMode::kCreateExclusive, vfs::FileKind::kOther}));
    created = true;
    s = CopyPages(snap, *out, &result.bytes);
    // B1: the copy is durable before its name is.
    if (s.ok()) s = out->Sync(vfs::SyncKind::kData);
    result.pages = header.page_count;
  } else {
    // The keys rewritten into a new database: no free pages. Filled without a journal or a
    // sync (the file is not DEST yet, B1), then given the source's journal family.
    std::unique_ptr<Iterator> it = read->NewIterator();
    ImageResult image;
    s = WriteImage(tmp, header.page_size, *it, &image);
    it.reset();
    created = image.created;
    result.keys = image.keys;
    result.pages = image.pages;
    if (s.ok() && header.journal_family != pager::JournalFamily::kRollback) {
      // Opening in the family switches it; the last close removes the log and -shm (W10).
      Options family;
      family.file_system = fs_;
      family.page_size = header.page_size;
      family.cache_pages = options_.cache_pages;
      family.sync = SyncLevel::kOff;
      family.create_if_missing = false;
      using pager::JournalFamily;
      family.journal_mode = header.journal_family == JournalFamily::kWal2     ? JournalMode::kWal2
                            : header.journal_family == JournalFamily::kAtomic ? JournalMode::kAtomic
                                                                              : JournalMode::kWal;
      // An atomic database's copy on a file system without atomic writes stays a rollback one.
      family.atomic_fallback = JournalMode::kDelete;
      absl::StatusOr<std::unique_ptr<Db>> switched = Db::Open(tmp, family);
      s = switched.ok() ? (*switched)->Close() : switched.status();
    }
    if (s.ok()) {
      absl::StatusOr<std::unique_ptr<vfs::File>> f =
          fs_->Open(tmp, vfs::OpenOptions{vfs::OpenMode::kReadWrite, vfs::FileKind::kOther});
      s = f.status();
      if (s.ok()) s = (*f)->Sync(vfs::SyncKind::kData);  // B1
      if (s.ok()) {
        absl::StatusOr<uint64_t> size = (*f)->Size();
        s = size.status();
        if (s.ok()) result.bytes = *size;
      }
    }
  }
  read.reset();  // the snapshot is copied: release it before the renames and syncs
  if (s.ok()) {
    // Test hook: the copy is whole and durable, DEST was missing at the start; another process
    // may create DEST now (tests/backup_test.cc).
    wal::CallWalHook("backup:renaming");
    s = fs_->RenameNoReplace(tmp, dest);  // B4
    if (absl::IsAlreadyExists(s)) {
      s = absl::AlreadyExistsError(absl::StrCat(
          dest, " was created while the copy was made (a backup never overwrites a file)"));
    }
  }
  if (s.ok()) s = fs_->SyncDirectory(vfs::DirName(dest));  // B2
  if (!s.ok()) {
    // Our own temporary files (created exclusively above) go; DEST was never touched (B4).
    if (created) {
      (void)fs_->Delete(tmp);
      for (const char* suffix : kSideSuffixes) (void)fs_->Delete(tmp + suffix);
    }
    return absl::Status(s.code(), absl::StrCat("backup to ", dest, ": ", s.message()));
  }
  return result;
}

}  // namespace journalkv
