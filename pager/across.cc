// A commit across databases (across.h): the checks, the dispatch to the participants' family,
// and the WAL families' commit, each participant in turn.
#include "pager/across.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "vfs/sync.h"
#include "vfs/vfs.h"

namespace journalkv::pager {
namespace {

std::string Describe(const WriteTxn& txn) {
  return absl::StrCat(txn.path(), " (", JournalModeName(txn.journal_mode()), ")");
}

// Rolls back every transaction of `txns` still open (their errors are the pagers' sticky ones;
// the caller's error is the one to report).
void RollBackOpen(absl::Span<WriteTxn* const> txns) {
  for (WriteTxn* txn : txns) {
    if (!txn->finished()) txn->Rollback().IgnoreError();
  }
}

}  // namespace

std::string NameFrom(const std::string& from, const std::string& to) {
  if (vfs::DirName(from) != vfs::DirName(to)) return to;
  const size_t slash = to.rfind('/');
  return slash == std::string::npos ? to : to.substr(slash + 1);
}

std::string PathFrom(const std::string& from, const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const size_t slash = from.rfind('/');
  return slash == std::string::npos ? name : absl::StrCat(from.substr(0, slash + 1), name);
}

absl::Status CheckAcross(absl::Span<WriteTxn* const> txns) {
  if (txns.empty()) {
    return absl::InvalidArgumentError("a transaction across databases needs at least one");
  }
  for (WriteTxn* txn : txns) {
    const JournalMode mode = txn->journal_mode();
    if (mode == JournalMode::kMemory || mode == JournalMode::kOff) {
      return absl::FailedPreconditionError(absl::StrCat(
          Describe(*txn), ": journal mode ", JournalModeName(mode),
          " keeps no journal on disk, so a transaction across databases could not be made "
          "atomic (use delete, truncate or persist)"));
    }
  }
  auto group = [](JournalFamily f) {
    return f == JournalFamily::kWal2 ? JournalFamily::kWal : f;  // WAL and WAL2 mix
  };
  for (WriteTxn* txn : txns) {
    if (group(txn->family()) != group(txns.front()->family())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a transaction across databases needs every database in the same journal family "
          "(rollback: delete, truncate, persist; wal and wal2; atomic): ",
          Describe(*txns.front()), " is in the ", JournalFamilyName(txns.front()->family()),
          " family and ", Describe(*txn), " in the ", JournalFamilyName(txn->family()),
          " family, and no protocol makes a commit atomic across both"));
    }
  }
  return absl::OkStatus();
}

absl::Status CommitAcross(absl::Span<WriteTxn* const> txns) {
  JKV_RETURN_IF_ERROR(CheckAcross(txns));
  // Commit's first steps for each (an unchanged participant ends here: it has nothing to add).
  std::vector<WriteTxn*> go;
  for (size_t i = 0; i < txns.size(); ++i) {
    absl::StatusOr<bool> go_on = txns[i]->StartCommit();
    if (!go_on.ok()) {
      RollBackOpen(txns);
      return go_on.status();
    }
    if (*go_on) go.push_back(txns[i]);
  }
  if (go.empty()) return absl::OkStatus();
  if (go.size() == 1) {
    WriteTxn& txn = *go.front();
    return txn.FinishCommit(txn.CommitPages());
  }
  switch (go.front()->family()) {
    case JournalFamily::kRollback:
      return AcrossCommit::Rollback(go);
    case JournalFamily::kAtomic:
      return AcrossCommit::Atomic(go);
    case JournalFamily::kWal:
    case JournalFamily::kWal2:
      return AcrossCommit::EachInTurn(go);
  }
  return absl::InternalError("unknown journal family");
}

absl::Status AcrossCommit::EachInTurn(absl::Span<WriteTxn* const> txns) {
  std::vector<std::string> committed;
  for (size_t i = 0; i < txns.size(); ++i) {
    WriteTxn& txn = *txns[i];
    absl::Status s = txn.CommitPages();
    if (!s.ok() && Retryable(txn) && !committed.empty()) {
      // A later participant is not kept open once earlier ones committed: the transaction
      // could not be retried as a whole.
      txn.commit_retryable_ = false;
    }
    s = txn.FinishCommit(std::move(s));
    if (!s.ok()) {
      if (!txn.finished()) return s;  // the first, busy and retryable: every one still open
      RollBackOpen(txns.subspan(i + 1));
      if (committed.empty()) return s;
      return absl::Status(
          s.code(),
          absl::StrCat(s.message(), "; a transaction across databases in the WAL family is "
                       "atomic per database only: committed in ", absl::StrJoin(committed, ", "),
                       ", not in the others", vfs::IsSyncFailure(s) ? absl::StrCat(
                           " (", txn.path(), " failed its sync: after a crash it may hold the "
                           "transaction, whole, as any commit whose sync failed)") : ""));
    }
    committed.push_back(txn.path());
  }
  return absl::OkStatus();
}

}  // namespace journalkv::pager
