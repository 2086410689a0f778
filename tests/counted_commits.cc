#include "tests/counted_commits.h"

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace journalkv::counted {
namespace {

constexpr char kCounter[] = "counter";
constexpr char kLast[] = "last";
std::string OwnKey(int id) { return absl::StrFormat("own-%07d", id); }

}  // namespace

absl::Status CountedCommit(Db& db, int id, int* pred) {
  *pred = -1;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> txn, db.BeginWrite());
  JKV_ASSIGN_OR_RETURN(std::optional<std::string> counter, txn->Get(kCounter));
  JKV_ASSIGN_OR_RETURN(std::optional<std::string> last, txn->Get(kLast));
  int c = 0, p = 0;
  if (counter.has_value() && !absl::SimpleAtoi(*counter, &c)) {
    return absl::DataLossError(absl::StrCat("counter reads '", *counter, "'"));
  }
  if (last.has_value() && !absl::SimpleAtoi(*last, &p)) {
    return absl::DataLossError(absl::StrCat("last reads '", *last, "'"));
  }
  *pred = p;
  JKV_RETURN_IF_ERROR(txn->Put(kCounter, absl::StrCat(c + 1)));
  JKV_RETURN_IF_ERROR(txn->Put(kLast, absl::StrCat(id)));
  // A value long enough that the own keys fill leaves and split them: commits write several
  // pages (the leaf of "counter" and "last", an own key's leaf, sometimes a split's).
  JKV_RETURN_IF_ERROR(txn->Put(OwnKey(id), absl::StrCat(p, "/", std::string(150, '.'))));
  return txn->Commit();
}

Contents Read(ReadTransaction& r) {
  Contents c;
  auto number = [&](const char* key, int* out) -> bool {
    absl::StatusOr<std::optional<std::string>> v = r.Get(key);
    if (!v.ok()) {
      c.error = v.status().ToString();
      return false;
    }
    if (v->has_value() && !absl::SimpleAtoi(**v, out)) {
      c.error = absl::StrCat(key, " reads '", **v, "'");
      return false;
    }
    return true;
  };
  if (!number(kCounter, &c.counter) || !number(kLast, &c.last)) return c;
  const auto visit = [&](absl::string_view k, absl::string_view v) {
    int id = 0, pred = 0;
    const size_t slash = v.find('/');
    if (!absl::SimpleAtoi(k.substr(4), &id) || slash == absl::string_view::npos ||
        !absl::SimpleAtoi(v.substr(0, slash), &pred)) {
      c.error = absl::StrCat("own key ", k, " reads '", v.substr(0, 20), "'");
      return false;
    }
    c.own[id] = pred;
    return true;
  };
  absl::StatusOr<uint64_t> n = r.Scan("own-", UINT64_MAX, visit);
  if (!n.ok() && c.error.empty()) c.error = n.status().ToString();
  return c;
}

Contents Read(Db& db) {
  absl::StatusOr<std::unique_ptr<ReadTransaction>> r = db.BeginRead();
  if (!r.ok()) {
    Contents c;
    c.error = r.status().ToString();
    return c;
  }
  return Read(**r);
}

std::string Whole(const Contents& c) {
  if (!c.error.empty()) return absl::StrCat("unreadable: ", c.error);
  if (c.counter != static_cast<int>(c.own.size())) {
    return absl::StrCat("counter ", c.counter, " but ", c.own.size(),
                        " own keys (a transaction partly present, or one built on a commit "
                        "that is not there)");
  }
  size_t chained = 0;
  for (int id = c.last; id != 0; ++chained) {
    auto it = c.own.find(id);
    if (it == c.own.end() || chained > c.own.size()) {
      return absl::StrCat("the chain from last = ", c.last, " breaks at ", id,
                          " (a commit built on one that is not there)");
    }
    id = it->second;
  }
  if (chained != c.own.size()) {
    return absl::StrCat(c.own.size() - chained, " own keys off the chain from last");
  }
  return "";
}

Options BaseOptions(vfs::FileSystem* fs, JournalMode mode, SyncLevel sync) {
  Options o;
  o.journal_mode = mode;
  o.file_system = fs;
  o.sync = sync;
  o.page_size = 1024;
  o.busy_timeout = absl::Seconds(5);
  return o;
}

}  // namespace journalkv::counted
