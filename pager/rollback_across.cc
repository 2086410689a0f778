// The rollback family's commit across databases: the super-journal protocol of
// super_journal.h (the specification, J1..J8), run over the participants' RollbackWriteTxn
// steps (rollback_txn.h). Recovery is RecoverJournal's (journal.cc).
#include <string>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "pager/across.h"
#include "pager/pager_core.h"
#include "pager/rollback_txn.h"
#include "pager/super_journal.h"
#include "vfs/sync.h"

namespace journalkv::pager {

class RollbackAcross {
 public:
  explicit RollbackAcross(std::vector<RollbackWriteTxn*> parts) : parts_(std::move(parts)) {
    for (RollbackWriteTxn* p : parts_) sync_ = sync_ || p->sync() != SyncLevel::kOff;
  }

  absl::Status Commit();

 private:
  vfs::FileSystem* fs() const { return parts_.front()->core_->fs_; }
  // J2: the super-journal written and synced, then its directory.
  absl::Status WriteSuper(const SuperJournal& super);
  // A failure after the locks: every participant undone in this process; the super-journal
  // removed once every one is restored durably (J6). Returns `cause`.
  absl::Status Fail(absl::Status cause);
  // Names the database in a step's error.
  static absl::Status Named(const RollbackWriteTxn& p, const absl::Status& s) {
    if (s.ok()) return s;
    absl::Status out(s.code(), absl::StrCat(p.path(), ": ", s.message()));
    s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
      out.SetPayload(url, payload);  // keeps the failed-sync tag (vfs::IsSyncFailure)
    });
    return out;
  }

  std::vector<RollbackWriteTxn*> parts_;
  bool sync_ = false;          // J2, J4: unless every participant is at sync OFF
  std::string super_path_;
  bool super_created_ = false;  // the super-journal may be on disk
};

absl::Status RollbackAcross::Commit() {
  // The super-journal is written through the first participant's file system object; the
  // others may have their own (each Db opens its own POSIX one): the files are the same.
  super_path_ = NewSuperJournalPath(parts_.front()->path());
  if (super_path_.size() > kMaxSuperPathSize) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
        parts_.front()->path(), ": the path is too long for a transaction across databases "
        "(its super-journal's path must fit in ", kMaxSuperPathSize, " bytes)")));
  }
  // 1. EXCLUSIVE on each, in the canonical order, before anything is written. Busy leaves
  // every transaction open and whole; those locked before give EXCLUSIVE back (RESERVED kept,
  // unless they spilled), so their readers go on while it waits for a retry.
  for (size_t i = 0; i < parts_.size(); ++i) {
    RollbackWriteTxn* p = parts_[i];
    absl::Status s = p->LockForCommit();
    if (!s.ok()) {
      if (!(p->commit_retryable_ && absl::IsUnavailable(s))) return Fail(Named(*p, s));
      for (size_t j = 0; j < i; ++j) {
        absl::Status back = parts_[j]->ReleaseExclusiveForRetry();
        if (!back.ok()) return Fail(Named(*parts_[j], back));
      }
      return Named(*p, s);
    }
  }
  // 2. The super-journal, durable before any journal names it (J2).
  SuperJournal super;
  super.nonce = NewSuperNonce();
  for (RollbackWriteTxn* p : parts_) super.paths.push_back(NameFrom(super_path_, p->path()));
  if (absl::Status s = WriteSuper(super); !s.ok()) return Fail(s);
  // 3. Each journal names it, with the originals and the seal, durable (J1, J3, I1).
  for (RollbackWriteTxn* p : parts_) {
    p->journal().NameSuper(super_path_, super.nonce);
    if (absl::Status s = p->FlushJournal(); !s.ok()) return Fail(Named(*p, s));
  }
  // 4. Each database's pages, durable (I2, J4).
  for (RollbackWriteTxn* p : parts_) {
    if (absl::Status s = p->WriteDatabase(); !s.ok()) return Fail(Named(*p, s));
  }
  // 5. The commit point (J4): the super-journal's removal, durable.
  absl::Status s = fs()->Delete(super_path_);
  if (!s.ok()) {
    return Fail(absl::Status(s.code(), absl::StrCat(super_path_, ": removing the super-journal "
                                                    "(the commit point): ", s.message())));
  }
  if (sync_) {
    // J4: the removal durable is the commit; unsynced, a power loss brings the super-journal
    // back and every participant rolls back an acknowledged commit.
    s = vfs::SyncDir(*fs(), super_path_, "J4 super-journal removal (commit point)");
    if (!s.ok()) {
      // The removal may or may not be durable: undo every participant durably, so that
      // either way none has the transaction (J6: the super-journal is gone already).
      return Fail(absl::Status(s.code(), absl::StrCat(super_path_, ": ", s.message())));
    }
  }
  // 6. Committed: each journal ends by its mode, each participant publishes (J5).
  for (RollbackWriteTxn* p : parts_) p->Publish();
  return absl::OkStatus();
}

absl::Status RollbackAcross::WriteSuper(const SuperJournal& super) {
  const std::string bytes = EncodeSuperJournal(super);
  absl::StatusOr<std::unique_ptr<vfs::File>> file =
      fs()->Open(super_path_, {vfs::OpenMode::kCreateExclusive, vfs::FileKind::kJournal});
  if (!file.ok()) {
    return absl::Status(file.status().code(),
                        absl::StrCat(super_path_, ": creating the super-journal: ",
                                     file.status().message()));
  }
  super_created_ = true;
  auto named = [&](absl::Status st) {
    if (st.ok()) return st;
    absl::Status out(st.code(), absl::StrCat(super_path_, ": ", st.message()));
    st.ForEachPayload(
        [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
    return out;
  };
  JKV_RETURN_IF_ERROR(named((*file)->Write(
      0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))));
  if (sync_) {
    // J2: the super-journal whole on disk before a journal names it.
    JKV_RETURN_IF_ERROR(named(vfs::SyncFile(**file, vfs::SyncKind::kAll, "J2 super-journal")));
    // J2: and its name, or a power loss removes it while journals name it (then read as
    // committed: J5) and half the participants keep the transaction.
    JKV_RETURN_IF_ERROR(
        named(vfs::SyncDir(*fs(), super_path_, "J2 super-journal directory")));
  }
  return absl::OkStatus();
}

absl::Status RollbackAcross::Fail(absl::Status cause) {
  bool all_restored = true;
  for (RollbackWriteTxn* p : parts_) {
    if (p->finished()) continue;
    // Journal::RollBack: the originals restored and the database synced (I3), then the
    // journal ended; on failure the journal is left (unsealed, I12) for the next opener.
    if (!p->Rollback().ok()) all_restored = false;
    if (vfs::IsSyncFailure(cause)) {
      base::MutexLock lock(&p->core_->mu_);
      p->core_->SetStickyError(cause);  // I7
    }
  }
  if (super_created_ && all_restored) {
    // J6: every participant restored durably; a journal that a power loss brings back finds
    // the super-journal gone and is discarded over its restored database. A removal that
    // fails leaves it: the journals still naming it roll back again (idempotent).
    absl::Status s = fs()->Delete(super_path_);
    if (s.ok() && sync_) {
      // J6: the undone transaction's super-journal gone durably (else garbage, J8).
      vfs::SyncDir(*fs(), super_path_, "J6 super-journal removal (undo)").IgnoreError();
    }
  }
  return cause;
}

absl::Status AcrossCommit::Rollback(absl::Span<WriteTxn* const> txns) {
  std::vector<RollbackWriteTxn*> parts;
  for (WriteTxn* txn : txns) {
    auto* p = dynamic_cast<RollbackWriteTxn*>(txn);
    if (p == nullptr) {
      for (WriteTxn* t : txns) t->Rollback().IgnoreError();
      return absl::InternalError(
          absl::StrCat(txn->path(), ": not a rollback journal transaction"));
    }
    parts.push_back(p);
  }
  return RollbackAcross(std::move(parts)).Commit();
}

}  // namespace journalkv::pager
