// The multidb workloads (multidb2, multidb4, multidb8): transactions across N database files,
// the founding paper's multi-database experiment (MFAW: one atomic commit of several SQLite
// databases on F2FS, against SQLite's super-journal on ext4 and WAL on F2FS; README,
// "Transactions across databases").
//
// Each measured operation is one write transaction across all N databases of the case
// (EngineInfo::open_across: journalkv's BeginWriteAcross, SQLite's ATTACH): into each
// database it inserts --puts-per-db new keys of --value-size bytes (the same keys in every
// database, new ones in each transaction), then commits once. So ops = commits = transactions
// across the databases, and every per-op figure (flushes, bytes, device bytes) is per
// transaction across them.
//
// After the measured phase, outside the clock, the count check: every database must hold
// exactly the keys of every committed transaction (CountIn), and each of those keys (GetIn);
// otherwise the case fails with DataLoss naming the database and the first missing key.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "bench/harness.h"

namespace journalkv::bench {
namespace {

constexpr absl::string_view kPrefix = "multidb";

// The count check: database i holds exactly the keys [0, n) and each of them.
absl::Status CheckEveryDatabase(Ctx& c, int databases, uint64_t n) {
  for (int i = 0; i < databases; ++i) {
    JKV_ASSIGN_OR_RETURN(const uint64_t count, c.session.CountIn(i));
    if (count != n) {
      return absl::DataLossError(absl::StrCat(c.result.spec.workload, " count check: database ",
                                              i, " holds ", count, " keys, ", n,
                                              " were committed into it"));
    }
    for (uint64_t k = 0; k < n; ++k) {
      JKV_ASSIGN_OR_RETURN(const std::optional<std::string> v, c.session.GetIn(i, c.Key(k)));
      if (!v.has_value() || v->size() != c.params.value_size) {
        return absl::DataLossError(absl::StrCat(c.result.spec.workload,
                                                " count check: database ", i, " lacks key ",
                                                c.Key(k), " (key ", k, " of ", n, ")"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status MultiDb(Ctx& c, int databases) {
  const uint64_t per_db = c.params.puts_per_db;
  c.result.databases = databases;
  std::vector<std::string> keys(per_db);
  StartPhase(c, c.params.num);
  for (uint64_t t = 0; t < c.params.num; ++t) {
    for (uint64_t j = 0; j < per_db; ++j) keys[j] = c.Key(t * per_db + j);
    JKV_ASSIGN_OR_RETURN(uint64_t ns, TimedWrite(c.session, [&](Session& s) {
                           for (int i = 0; i < databases; ++i) {
                             for (const std::string& key : keys) {
                               JKV_RETURN_IF_ERROR(s.PutIn(i, key, c.values.Next(c.rng)));
                             }
                           }
                           return absl::OkStatus();
                         }));
    RecordOp(c, ns);
    AfterCommit(c);
  }
  EndPhase(c);
  return CheckEveryDatabase(c, databases, c.params.num * per_db);
}

WorkloadEntry Entry(int databases) {
  return {{absl::StrCat(kPrefix, databases),
           absl::StrCat("N transactions each across ", databases,
                        " database files: --puts-per-db new keys of --value-size bytes into "
                        "each, one commit (journalkv BeginWriteAcross, SQLite ATTACH; not "
                        "LMDB); then a check that every database holds every committed key"),
           /*by_default=*/false},
          [databases](Ctx& c) { return MultiDb(c, databases); }};
}

}  // namespace

int AcrossDatabases(absl::string_view workload) {
  int n = 0;
  if (!absl::ConsumePrefix(&workload, kPrefix) || !absl::SimpleAtoi(workload, &n)) return 0;
  return n;
}

std::vector<WorkloadEntry> MultiDbEntries() { return {Entry(2), Entry(4), Entry(8)}; }

}  // namespace journalkv::bench
