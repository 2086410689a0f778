// Makes the traces shipped in bench/traces/ (their README says what each holds): three small
// applications run through journalkv's C++ API with recording on (Options::record_path,
// synthetic values, a fixed seed for the synthetic keys and for every choice the programs
// make). The time offsets are the clock's when it ran: a second run gives the same records
// with slightly different times.
//
//   ./bazelw run //bench:make_traces                       # writes bench/traces/*.jkvtrace
//   ./bazelw run //bench:make_traces -- --out=DIR          # elsewhere
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "bench/random.h"
#include "bench/zipfian.h"
#include "engine/db.h"

namespace journalkv::bench {
namespace {

constexpr uint64_t kSeed = 562;

void Sleep(uint64_t us) { std::this_thread::sleep_for(std::chrono::microseconds(us)); }

std::string Bytes(Rng& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng.Uniform(26));
  return s;
}

// Opens a fresh database in `scratch` recording to `trace`, runs `app`, closes both.
absl::Status Record(const std::string& scratch, const std::string& trace,
                    const std::function<absl::Status(Db&)>& app) {
  std::filesystem::remove_all(scratch);
  std::filesystem::create_directories(scratch);
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kOff;  // the recording's timing is the application's, not the disk's
  o.record_path = trace;
  o.record_values = TraceValues::kSynthetic;
  o.record_seed = kSeed;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(scratch + "/app.db", o));
  JKV_RETURN_IF_ERROR(app(*db));
  JKV_RETURN_IF_ERROR(db->Close());
  std::filesystem::remove_all(scratch);
  return absl::OkStatus();
}

// A test-results recorder, the shape of suite-562: 562 test runs, each one transaction of a
// summary row run/<n> and 5-20 rows run/<n>/test/<i> of 100 bytes; a run takes about 1 ms.
absl::Status TestResults(Db& db) {
  Rng rng(kSeed);
  for (int run = 0; run < 562; ++run) {
    Sleep(500 + rng.Uniform(1000));  // the tests run
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<WriteTransaction> w, db.BeginWrite());
    const std::string id = absl::StrFormat("run/%04d", run);
    const int tests = 5 + static_cast<int>(rng.Uniform(16));
    JKV_RETURN_IF_ERROR(w->Put(id, absl::StrCat("tests=", tests, " ", Bytes(rng, 40))));
    for (int i = 0; i < tests; ++i) {
      JKV_RETURN_IF_ERROR(w->Put(absl::StrFormat("%s/test/%02d", id, i), Bytes(rng, 100)));
    }
    JKV_RETURN_IF_ERROR(w->Commit());
  }
  return absl::OkStatus();
}

// A chat app's message store: 40 bursts of 3-30 messages (each its own commit, 20-400 bytes,
// in one of 4 rooms, a few ms apart) separated by idle gaps of 20-150 ms; after each burst
// the open room's newest 20 messages are read with a scan (keys sort newest first: the
// sequence number is stored as 10^9 minus it), and now and then one message is read or
// deleted. On the reader's thread, a second thread of the app reads the newest messages of
// every room once a burst.
absl::Status Chat(Db& db) {
  Rng rng(kSeed + 1);
  uint64_t seq[4] = {0, 0, 0, 0};
  const auto key = [](int room, uint64_t n) {
    return absl::StrFormat("chat/%d/%09d", room, 999999999 - n);
  };
  const auto newest = [&](int room) -> absl::Status {
    JKV_ASSIGN_OR_RETURN(std::unique_ptr<ReadTransaction> r, db.BeginRead());
    IteratorOptions bounds;
    bounds.lower_bound = absl::StrCat("chat/", room, "/");
    bounds.upper_bound = absl::StrCat("chat/", room, "0");
    return r->Scan("", 20, [](absl::string_view, absl::string_view) { return true; }, bounds)
        .status();
  };
  for (int burst = 0; burst < 40; ++burst) {
    const int room = static_cast<int>(rng.Uniform(4));
    const int messages = 3 + static_cast<int>(rng.Uniform(28));
    for (int m = 0; m < messages; ++m) {
      JKV_RETURN_IF_ERROR(db.Put(key(room, seq[room]++), Bytes(rng, 20 + rng.Uniform(381))));
      Sleep(200 + rng.Uniform(3000));
    }
    JKV_RETURN_IF_ERROR(newest(room));
    if (rng.Uniform(4) == 0 && seq[room] > 0) {
      JKV_RETURN_IF_ERROR(db.Get(key(room, rng.Uniform(seq[room]))).status());
    }
    if (rng.Uniform(10) == 0 && seq[room] > 0) {
      JKV_RETURN_IF_ERROR(db.Delete(key(room, rng.Uniform(seq[room]))).status());
    }
    std::thread other([&] {
      for (int r = 0; r < 4; ++r) newest(r).IgnoreError();
    });
    other.join();
    Sleep(20000 + rng.Uniform(130000));  // idle
  }
  return absl::OkStatus();
}

// A key-value cache: 500 entries filled in batches of 50, then 2 threads make 1500 requests
// each over 600 keys drawn zipfian (YCSB's 0.99; key cache/<hash of the rank>): 80% reads
// (a miss fills the entry), 15% overwrites, 5% deletes (invalidations); values 50-400 bytes.
absl::Status Cache(Db& db) {
  constexpr uint64_t kKeys = 600;
  const auto key = [](uint64_t rank) { return absl::StrFormat("cache/%016x", Mix(rank + 7)); };
  Rng fill(kSeed + 2);
  for (uint64_t i = 0; i < 500; i += 50) {
    WriteBatch batch;
    for (uint64_t j = i; j < i + 50; ++j) batch.Put(key(j), Bytes(fill, 50 + fill.Uniform(351)));
    JKV_RETURN_IF_ERROR(db.Write(batch));
  }
  std::vector<absl::Status> results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      Rng rng(kSeed + 10 + t);
      ZipfianGenerator zipf(kKeys);
      for (int op = 0; op < 1500 && results[t].ok(); ++op) {
        const std::string k = key(zipf.Next(rng));
        const uint64_t dice = rng.Uniform(100);
        absl::Status s;
        if (dice < 80) {
          absl::StatusOr<std::optional<std::string>> v = db.Get(k);
          s = v.status();
          if (s.ok() && !v->has_value()) s = db.Put(k, Bytes(rng, 50 + rng.Uniform(351)));
        } else if (dice < 95) {
          s = db.Put(k, Bytes(rng, 50 + rng.Uniform(351)));
        } else {
          s = db.Delete(k).status();
        }
        results[t] = s;
        if (op % 50 == 0) Sleep(1000);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& s : results) JKV_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  std::string out;
  if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY"); ws != nullptr) {
    out = absl::StrCat(ws, "/bench/traces");
  }
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--out=")) {
      out = std::string(arg);
    } else {
      std::fprintf(stderr, "usage: make_traces [--out=DIR]\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "make_traces: give --out=DIR (or run it with bazel run)\n");
    return 2;
  }
  std::filesystem::create_directories(out);
  const std::string scratch = out + "/.scratch";
  const std::vector<std::pair<std::string, std::function<absl::Status(Db&)>>> apps = {
      {"test-results", TestResults}, {"chat", Chat}, {"kv-cache", Cache}};
  for (const auto& [name, app] : apps) {
    const std::string path = absl::StrCat(out, "/", name, ".jkvtrace");
    absl::Status s = Record(scratch, path, app);
    if (!s.ok()) {
      std::fprintf(stderr, "make_traces: %s: %s\n", name.c_str(), s.ToString().c_str());
      return 1;
    }
    std::printf("%s: %ju bytes\n", path.c_str(),
                static_cast<uintmax_t>(std::filesystem::file_size(path)));
  }
  return 0;
}

}  // namespace
}  // namespace journalkv::bench

int main(int argc, char** argv) { return journalkv::bench::Main(argc, argv); }
