#include "bench/ycsb.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "bench/harness.h"
#include "bench/zipfian.h"

namespace journalkv::bench {
namespace {

enum class Op { kRead, kUpdate, kInsert, kScan, kReadModifyWrite };

// YcsbOps()'s names, by Op.
const char* OpName(Op op) {
  switch (op) {
    case Op::kRead:
      return "read";
    case Op::kUpdate:
      return "update";
    case Op::kInsert:
      return "insert";
    case Op::kScan:
      return "scan";
    case Op::kReadModifyWrite:
      return "rmw";
  }
  return "?";
}

// E's scan lengths are uniform in [1, kMaxScanLength] (workloade's maxscanlength).
constexpr uint64_t kMaxScanLength = 100;
// A record is this many fields; read-modify-write changes one of them.
constexpr uint32_t kFieldsPerRecord = 10;

struct WorkloadMix {
  char letter;
  double read = 0, update = 0, insert = 0, scan = 0, rmw = 0;
  bool latest = false;  // the "latest" distribution instead of zipfian
  const char* help;
};

const std::vector<WorkloadMix>& Mixes() {
  static const auto* const mixes = new std::vector<WorkloadMix>{
      {.letter = 'a', .read = 0.5, .update = 0.5,
       .help = "YCSB A, update heavy: 50% reads, 50% updates (one autocommit put of a whole "
               "value), zipfian"},
      {.letter = 'b', .read = 0.95, .update = 0.05,
       .help = "YCSB B, read mostly: 95% reads, 5% updates, zipfian"},
      {.letter = 'c', .read = 1.0, .help = "YCSB C, read only: 100% reads, zipfian"},
      {.letter = 'd', .read = 0.95, .insert = 0.05, .latest = true,
       .help = "YCSB D, read latest: 95% reads, 5% inserts of new records; reads favour the "
               "newest records (latest)"},
      {.letter = 'e', .insert = 0.05, .scan = 0.95,
       .help = "YCSB E, short ranges: 95% scans of 1-100 pairs (uniform) from a zipfian "
               "record, 5% inserts"},
      {.letter = 'f', .read = 0.5, .rmw = 0.5,
       .help = "YCSB F, read-modify-write: 50% reads, 50% write transactions that read a "
               "record and write it back with one of its 10 fields changed; zipfian"},
  };
  return *mixes;
}

Op Draw(const WorkloadMix& m, Rng& rng) {
  double u = rng.Double();
  if ((u -= m.read) < 0) return Op::kRead;
  if ((u -= m.update) < 0) return Op::kUpdate;
  if ((u -= m.insert) < 0) return Op::kInsert;
  if ((u -= m.scan) < 0) return Op::kScan;
  return Op::kReadModifyWrite;
}

// Which existing record an operation touches: YCSB's request distribution over the records
// inserted so far, [0, inserted).
class RecordChooser {
 public:
  RecordChooser(const WorkloadMix& m, uint64_t records, uint64_t operations) : latest_(m.latest) {
    if (latest_) {
      latest_gen_.emplace(records);
    } else {
      // YCSB's CoreWorkload sizes its zipfian for twice the expected inserts, so that records
      // inserted during the run become popular too.
      const auto expected = static_cast<uint64_t>(std::ceil(m.insert * operations));
      zipfian_.emplace(records + 2 * expected);
    }
  }

  uint64_t Next(Rng& rng, uint64_t inserted) {
    if (latest_) return latest_gen_->Next(rng);
    // Redrawing costs little: the records not inserted yet are the range's last 2 x expected
    // inserts at most, and the scramble spreads the popular ranks over the whole range.
    while (true) {
      const uint64_t item = zipfian_->Next(rng);
      if (item < inserted) return item;
    }
  }

  void Inserted(uint64_t inserted) {
    if (latest_) latest_gen_->Grow(inserted);
  }

 private:
  const bool latest_;
  std::optional<LatestGenerator> latest_gen_;
  std::optional<ScrambledZipfianGenerator> zipfian_;
};

// The record with one field (a tenth of the value, at least a byte) replaced by `fresh`'s
// bytes at the same place; a whole fresh value if the old one is not a value of this run.
std::string ModifiedField(const std::string& old, absl::string_view fresh, uint64_t field) {
  if (old.size() != fresh.size()) return std::string(fresh);
  const size_t width = std::max<size_t>(1, old.size() / kFieldsPerRecord);
  const size_t at = std::min<size_t>(field * width, old.size() - width);
  std::string value = old;
  value.replace(at, width, fresh.data() + at, width);
  return value;
}

absl::Status Missing(const WorkloadMix& m, absl::string_view key) {
  return absl::InternalError(absl::StrCat("ycsb-", std::string(1, m.letter), ": record ", key,
                                          " was inserted but is missing"));
}

absl::Status RunMix(Ctx& c, const WorkloadMix& m) {
  const uint64_t records = std::max<uint64_t>(1, c.params.records);
  const uint64_t operations = c.params.operations;
  JKV_RETURN_IF_ERROR(Load(c, records));
  RecordChooser chooser(m, records, operations);
  uint64_t inserted = records;
  StartPhase(c, operations);
  for (uint64_t i = 0; i < operations; ++i) {
    const Op op = Draw(m, c.rng);
    uint64_t ns = 0;
    bool commits = true;
    switch (op) {
      case Op::kRead: {
        const std::string key = c.Key(chooser.Next(c.rng, inserted));
        const uint64_t t0 = NowNs();
        JKV_ASSIGN_OR_RETURN(std::optional<std::string> value, c.session.Get(key));
        ns = NowNs() - t0;
        if (!value.has_value()) return Missing(m, key);
        commits = false;
        break;
      }
      case Op::kUpdate: {
        const std::string key = c.Key(chooser.Next(c.rng, inserted));
        JKV_ASSIGN_OR_RETURN(ns, TimedPutCommit(c.session, key, c.values.Next(c.rng)));
        break;
      }
      case Op::kInsert: {
        JKV_ASSIGN_OR_RETURN(ns,
                             TimedPutCommit(c.session, c.Key(inserted), c.values.Next(c.rng)));
        chooser.Inserted(++inserted);
        break;
      }
      case Op::kScan: {
        const std::string from = c.Key(chooser.Next(c.rng, inserted));
        const uint64_t length = 1 + c.rng.Uniform(kMaxScanLength);
        uint64_t bytes = 0;
        const uint64_t t0 = NowNs();
        JKV_ASSIGN_OR_RETURN(uint64_t n, c.session.Scan(from, length,
                                                        [&](absl::string_view k,
                                                            absl::string_view v) {
                                                          bytes += k.size() + v.size();
                                                        }));
        ns = NowNs() - t0;
        if (n == 0 || bytes == 0) return Missing(m, from);  // the scan starts at a record
        c.result.items += n;
        commits = false;
        break;
      }
      case Op::kReadModifyWrite: {
        const std::string key = c.Key(chooser.Next(c.rng, inserted));
        // Drawn before the read, so that every engine draws the same numbers.
        const absl::string_view fresh = c.values.Next(c.rng);
        const uint64_t field = c.rng.Uniform(kFieldsPerRecord);
        JKV_ASSIGN_OR_RETURN(ns, TimedWrite(c.session, [&](Session& s) -> absl::Status {
                               JKV_ASSIGN_OR_RETURN(std::optional<std::string> old, s.Get(key));
                               if (!old.has_value()) return Missing(m, key);
                               return s.Put(key, ModifiedField(*old, fresh, field));
                             }));
        break;
      }
    }
    RecordOp(c, ns);
    c.result.op_latency[OpName(op)].Record(ns);
    if (commits) AfterCommit(c);
  }
  EndPhase(c);
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& YcsbOps() {
  static const auto* const ops = new std::vector<std::string>{"read", "update", "insert", "scan",
                                                              "rmw"};
  return *ops;
}

std::string YcsbWorkloadName(absl::string_view letter) {
  if (letter.size() != 1) return "";
  const char l = absl::ascii_tolower(static_cast<unsigned char>(letter[0]));
  for (const WorkloadMix& m : Mixes()) {
    if (m.letter == l) return absl::StrCat("ycsb-", std::string(1, l));
  }
  return "";
}

bool IsYcsbWorkload(absl::string_view workload) {
  for (const WorkloadMix& m : Mixes()) {
    if (workload == absl::StrCat("ycsb-", std::string(1, m.letter))) return true;
  }
  return false;
}

std::vector<WorkloadEntry> YcsbEntries() {
  std::vector<WorkloadEntry> entries;
  for (const WorkloadMix& m : Mixes()) {
    entries.push_back({{absl::StrCat("ycsb-", std::string(1, m.letter)),
                        m.help,
                        /*by_default=*/false},
                       [&m](Ctx& c) { return RunMix(c, m); }});
  }
  return entries;
}

}  // namespace journalkv::bench
