#include "bench/bench_config.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "bench/engine_adapter.h"
#include "bench/gaps.h"
#include "bench/ycsb.h"
#include "engine/options.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

struct FlagDef {
  const char* name;
  const char* arg;    // nullptr: a boolean flag
  const char* quick;  // the --quick preset's value, nullptr: unchanged
  const char* help;
};

// The --quick preset: every engine and mode (journalkv's wal2 included) at sync full and off,
// small sizes. Budget: a durable commit costs each mode 1 to 5 flushes, ~4 ms each on a busy
// virtual disk, so one commit in each of the 13 durable engine/mode pairs costs ~0.12 s;
// --quick makes ~450 such rounds (smalltxn, overwrite, writelat) plus 0.5 s of contention per
// pair.
constexpr char kQuickWorkloads[] =
    "smalltxn,bulkload,readrandom,scan,overwrite,contention,writelat";

const std::vector<FlagDef>& FlagDefs() {
  static const auto* const defs = new std::vector<FlagDef>{
      {"engines", "LIST", nullptr, "engines to run (all: journalkv,sqlite,lmdb)"},
      {"modes", "LIST", nullptr,
       "journaling modes (every mode of each engine); a bare name applies to every "
       "selected engine that has it, ENGINE:MODE to one engine"},
      {"sync", "LIST", "full,off", "sync levels off|normal|full|extra (full)"},
      {"checkpoint", "LIST", nullptr,
       "checkpoint policies for WAL modes (journalkv wal and wal2, sqlite wal): "
       "default|threshold:N|async:N/B|manual (journalkv: "
       "Options::checkpoint_policy, async:N/B with N < B wakes a background checkpointer at N "
       "frames and blocks commits at B; sqlite wal: threshold:N is wal_autocheckpoint=N, "
       "manual is 0; it has no async, so its cases of an async policy are skipped, with a "
       "note on stderr); each is its own case; ignored by other modes"},
      {"workloads", "LIST", kQuickWorkloads,
       "workloads (all but the YCSB ones, which --ycsb selects, and the multidb ones, run "
       "only when named; see below)"},
      {"ycsb", "LIST", nullptr,
       "YCSB core workloads to run, letters A-F or all (workloads ycsb-a .. ycsb-f below): each "
       "loads --records records, then measures --operations operations, each its own "
       "transaction, records chosen by YCSB's zipfian (0.99) or latest distribution; values "
       "are 1000 bytes (YCSB's 10 fields of 100) unless --value-size is given; without "
       "--workloads only these run, with it both"},
      {"records", "N", "1000", "YCSB: records loaded before the measured phase (100000)"},
      {"operations", "N", "500", "YCSB: operations measured (100000)"},
      {"num", "N", "150", "operations per workload, keys loaded before read workloads (10000)"},
      {"value-size", "N", nullptr,
       "value bytes (100; the YCSB workloads 1000); keys are always 16 bytes"},
      {"puts-per-db", "K", nullptr,
       "the multidb workloads: new keys inserted into each database per transaction (10)"},
      // bursty's flags (bursty.cc)
      {"burst", "N", nullptr, "bursty: commits per burst (10)"},
      {"gap", "DIST", nullptr,
       "bursty: the idle gap between bursts, in milliseconds, drawn with --seed: exp:MS "
       "(exponential, mean MS), fixed:MS or uniform:MIN-MAX (exp:20)"},
      {"seconds", "S", "0.5", "duration of contention in seconds (5)"},
      {"threads", "N", nullptr, "reader threads in contention (2)"},
      {"writers", "N", nullptr,
       "writers in contention (1; 0 measures the readers alone); more than one each commit "
       "read-modify-write transactions (read a key, write it anew) on the same 256 hot keys"},
      {"writer-keys", "hot|own", nullptr,
       "which keys contention's writers write: hot (the default) as described under "
       "--writers; own: writer i makes single-put autocommits of loaded keys only it writes "
       "(index i modulo --writers) and reads nothing, the case group commit is for"},
      {"commit", "sync|async", nullptr,
       "contention's writers: sync (the default) waits for each commit; async commits "
       "pipelined (journalkv's CommitAsync, engine/db.h), up to --commit-window commits of each "
       "writer in flight, the oldest waited for first; other engines commit as with sync"},
      {"handles", "shared|own", nullptr,
       "contention as threads: journalkv's workers share the case's Db handle (shared, the "
       "default: one writer role, one flusher) or open one each (own; the engine counters "
       "are then summed over the handles)"},
      {"commit-window", "N", nullptr,
       "--commit=async: commits each writer keeps in flight before it waits for the oldest (8)"},
      {"processes", nullptr, nullptr,
       "contention: run each writer and each reader as a separate process with its own "
       "connection, instead of threads of one process"},
      {"cache-mib", "N", nullptr,
       "page cache of journalkv and SQLite in MiB, also the most a write transaction keeps "
       "dirty before spilling (8); LMDB maps the file and has none"},
      {"mmap-mib", "N", nullptr,
       "journalkv: read the database file through a read-only memory map of up to N MiB "
       "(Options::mmap_size; 0, the default, reads with pread)"},
      {"settle", "checkpoint|none", nullptr,
       "readrandom and scan: bring the database to rest after the load, outside the measured "
       "phase (checkpoint, the default: journalkv and SQLite in WAL modes a TRUNCATE checkpoint, "
       "LMDB mdb_env_sync; the reads then find no log) or read right after the load (none: "
       "whatever the checkpoint policy left in the log is read from it)"},
      {"seed", "N", nullptr, "seed of keys, values and choices, the same for every engine (301)"},
      {"out", "DIR", nullptr,
       "where results.jsonl, results.csv, writelat_*.csv and plots go (jkvbench-results)"},
      {"dir", "DIR", nullptr,
       "where database files live (default: a fresh temporary directory under the working "
       "directory, removed at the end); each case uses its own subdirectory, removed after it"},
      {"fs", "LIST", nullptr,
       "run every case on each of these file systems, made for the run (root only): xfs (with "
       "the exchange-range feature journal mode atomic needs), ext4, xfs-noexchange; each is "
       "an image in the --dir directory on a `losetup --direct-io=on` loop device of its own, "
       "so device_bytes_per_op counts that case's writes alone, the file system's journal "
       "included (none: the cases run in the --dir directory)"},
      // --- trace replay (bench/trace_replay.h, docs/trace.md) ---
      {"trace", "LIST", nullptr,
       "trace files to replay (recorded by Options::record_path or jkv --record): each is a "
       "workload trace:<file name without extension> run on every selected engine and mode, "
       "from an empty database, each recorded thread on a thread of its own; a damaged trace "
       "is an error naming the offset before any case runs; without --workloads only the "
       "traces run, with it both"},
      {"pace", "fast|recorded", nullptr,
       "trace replay: fast (the default: each thread's calls back to back) or recorded (each "
       "call waits until its recorded time offset: idle gaps kept)"},
      {"plot", nullptr, nullptr, "also make PNG charts in --out with gnuplot"},
      {"floor-seconds", "S", nullptr,
       "when a selected sync level is full or extra, first measure the disk's flush floor for "
       "S seconds: 4 KiB overwrites + fdatasync of a preallocated file in the database "
       "directory, per second; the table prints it and each durable case's commits/s as a "
       "multiple of it (x floor); 0 skips it (1)"},
      {"repeat", "N", nullptr,
       "run the whole list of cases N times, interleaved (every case once, then again), and "
       "report for each case the round with the median ops/s, with the lowest and highest "
       "beside it (1)"},
      {"quick", nullptr, nullptr,
       "the default: a preset that compares every engine and mode in under two minutes: "
       "--sync=full,off --num=150 --seconds=0.5 --records=1000 --operations=500 and every "
       "workload but the two named scenarios, which take minutes at sync full (run those with "
       "--workloads), and YCSB's (--ycsb); flags given explicitly win over the preset"},
      {"full", nullptr, nullptr,
       "no preset: the defaults in parentheses (--sync=full --num=10000 --seconds=5 "
       "--records=100000 --operations=100000, every workload but YCSB's and multidb's)"},
      {"help", nullptr, nullptr, "print this text"},
      // --reproduce (reproduce.h): the founding documents' experiments and their report.
      {"reproduce", "seeds|NAME,...", nullptr,
       "run the founding documents' experiments (seeds: every one; or some by name: "
       "speedtest1-1000, suite-562, contention, writelat-acp, maw, mfaw) and write OUT/report.md "
       "(published figure, measured figure with its rounds' range, their ratio, why they "
       "differ), run.json, and per experiment OUT/NAME/ with its results and PNG charts; "
       "--quick (the default) tiny sizes, --full the sizes of the committed report; takes "
       "only --out, --dir, --repeat, --floor-seconds and --quick/--full beside it; maw and "
       "mfaw need --fs (root, mkfs.xfs, Linux 6.10+) and are reported as not run without"},
  };
  return *defs;
}

const FlagDef* FindFlag(absl::string_view name) {
  for (const FlagDef& d : FlagDefs()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<std::string> List(absl::string_view value) {
  std::vector<std::string> items = absl::StrSplit(value, ',', absl::SkipEmpty());
  if (items.size() == 1 && items[0] == "all") items.clear();
  return items;
}

template <typename T>
absl::Status Number(absl::string_view name, absl::string_view value, T min, T max, T* out) {
  T v;
  if (!absl::SimpleAtoi(value, &v) || v < min || v > max) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " wants an integer in [", min, ", ",
                                                   max, "], got \"", value, "\""));
  }
  *out = v;
  return absl::OkStatus();
}

absl::Status CheckNames(absl::string_view flag, const std::vector<std::string>& names,
                        const std::vector<std::string>& known) {
  for (const std::string& n : names) {
    if (std::find(known.begin(), known.end(), n) == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", flag, " \"", n, "\" (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> EngineNames() {
  std::vector<std::string> names;
  for (const EngineInfo& e : Engines()) names.push_back(e.name);
  return names;
}

std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& w : Workloads()) names.push_back(w.name);
  return names;
}

// What runs when no workload is named: all but the YCSB workloads.
std::vector<std::string> DefaultWorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& w : Workloads()) {
    if (w.by_default) names.push_back(w.name);
  }
  return names;
}

absl::Status CheckBool(absl::string_view name, absl::string_view value, bool* out) {
  if (value == "true" || value == "1" || value.empty()) {
    *out = true;
  } else if (value == "false" || value == "0") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
  }
  return absl::OkStatus();
}

absl::Status ApplyText(absl::string_view name, absl::string_view value, BenchConfig& c) {
  if (name == "engines") {
    c.engines = List(value);
    return CheckNames("engine", c.engines, EngineNames());
  }
  if (name == "modes") c.modes = List(value);
  if (name == "sync") {
    c.syncs = List(value);
    if (c.syncs.empty()) c.syncs = SyncLevels();
    return CheckNames("sync level", c.syncs, SyncLevels());
  }
  if (name == "checkpoint") {
    c.checkpoints = List(value);
    if (c.checkpoints.empty()) c.checkpoints = {"default"};
  }
  if (name == "workloads") {
    c.workloads = List(value);
    return CheckNames("workload", c.workloads, WorkloadNames());
  }
  if (name == "ycsb") {
    c.ycsb.clear();
    const std::vector<std::string> letters =
        value == "all" ? std::vector<std::string>{"A", "B", "C", "D", "E", "F"}
                       : std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty()));
    if (letters.empty()) return absl::InvalidArgumentError("--ycsb wants letters A-F or all");
    for (const std::string& letter : letters) {
      const std::string name = YcsbWorkloadName(letter);
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unknown YCSB workload \"", letter, "\" (known: A, B, C, D, E, F, all)"));
      }
      if (std::find(c.ycsb.begin(), c.ycsb.end(), name) == c.ycsb.end()) c.ycsb.push_back(name);
    }
  }
  if (name == "trace") {
    c.trace_files = std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty()));
    if (c.trace_files.empty()) return absl::InvalidArgumentError("--trace wants a file");
  }
  if (name == "pace") {
    if (value != "fast" && value != "recorded") {
      return absl::InvalidArgumentError(
          absl::StrCat("--pace wants fast or recorded, got \"", value, "\""));
    }
    c.params.pace_recorded = value == "recorded";
  }
  if (name == "out") c.out = std::string(value);
  if (name == "dir") c.dir = std::string(value);
  if (name == "reproduce") {
    c.reproduce = value == "all" ? std::vector<std::string>{"seeds"} : List(value);
  }
  if (name == "fs") {
    c.filesystems = std::vector<std::string>(absl::StrSplit(value, ',', absl::SkipEmpty()));
    if (c.filesystems.empty()) return absl::InvalidArgumentError("--fs wants xfs, ext4 or both");
    for (const std::string& f : c.filesystems) {
      JKV_RETURN_IF_ERROR(vfs::ScratchFs::ParseKind(f).status());
    }
  }
  return absl::OkStatus();
}

absl::Status Apply(absl::string_view name, absl::string_view value, BenchConfig& c) {
  WorkloadParams& p = c.params;
  if (name == "num") return Number<uint64_t>(name, value, 1, uint64_t{1} << 32, &p.num);
  if (name == "records") return Number<uint64_t>(name, value, 1, uint64_t{1} << 32, &p.records);
  if (name == "operations") {
    return Number<uint64_t>(name, value, 1, uint64_t{1} << 32, &p.operations);
  }
  if (name == "value-size") {
    JKV_RETURN_IF_ERROR(Number<uint32_t>(name, value, 1, 1 << 20, &p.value_size));
    p.ycsb_value_size = p.value_size;  // given, it is every workload's size
    return absl::OkStatus();
  }
  if (name == "writer-keys") {
    if (value == "hot" || value == "own") {
      p.writer_keys = value == "own" ? WriterKeys::kOwn : WriterKeys::kHot;
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--writer-keys wants hot or own, got \"", value, "\""));
  }
  if (name == "floor-seconds") {
    if (!absl::SimpleAtod(value, &c.floor_seconds) || !(c.floor_seconds >= 0) ||
        c.floor_seconds > 60) {
      return absl::InvalidArgumentError(
          absl::StrCat("--floor-seconds wants a number in [0, 60], got \"", value, "\""));
    }
    return absl::OkStatus();
  }
  if (name == "burst") return Number<uint64_t>(name, value, 1, 1000000, &p.burst);
  if (name == "gap") {
    JKV_ASSIGN_OR_RETURN(p.gap, ParseGap(value));
    return absl::OkStatus();
  }
  if (name == "puts-per-db") return Number<uint64_t>(name, value, 1, 100000, &p.puts_per_db);
  if (name == "threads") return Number<int>(name, value, 0, 256, &p.threads);
  if (name == "writers") return Number<int>(name, value, 0, 256, &p.writers);
  if (name == "handles") {
    if (value == "shared" || value == "own") {
      p.own_handles = value == "own";
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--handles wants shared or own, got \"", value, "\""));
  }
  if (name == "commit-window") return Number<int>(name, value, 1, 4096, &p.commit_window);
  if (name == "commit") {
    if (value == "sync" || value == "async") {
      p.commit_async = value == "async";
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--commit wants sync or async, got \"", value, "\""));
  }
  if (name == "cache-mib") return Number<uint32_t>(name, value, 1, 1 << 20, &p.cache_mib);
  if (name == "mmap-mib") return Number<uint64_t>(name, value, 0, 1 << 24, &p.mmap_mib);
  if (name == "settle") {
    if (value == "checkpoint" || value == "none") {
      p.settle = value == "checkpoint";
      return absl::OkStatus();
    }
    return absl::InvalidArgumentError(
        absl::StrCat("--settle wants checkpoint or none, got \"", value, "\""));
  }
  if (name == "seed") return Number<uint64_t>(name, value, 0, UINT64_MAX, &p.seed);
  if (name == "seconds") {
    if (!absl::SimpleAtod(value, &p.seconds) || !(p.seconds > 0) || p.seconds > 86400) {
      return absl::InvalidArgumentError(
          absl::StrCat("--seconds wants a number in (0, 86400], got \"", value, "\""));
    }
    return absl::OkStatus();
  }
  if (name == "plot") return CheckBool(name, value, &c.plot);
  if (name == "repeat") return Number<int>(name, value, 1, 1000, &c.repeat);
  if (name == "processes") return CheckBool(name, value, &p.processes);
  if (name == "quick") return CheckBool(name, value, &c.quick);
  if (name == "full") {
    bool full = false;
    JKV_RETURN_IF_ERROR(CheckBool(name, value, &full));
    c.quick = !full;
    return absl::OkStatus();
  }
  if (name == "help") return CheckBool(name, value, &c.help);
  if (value.empty() && (name == "out" || name == "dir")) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " wants a directory"));
  }
  return ApplyText(name, value, c);
}

absl::Status LoadTraces(BenchConfig& config, bool keep_workloads) {
  if (!keep_workloads) {
    config.workloads.clear();
  } else if (config.workloads.empty()) {  // --workloads=all
    config.workloads = DefaultWorkloadNames();
  }
  for (const std::string& path : config.trace_files) {
    JKV_ASSIGN_OR_RETURN(LoadedTrace t, LoadTrace(path));
    for (const LoadedTrace& other : config.params.traces) {
      if (other.workload == t.workload) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--trace: ", other.path, " and ", path, " would both be workload ", t.workload,
            " (name the files apart)"));
      }
    }
    config.workloads.push_back(t.workload);
    config.params.traces.push_back(std::move(t));
  }
  return absl::OkStatus();
}

// Splits the arguments into flag -> value ("--name=value", "--name value", "--flag").
absl::StatusOr<std::map<std::string, std::string>> Tokenize(const std::vector<std::string>& args) {
  std::map<std::string, std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view arg = args[i];
    if (!absl::ConsumePrefix(&arg, "--")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument \"", args[i], "\" (flags start with --)"));
    }
    std::pair<std::string, std::string> kv = absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const FlagDef* def = FindFlag(kv.first);
    if (def == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", kv.first));
    }
    const bool has_value = absl::StrContains(arg, '=');
    if (def->arg != nullptr && !has_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", kv.first, " needs a value"));
      }
      kv.second = args[++i];
    }
    given[kv.first] = kv.second;
  }
  return given;
}

}  // namespace

absl::StatusOr<BenchConfig> ParseFlags(const std::vector<std::string>& args) {
  JKV_ASSIGN_OR_RETURN(auto given, Tokenize(args));
  BenchConfig config;
  if (given.contains("quick") && given.contains("full")) {
    return absl::InvalidArgumentError("--quick and --full exclude each other");
  }
  config.quick = true;
  if (given.contains("reproduce")) {
    // The experiments set their own cases and sizes (reproduce.h).
    for (const auto& [name, value] : given) {
      static const char* const kWith[] = {"reproduce", "out", "dir", "repeat", "floor-seconds",
                                          "quick", "full"};
      if (std::find(std::begin(kWith), std::end(kWith), name) == std::end(kWith)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--", name, " does not go with --reproduce (its experiments set their own cases; "
            "it takes --out, --dir, --repeat, --floor-seconds, --quick or --full)"));
      }
    }
    for (const auto& [name, value] : given) JKV_RETURN_IF_ERROR(Apply(name, value, config));
    if (config.reproduce.empty()) {
      return absl::InvalidArgumentError("--reproduce wants seeds or experiment names");
    }
    return config;
  }
  for (const char* preset : {"quick", "full"}) {
    if (auto it = given.find(preset); it != given.end()) {
      JKV_RETURN_IF_ERROR(Apply(preset, it->second, config));
    }
  }
  if (config.quick) {
    for (const FlagDef& d : FlagDefs()) {
      if (d.quick != nullptr && !given.contains(d.name)) {
        JKV_RETURN_IF_ERROR(Apply(d.name, d.quick, config));
      }
    }
  }
  for (const auto& [name, value] : given) JKV_RETURN_IF_ERROR(Apply(name, value, config));
  // --ycsb alone runs only its workloads; beside --workloads, both.
  if (!config.ycsb.empty()) {
    if (!given.contains("workloads")) {
      config.workloads.clear();
    } else if (config.workloads.empty()) {  // --workloads=all
      config.workloads = DefaultWorkloadNames();
    }
    for (const std::string& w : config.ycsb) {
      if (std::find(config.workloads.begin(), config.workloads.end(), w) ==
          config.workloads.end()) {
        config.workloads.push_back(w);
      }
    }
  }
  // --trace: each file a trace:<stem> workload, loaded and checked now, before any case
  // runs; alone it runs only the traces, beside --workloads (or --ycsb) both.
  if (!config.trace_files.empty()) {
    JKV_RETURN_IF_ERROR(LoadTraces(config, given.contains("workloads") || !config.ycsb.empty()));
  }
  return config;
}

namespace {

// The checkpoint policy strings (README, "Choosing a checkpoint policy"): default (each
// engine's own), or what journalkv parses (checkpoint/policy.h: threshold:N, async:N/B with
// N < B, manual), so that both agree on every form and its bounds.
absl::Status CheckPolicySyntax(absl::string_view policy) {
  if (policy == "default") return absl::OkStatus();
  absl::Status s = ParseCheckpointPolicy(policy).status();
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat("--checkpoint: ", s.message()));
}

// Whether --modes selects `mode` of `engine` (every mode when --modes was not given).
bool ModeSelected(const std::vector<std::string>& modes, const EngineInfo& engine,
                  absl::string_view mode) {
  if (modes.empty()) {
    for (const ModeInfo& m : engine.modes) {
      if (m.name == mode) return m.by_default;
    }
    return true;
  }
  for (const std::string& m : modes) {
    if (m == mode || m == absl::StrCat(engine.name, ":", mode)) return true;
  }
  return false;
}

absl::StatusOr<std::vector<const EngineInfo*>> SelectedEngines(const BenchConfig& c) {
  std::vector<const EngineInfo*> engines;
  for (const EngineInfo& e : Engines()) {
    if (c.engines.empty() ||
        std::find(c.engines.begin(), c.engines.end(), e.name) != c.engines.end()) {
      engines.push_back(&e);
    }
  }
  for (const std::string& m : c.modes) {
    bool known = false;
    for (const EngineInfo* e : engines) {
      for (const ModeInfo& mi : e->modes) known |= ModeSelected({m}, *e, mi.name);
    }
    if (!known) {
      std::vector<std::string> all;
      for (const EngineInfo* e : engines) {
        for (const ModeInfo& mi : e->modes) all.push_back(absl::StrCat(e->name, ":", mi.name));
      }
      return absl::InvalidArgumentError(
          absl::StrCat("unknown mode \"", m,
                       "\" for the selected engines (known: ", absl::StrJoin(all, ", "), ")"));
    }
  }
  return engines;
}

// Whether `engine` runs `mode` at one of the selected sync levels.
bool RunsAtSomeSync(const BenchConfig& c, const EngineInfo& engine, absl::string_view mode) {
  for (const std::string& sync : c.syncs) {
    if (engine.runs_at(mode, sync)) return true;
  }
  return false;
}

// The selected WAL modes' answer to each policy: the (engine, mode, policy) triples that
// cannot run, with the engine's reason. A policy one engine lacks (SQLite has no async:N/B)
// only drops that engine's cases; it is an error when no selected WAL mode supports it, since
// then it would measure nothing. Policies mean nothing to rollback modes, so a run without a
// WAL mode ignores them.
absl::StatusOr<std::vector<SkippedCases>> CheckCheckpoints(
    const BenchConfig& c, const std::vector<const EngineInfo*>& es) {
  std::vector<SkippedCases> skipped;
  for (const std::string& policy : c.checkpoints) {
    JKV_RETURN_IF_ERROR(CheckPolicySyntax(policy));
    bool supported = false;
    std::vector<std::string> reasons;
    for (const EngineInfo* e : es) {
      for (const ModeInfo& m : e->modes) {
        if (!m.uses_checkpoint || !ModeSelected(c.modes, *e, m.name) ||
            !RunsAtSomeSync(c, *e, m.name)) {
          continue;
        }
        absl::Status s = e->check_checkpoint(policy);
        if (s.ok()) {
          supported = true;
          continue;
        }
        skipped.push_back({e->name, m.name, policy, std::string(s.message())});
        reasons.push_back(absl::StrCat(e->name, ":", m.name, ": ", s.message()));
      }
    }
    if (!supported && !reasons.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--checkpoint=", policy,
                                                     ": no selected WAL mode supports it (",
                                                     absl::StrJoin(reasons, "; "), ")"));
    }
  }
  return skipped;
}

bool IsSkipped(const std::vector<SkippedCases>& skipped, absl::string_view engine,
               absl::string_view mode, absl::string_view policy) {
  for (const SkippedCases& s : skipped) {
    if (s.engine == engine && s.mode == mode && s.checkpoint == policy) return true;
  }
  return false;
}

// "  LEFT    help text..." wrapped at 96 columns, continuation lines indented under the help.
std::string Wrapped(const std::string& left, const std::string& help) {
  constexpr size_t kIndent = 20, kWidth = 96;
  std::string out = absl::StrCat("  ", left);
  size_t col = out.size();
  if (col + 1 > kIndent) {
    out += "\n";
    col = 0;
  }
  for (absl::string_view word : absl::StrSplit(help, ' ', absl::SkipEmpty())) {
    if (col + 1 + word.size() > kWidth && col > kIndent) {
      out += "\n";
      col = 0;
    }
    if (col < kIndent) {
      out += std::string(kIndent - col, ' ');
      col = kIndent;
    } else {
      out += ' ';
      ++col;
    }
    absl::StrAppend(&out, word);
    col += word.size();
  }
  return out + "\n";
}

}  // namespace

absl::StatusOr<std::vector<CaseSpec>> ExpandCases(const BenchConfig& c,
                                                  std::vector<SkippedCases>* skipped_out) {
  JKV_ASSIGN_OR_RETURN(std::vector<const EngineInfo*> engines, SelectedEngines(c));
  JKV_ASSIGN_OR_RETURN(const std::vector<SkippedCases> skipped, CheckCheckpoints(c, engines));
  if (skipped_out != nullptr) *skipped_out = skipped;
  const std::vector<std::string> workloads =
      c.workloads.empty() ? DefaultWorkloadNames() : c.workloads;
  std::vector<CaseSpec> cases;
  for (const std::string& w : workloads) {
    for (const EngineInfo* e : engines) {
      for (const ModeInfo& m : e->modes) {
        if (!ModeSelected(c.modes, *e, m.name)) continue;
        if (AcrossDatabases(w) > 0 && !e->RunsAcross(m.name)) {
          // LMDB has no transaction across files; memory and off no journal to make one.
          if (skipped_out != nullptr) {
            skipped_out->push_back(
                {e->name, m.name, "", e->open_across == nullptr
                                          ? "no transaction across database files"
                                          : "no transaction across database files in this mode",
                 w});
          }
          continue;
        }
        for (const std::string& sync : c.syncs) {
          if (!e->runs_at(m.name, sync)) continue;
          const std::vector<std::string> none = {"none"};
          for (const std::string& ckpt : m.uses_checkpoint ? c.checkpoints : none) {
            if (IsSkipped(skipped, e->name, m.name, ckpt)) continue;
            cases.push_back({e->name, m.name, sync, ckpt, w});
          }
        }
      }
    }
  }
  if (cases.empty()) {
    return absl::InvalidArgumentError(
        "no case to run: no selected engine has a selected mode at a selected sync level "
        "(the multidb workloads: in a mode with transactions across databases)");
  }
  if (!c.filesystems.empty()) {
    // Each case once per file system, side by side.
    std::vector<CaseSpec> on_each;
    for (const CaseSpec& spec : cases) {
      const ModeInfo* mode = FindEngine(spec.engine)->FindMode(spec.mode);
      for (const std::string& f : c.filesystems) {
        if (!mode->file_systems.empty() &&
            std::find(mode->file_systems.begin(), mode->file_systems.end(), f) ==
                mode->file_systems.end()) {
          const SkippedCases skip{spec.engine, spec.mode, absl::StrCat("on ", f),
                                  absl::StrCat("runs only on ",
                                               absl::StrJoin(mode->file_systems, ", "))};
          if (skipped_out != nullptr &&
              std::none_of(skipped_out->begin(), skipped_out->end(), [&](const SkippedCases& s) {
                return s.engine == skip.engine && s.mode == skip.mode &&
                       s.checkpoint == skip.checkpoint;
              })) {
            skipped_out->push_back(skip);
          }
          continue;
        }
        on_each.push_back(spec);
        on_each.back().fs = f;
      }
    }
    cases = std::move(on_each);
  }
  return cases;
}

std::string HelpText() {
  std::string text =
      "jkvbench: compares journaling modes of journalkv with SQLite and LMDB on the same\n"
      "workloads (same keys, values, seed, transaction sizes and sync level for every engine).\n"
      "\nusage: jkvbench [--flag=value | --flag value]...\n"
      "\nflags (a default in parentheses is --full's; [quick: ...] is the preset's value, used\n"
      "unless --full is given or the flag is):\n";
  for (const FlagDef& d : FlagDefs()) {
    const std::string left =
        d.arg != nullptr ? absl::StrCat("--", d.name, "=", d.arg) : absl::StrCat("--", d.name);
    absl::StrAppend(&text,
                    Wrapped(left, absl::StrCat(d.help, d.quick != nullptr
                                                           ? absl::StrCat(" [quick: ", d.quick, "]")
                                                           : "")));
  }
  absl::StrAppend(&text, "\nengines and modes (a case = engine x mode x sync x workload):\n");
  for (const EngineInfo& e : Engines()) {
    std::vector<std::string> modes;
    for (const ModeInfo& m : e.modes) modes.push_back(m.by_default ? m.name : m.name + "*");
    absl::StrAppend(&text, "  ", e.name, ": ", absl::StrJoin(modes, "|"), "\n");
  }
  absl::StrAppend(&text,
                  "  * only when --modes names it: journalkv's atomic needs a file system with\n"
                  "    atomic batches, such as --fs=xfs (XFS with exchange-range, Linux 6.10+)\n");
  absl::StrAppend(
      &text,
      "  sqlite: a WITHOUT ROWID table kv(k BLOB PRIMARY KEY, v BLOB), prepared statements,\n"
      "    PRAGMA journal_mode=MODE and synchronous=SYNC (extra = EXTRA).\n"
      "  lmdb has no separate sync choice: sync off runs mode nosync (MDB_NOSYNC), every other\n"
      "    level runs default (syncs each commit); other pairs are skipped.\n"
      "\nworkloads (N = --num; YCSB's: R = --records loaded, O = --operations measured, each\n"
      "its own transaction, values of 1000 bytes unless --value-size is given):\n");
  for (const WorkloadInfo& w : Workloads()) {
    absl::StrAppend(&text, Wrapped(w.name, w.help));
  }
  absl::StrAppend(&text, Wrapped("trace:STEM",
                                 "--trace=STEM.jkvtrace replayed (docs/trace.md); op = one "
                                 "recorded call; per-kind counts in the trace_* fields"));
  absl::StrAppend(
      &text,
      "\nmeasured by the harness, the same way for every engine: latency per operation\n"
      "(p50, p99, p99.9, max), operations per second, fsync+fdatasync+msync calls and bytes\n"
      "written per operation (interposed system calls, whole process), and the largest log\n"
      "file size on disk seen between transactions (log_max_bytes; LMDB has no log; in\n"
      "journalkv's wal2 both logs added).\n"
      "A run at sync full or extra first measures the disk's flush floor (--floor-seconds)\n"
      "and shows each durable case's commits/s as a multiple of it (x floor).\n"
      "journalkv also reports its own counters over the phase: checkpoints, their time, commits\n"
      "held by the policy, the largest log in frames (wal2: both logs), database-file writes\n"
      "per commit, write lock wait and work time (bench/report.h lists every field).\n"
      "LMDB writes its meta page through an O_DSYNC descriptor: that second flush per commit\n"
      "is not an fsync call and is not counted.\n"
      "\noutput: a table on stdout; progress on stderr (one updating line on a terminal,\n"
      "otherwise a line per finished case); OUT/results.jsonl and OUT/results.csv (one record\n"
      "per case), OUT/writelat_<engine>_<mode>_<sync>.csv, and with --plot OUT/*.png.\n"
      "With --reproduce: OUT/report.md, OUT/run.json and per experiment OUT/NAME/ (its\n"
      "results, table.txt, run.json and charts; bench/reproduce.h).\n"
      "exit status: 0 all cases ran, 1 a case or an output failed, 2 bad flags.\n");
  return text;
}

}  // namespace journalkv::bench
