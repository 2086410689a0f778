// A write transaction across several databases (across.h): the canonical order of the
// databases, their transactions, and the one commit (pager/across.h does the commit itself).
#include "engine/across.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "pager/across.h"
#include "pager/pager.h"

namespace journalkv {

absl::StatusOr<std::unique_ptr<WriteAcross>> BeginWriteAcross(absl::Span<Db* const> dbs) {
  if (dbs.empty()) {
    return absl::InvalidArgumentError("a transaction across databases needs at least one");
  }
  std::vector<std::pair<std::string, size_t>> ids;  // identity, index in dbs
  for (size_t i = 0; i < dbs.size(); ++i) {
    if (dbs[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("a transaction across databases: database ", i, " is null"));
    }
    if (dbs[i]->pager_ == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(dbs[i]->path(), ": database is closed"));
    }
    JKV_ASSIGN_OR_RETURN(std::string id, dbs[i]->pager_->file_identity());
    ids.emplace_back(std::move(id), i);
  }
  std::sort(ids.begin(), ids.end());
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i].first == ids[i - 1].first) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a transaction across databases names one database twice: ",
          dbs[ids[i - 1].second]->path(), " and ", dbs[ids[i].second]->path(),
          " are the same file"));
    }
  }
  std::unique_ptr<WriteAcross> across(new WriteAcross);
  across->dbs_.assign(dbs.begin(), dbs.end());
  across->txns_.resize(dbs.size());
  for (const auto& [id, i] : ids) {
    // Canonical order: the locks of overlapping transactions are taken in the same order.
    // On an error the transactions begun so far roll back as `across` goes.
    JKV_ASSIGN_OR_RETURN(across->txns_[i], dbs[i]->BeginWriteImpl(/*record=*/false));
    across->txns_[i]->across_ = true;
    across->order_.push_back(i);
  }
  std::vector<pager::WriteTxn*> txns;
  for (size_t i : across->order_) txns.push_back(across->txns_[i]->txn_.get());
  JKV_RETURN_IF_ERROR(pager::CheckAcross(txns));
  return across;
}

WriteAcross::~WriteAcross() {
  for (auto& txn : txns_) {
    if (txn != nullptr) txn->txn_->Rollback().IgnoreError();  // a failure is the pager's
  }
}

WriteTransaction* WriteAcross::For(const Db* db) {
  for (size_t i = 0; i < dbs_.size(); ++i) {
    if (dbs_[i] == db) return txns_[i].get();
  }
  return nullptr;
}

bool WriteAcross::open() const {
  if (ended_) return false;
  for (const auto& txn : txns_) {
    if (!txn->txn_->finished()) return true;
  }
  return false;
}

absl::Status WriteAcross::Commit() {
  if (ended_) {
    return absl::FailedPreconditionError("transaction across databases already ended");
  }
  for (size_t i : order_) {
    WriteTransaction& txn = *txns_[i];
    if (!txn.failed_.ok()) {
      const absl::Status failure =
          absl::Status(txn.failed_.code(), absl::StrCat(dbs_[i]->path(), ": ",
                                                        txn.CheckOpen().message()));
      Rollback().IgnoreError();  // the failure that forced it is what the caller needs
      return failure;
    }
  }
  std::vector<pager::WriteTxn*> txns;
  for (size_t i : order_) txns.push_back(txns_[i]->txn_.get());
  absl::Status s = pager::CommitAcross(txns);
  if (!s.ok() && open()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), "; the transaction is still open: "
                                                            "Commit again to retry, or Rollback"));
  }
  ended_ = true;
  for (size_t i : order_) {
    // The hooks of every database that committed (in WAL and WAL2 a failed commit may have
    // committed the databases before the one that failed).
    const pager::CommitRecord& record = txns_[i]->txn_->commit_record();
    if (s.ok() || record.pages > 0) dbs_[i]->CallHooks(record);
  }
  return s;
}

absl::Status WriteAcross::Rollback() {
  absl::Status first;
  for (size_t i : order_) {
    absl::Status s = txns_[i]->txn_->Rollback();
    if (first.ok() && !s.ok()) first = s;
  }
  ended_ = true;
  return first;
}

}  // namespace journalkv
