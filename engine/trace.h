// Traces: what a Db handle was asked to do, operation by operation, with the time and the
// thread, recorded to a file (Options::record_path, `jkv --record=FILE`) and read back for a
// replay (`jkvbench --trace=FILE`, docs/trace.md).
//
//   auto writer = TraceWriter::Create("app.jkvtrace", TraceValues::kSynthetic, seed);
//   (*writer)->Put(key, value);  ...   JKV_RETURN_IF_ERROR((*writer)->Close());
//   absl::StatusOr<Trace> trace = ReadTrace("app.jkvtrace");
//
// The format (version 1; all integers little-endian, "varint" is LEB128: 7 bits a byte, low
// bits first, at most 10 bytes):
//
//   file    = header block* end-block               nothing may follow the end block
//   header  = "JKVTRACE" (8 bytes) | version u16 | flags u16 | check u32        16 bytes
//             check: the low 32 bits of XXH3-64 (seed 0) of the header's first 12 bytes.
//             flags bit 0: keys and values kept as they were (1) or synthetic (0); the other
//             bits are 0 (a reader refuses a flag or a version it does not know).
//   block   = length u32 | check u64 | payload (length bytes, 1 .. kMaxTraceBlock)
//             check: XXH3-64 of the length's 4 bytes then the payload, seeded with the block's
//             byte offset in the file (a block copied to another place fails its check).
//             A payload holds whole records; the writer ends a block at about 64 KiB.
//   record  = kind u8 | thread varint | dt varint | fields of the kind
//             thread: 0, 1, 2, ... in the order the recording threads first recorded.
//             dt: microseconds since the previous record of the file (the first: since the
//             recording began), so the file's records are in time order.
//   fields:   begin_read end_read begin_write commit rollback: none
//             get delete: key                    put: key value
//             scan: from | limit varint | visited varint | bounds u8 | [lower] | [upper]
//                   (bounds bit 0: a lower bound follows, bit 1: an upper bound; visited is
//                   how many pairs the scan gave, limit what it was allowed)
//             checkpoint: mode u8 (passive 0, full 1, restart 2, truncate 3)
//             end: records varint (how many records came before it; the last record of the
//                   last block, which it is alone in)
//   key     = length varint | bytes                 (synthetic: the synthetic bytes)
//   value   = length varint | bytes                 (synthetic: the length alone)
//
// Trace invariants (docs/trace.md):
//   T1. A reader returns every record as written, or an error naming the file and the byte
//       offset of the first block or field that does not check out (a damaged byte, a
//       truncation at any offset, an unknown version or flag); never a wrong record.
//   T2. Synthetic keys have the original key's length; equal keys get equal synthetic keys and
//       distinct keys distinct ones (the mapping is a bijection on the keys of each length,
//       keyed by the recording's seed); keys that share a prefix get synthetic keys that share
//       a prefix as long. Order is not kept: a scan replays from the mapped start key over the
//       same number of pairs, not over the same keys.
//   T3. The records of one thread are in the order that thread's calls returned.
//
// What a record means, and what is not recorded: docs/trace.md, "What is recorded".
//
// Thread-safety: a TraceWriter may be called from any number of threads at once (a mutex
// orders the records). Trace and TraceRecord are plain values.
#ifndef JOURNALKV_ENGINE_TRACE_H_
#define JOURNALKV_ENGINE_TRACE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/mutex.h"
#include "wal/checkpoint_types.h"

namespace journalkv {

inline constexpr char kTraceMagic[] = "JKVTRACE";  // the first 8 bytes of a trace
inline constexpr uint16_t kTraceVersion = 1;
inline constexpr uint16_t kTraceFlagValuesKept = 1;
inline constexpr size_t kTraceHeaderBytes = 16;
inline constexpr size_t kTraceBlockHeaderBytes = 12;
inline constexpr uint32_t kMaxTraceBlock = 1u << 20;

// How a recording keeps keys and values (Options::record_values, --record-values).
enum class TraceValues {
  kSynthetic,  // same-length stand-ins (T2), values not stored: a trace that can be shared
  kKeep,       // the bytes as they were
};
absl::string_view TraceValuesName(TraceValues v);  // "synthetic", "keep"
absl::StatusOr<TraceValues> ParseTraceValues(absl::string_view text);

enum class TraceKind : uint8_t {
  kBeginRead = 1,
  kEndRead = 2,
  kBeginWrite = 3,
  kCommit = 4,
  kRollback = 5,
  kGet = 6,
  kPut = 7,
  kDelete = 8,
  kScan = 9,
  kCheckpoint = 10,
  kEnd = 11,  // the trailer (never in Trace::records)
};
inline constexpr int kNumTraceKinds = 10;  // kBeginRead .. kCheckpoint
// "begin_read", "end_read", "begin_write", "commit", "rollback", "get", "put", "delete",
// "scan", "checkpoint" (the report's field names: trace_<name>).
absl::string_view TraceKindName(TraceKind kind);

struct TraceRecord {
  TraceKind kind = TraceKind::kGet;
  uint32_t thread = 0;
  uint64_t time_us = 0;  // since the recording began
  std::string key;       // get, put, delete; scan: from
  std::string value;     // put, values kept (synthetic: empty, see value_size)
  uint64_t value_size = 0;  // put: the value's length
  uint64_t limit = 0;       // scan
  uint64_t visited = 0;     // scan: pairs it gave
  std::optional<std::string> lower_bound;  // scan
  std::optional<std::string> upper_bound;  // scan
  wal::CheckpointMode checkpoint_mode = wal::CheckpointMode::kPassive;
  uint64_t offset = 0;  // the byte offset of the record in the file (for messages)
};

struct Trace {
  uint16_t version = kTraceVersion;
  TraceValues values = TraceValues::kSynthetic;
  std::vector<TraceRecord> records;
  uint32_t threads = 0;  // 1 + the largest thread number (0 when there is no record)
};

// Reads a whole trace (T1). `name` is the file's name in messages, as in
// "trace x.jkvtrace: truncated record at offset 1234".
absl::StatusOr<Trace> ParseTrace(absl::string_view bytes, absl::string_view name);
absl::StatusOr<Trace> ReadTrace(const std::string& path);

// The bytes a replay puts for a synthetic value of `size` bytes: printable, from a fixed
// pseudo-random sequence, the same for every replay.
std::string SyntheticValue(uint64_t record_index, uint64_t size);
// The value a replay puts for record `index` of `trace`: its bytes (kept), else synthetic.
std::string ReplayValue(const Trace& trace, size_t index);

// The synthetic stand-in of `key` under `seed` (T2).
std::string SyntheticKey(absl::string_view key, uint64_t seed);

// Writes a trace as calls come. Errors do not reach the caller of each call: the first one
// stops the recording and is kept (status(), Close()).
class TraceWriter {
 public:
  // Creates (or replaces) the file at `path` and writes its header. `seed` keys the synthetic
  // mapping (0: a random one, so the mapping cannot be redone from the trace).
  static absl::StatusOr<std::unique_ptr<TraceWriter>> Create(const std::string& path,
                                                             TraceValues values, uint64_t seed);
  ~TraceWriter();  // closes, ignoring the error
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void BeginRead() { Simple(TraceKind::kBeginRead); }
  void EndRead() { Simple(TraceKind::kEndRead); }
  void BeginWrite() { Simple(TraceKind::kBeginWrite); }
  void Commit() { Simple(TraceKind::kCommit); }
  void Rollback() { Simple(TraceKind::kRollback); }
  void Get(absl::string_view key) { KeyRecord(TraceKind::kGet, key); }
  void Delete(absl::string_view key) { KeyRecord(TraceKind::kDelete, key); }
  void Put(absl::string_view key, absl::string_view value);
  void Scan(absl::string_view from, uint64_t limit, uint64_t visited,
            const std::optional<std::string>& lower, const std::optional<std::string>& upper);
  void Checkpoint(wal::CheckpointMode mode);

  // Writes the end block and closes the file; the first error of the recording, naming the
  // file. Idempotent (later calls return the same status).
  absl::Status Close();
  absl::Status status();
  const std::string& path() const { return path_; }

 private:
  TraceWriter(std::string path, std::FILE* file, TraceValues values, uint64_t seed);
  void Simple(TraceKind kind);
  void KeyRecord(TraceKind kind, absl::string_view key);
  // Appends the record's kind, thread and time to the block; the caller appends its fields.
  void StartRecord(TraceKind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AppendKey(absl::string_view key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EndRecord() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushBlock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const TraceValues values_;
  const uint64_t seed_;
  const int64_t start_ns_;
  base::Mutex mu_;
  std::FILE* file_ ABSL_GUARDED_BY(mu_);
  std::string block_ ABSL_GUARDED_BY(mu_);
  uint64_t file_offset_ ABSL_GUARDED_BY(mu_) = kTraceHeaderBytes;
  uint64_t last_us_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t records_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::thread::id, uint32_t> threads_ ABSL_GUARDED_BY(mu_);
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_TRACE_H_
