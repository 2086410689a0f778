// Entering and leaving the WAL family at open (journal_strategy.h, JournalFamilyOps): the steps
// of Pager::Open that only the WAL and WAL2 modes have.
#include <memory>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "pager/wal_strategy.h"

namespace journalkv::pager {
namespace {

class WalFamilyOps final : public JournalFamilyOps {
 public:
  absl::Status BeforeReadLocked(PagerCore&) const override { return absl::OkStatus(); }
  absl::Status RepairHeaderLocked(PagerCore& core, const absl::Status& failure) const override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_);
  absl::Status LeaveLocked(PagerCore& core) const override ABSL_EXCLUSIVE_LOCKS_REQUIRED(core.mu_);
  bool KeepsShared() const override { return true; }  // wal/wal_connection.h
  absl::StatusOr<std::unique_ptr<JournalStrategy>> Enter(PagerCore& core, JournalFamily family,
                                                         SetFamilyFn set_family) const override
      ABSL_LOCKS_EXCLUDED(core.mu_);
};

// A page 1 that does not decode may be a checkpoint's torn copy of a page the log still holds
// (C1: the log was durable before the checkpoint wrote it): take the page size from the log's
// header and read page 1 from the log. `failure` is returned when there is no valid log.
absl::Status WalFamilyOps::RepairHeaderLocked(PagerCore& core,
                                              const absl::Status& failure) const {
  // Either log may be the one with a header: in WAL2 a TRUNCATE leaves -wal empty (or a power
  // loss leaves it so) while -wal2 holds the frames, page 1 among them. (Looking at -wal only
  // as long as it existed left a WAL2 database whose page 1 a power loss tore during a
  // checkpoint unopenable: wal_crash_sweep_test, a recovery cut and a second power loss.)
  absl::StatusOr<wal::WalHeader> header = failure;
  for (const char* suffix : {"-wal", "-wal2"}) {
    absl::StatusOr<std::unique_ptr<vfs::File>> log =
        core.fs_->Open(core.path_ + suffix, {vfs::OpenMode::kReadOnly, vfs::FileKind::kWal});
    if (!log.ok()) continue;
    uint8_t bytes[wal::kWalHeaderSize];
    if (!(*log)->Read(0, absl::MakeSpan(bytes)).ok()) continue;
    header = wal::DecodeWalHeader(absl::MakeConstSpan(bytes));
    if (header.ok()) break;
  }
  if (!header.ok()) return failure;
  DbHeader placeholder;  // replaced by page 1 as the log has it at the first snapshot
  placeholder.page_size = header->page_size;
  placeholder.journal_family = FamilyOf(core.options_.journal_mode);
  core.header_ = placeholder;
  core.page_size_ = header->page_size;
  core.cache_.Clear();
  return absl::OkStatus();
}

// An opener in another mode of a database of a WAL family (wal or wal2, core.header_'s): when
// no other connection has it open, copy the whole log(s) into the database file and remove
// them and -shm; the opener's Enter then records its own family in page 1.
absl::Status WalFamilyOps::LeaveLocked(PagerCore& core) const {
  const JournalMode from =
      core.header_.journal_family == JournalFamily::kWal2 ? JournalMode::kWal2 : JournalMode::kWal;
  const absl::string_view from_name = JournalModeName(from);
  const std::string& path = core.path_;
  if (core.options_.access == AccessMode::kReadOnly) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the database is in ", from_name, " mode; open it in ", from_name,
        " mode to read it read-only"));
  }
  JKV_ASSIGN_OR_RETURN(bool reserved, core.lock_.TryReserved());
  bool exclusive = false;
  if (reserved) {
    JKV_ASSIGN_OR_RETURN(exclusive, core.lock_.TryExclusive());
  }
  if (!exclusive) {
    core.lock_.DowngradeToShared().IgnoreError();  // the error below is the one to report
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the database is in ", from_name, " mode and other connections have it open; "
        "it can switch to ", JournalModeName(core.options_.journal_mode),
        " mode only when no other connection is open"));
  }
  // Alone: every WAL connection holds SHARED for its whole life, so no process has the -shm
  // mapped. The log is copied back through a heap index (as with exclusive locking), which
  // also works where the file system has no shared memory (a database a WAL opener created
  // there before it failed is not stuck), and the -shm, if any, is removed after it.
  PagerOptions alone = core.options_;
  alone.exclusive_locking = true;
  alone.journal_mode = from;
  absl::StatusOr<std::unique_ptr<wal::WalConnection>> wal = wal::WalConnection::Open(
      core.fs_, path, core.db_file_.get(), core.page_size_, WalOptionsOf(alone), &core.mu_);
  absl::Status s = wal.ok() ? (*wal)->CloseLast() : wal.status();
  if (wal.ok()) wal->reset();
  if (s.ok()) {
    absl::StatusOr<bool> shm_left = core.fs_->Exists(path + "-shm");
    s = shm_left.ok() ? (*shm_left ? core.fs_->Delete(path + "-shm") : absl::OkStatus())
                      : shm_left.status();
  }
  if (!s.ok()) {
    core.lock_.DowngradeToShared().IgnoreError();
    return s;
  }
  JKV_ASSIGN_OR_RETURN(bool wal_left, core.fs_->Exists(path + "-wal"));
  if (!wal_left && from == JournalMode::kWal2) {
    JKV_ASSIGN_OR_RETURN(wal_left, core.fs_->Exists(path + "-wal2"));
  }
  if (wal_left) {
    core.lock_.DowngradeToShared().IgnoreError();
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": could not copy the whole log back; the database stays in ", from_name,
        " mode"));
  }
  JKV_RETURN_IF_ERROR(core.lock_.DowngradeToShared());
  core.cache_.Clear();
  JKV_ASSIGN_OR_RETURN(core.header_, core.ReadHeaderFromFile());
  return absl::OkStatus();
}

// Switches a database of the rollback family (or of the other WAL family, which LeaveLocked
// copied back) into this connection's, then joins the WAL protocol.
absl::StatusOr<std::unique_ptr<JournalStrategy>> WalFamilyOps::Enter(
    PagerCore& core, JournalFamily family, SetFamilyFn set_family) const {
  const JournalFamily target = FamilyOf(core.options_.journal_mode);
  const absl::string_view mode_name = JournalModeName(core.options_.journal_mode);
  const std::string& path = core.path_;
  if (family != target) {
    // No rollback-mode connection may be open through the switch (kRollbackOpenByte): it
    // would find its database in a WAL mode and fail every call.
    absl::StatusOr<bool> alone;
    {
      base::MutexLock lock(&core.mu_);
      alone = core.lock_.TrySwitchFromRollback();
    }
    JKV_RETURN_IF_ERROR(alone.status());
    if (!*alone) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": the database is in a rollback journal mode and other connections have it "
          "open; it can switch to ", mode_name, " mode only when no other connection is open"));
    }
  }
  const absl::Time switch_deadline = core.Deadline();
  while (family != target) {
    absl::Status s = set_family(target);
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat(path, ": cannot switch to ", mode_name,
                                                  " mode: ", s.message()));
    }
    wal::CallWalHook("open:family_switched");
    base::MutexLock lock(&core.mu_);
    JKV_RETURN_IF_ERROR(core.Retry(core.Deadline(), false,
                                   "another connection is writing the database",
                                   &DbLock::TryShared));
    core.opening_ = true;
    absl::Status recovered = core.RecoverLocked(core.Deadline());
    core.opening_ = false;
    JKV_RETURN_IF_ERROR(recovered);
    // The switch commits without SHARED held after it: a rollback-mode opener that came in
    // between may have switched the family back. Only under SHARED does it stay put.
    family = core.header_.journal_family;
    if (family != target) {
      JKV_RETURN_IF_ERROR(core.lock_.Release());
      if (absl::Now() >= switch_deadline) {
        return absl::UnavailableError(absl::StrCat(
            "busy: ", path, ": another connection keeps switching it to another journal "
            "mode"));
      }
    }
  }
  {
    base::MutexLock lock(&core.mu_);
    // Held only for the switch (a WAL connection holds SHARED instead); a no-op when this
    // connection did not switch.
    JKV_RETURN_IF_ERROR(core.lock_.ReleaseRollbackOpen());
  }
  if (core.options_.exclusive_locking) {
    base::MutexLock lock(&core.mu_);
    const absl::Time deadline = core.Deadline();
    JKV_RETURN_IF_ERROR(core.Retry(deadline, false, "another connection has the database open",
                                   &DbLock::TryReserved));
    JKV_RETURN_IF_ERROR(core.Retry(deadline, false, "another connection has the database open",
                                   &DbLock::TryExclusive));
  }
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WalStrategy> strategy, WalStrategy::Open(&core));
  return strategy;
}

}  // namespace

const JournalFamilyOps& WalFamily() {
  static const auto* const ops = new WalFamilyOps;
  return *ops;
}

}  // namespace journalkv::pager
