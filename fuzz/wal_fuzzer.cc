// Fuzz target 3: a WAL log (x.db-wal), or a WAL2 pair (x.db-wal and x.db-wal2), of fuzzer
// bytes next to a valid database, so that opening it runs the recovery scan: headers, salts,
// the checksum chain, commit frames, page numbers past the end. Input: byte 0 chooses the mode
// (bit 0: wal2); in wal the rest is the log; in wal2 the rest is [u16 n][n bytes of -wal] and
// then -wal2 (TakePart). Each input is tried as it is and with every log resealed (ResealWal:
// header checksum, page trailers, the frame checksum chain recomputed; salts left alone).
// What must hold:
//  - no frame adopted (Stats().log_frames == 0): the database reads exactly as committed;
//  - frames adopted: the reads are consistent, and stay the same across a checkpoint and a
//    reopen (copying the log into the database must not change what a reader sees);
//  - a write afterwards commits and reads back (where Check() finds no damage), or fails
//    with an error.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

void TryLogs(const std::string& log1, const std::optional<std::string>& log2) {
  const JournalMode mode = log2.has_value() ? JournalMode::kWal2 : JournalMode::kWal;
  FuzzFileSystem fs;
  WriteFile(fs, kDbPath, BaseDbFile(mode));
  WriteFile(fs, std::string(kDbPath) + "-wal", log1);
  if (log2.has_value()) WriteFile(fs, std::string(kDbPath) + "-wal2", *log2);
  std::optional<std::map<std::string, std::string>> before;
  {
    auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
    if (!db.ok()) return;
    bool healthy = false;
    before = ReadConsistent(**db, &healthy);
    const bool adopted = (*db)->Stats().log_frames > 0;
    if (!adopted) {
      if (!before.has_value()) FuzzFail("the valid database failed to read beside a dead log");
      ExpectContent(*before, BaseContent(), "beside a log with no frame adopted");
    }
    auto ckpt = (*db)->Checkpoint(CheckpointMode::kPassive);
    if (ckpt.ok() && before.has_value()) {
      auto after = ReadConsistent(**db);
      if (after.has_value()) ExpectContent(*after, *before, "after a checkpoint");
    }
    absl::Status s = (*db)->Put("after", "recovery");
    if (s.ok()) {
      auto got = (*db)->Get("after");
      // A tree that Check() finds damaged may send the Get down another path than the Put.
      if (healthy && got.ok() && (!got->has_value() || **got != "recovery")) {
        FuzzFail("a commit after recovery does not read back");
      }
      if (before.has_value()) (*before)["after"] = "recovery";
    } else {
      before.reset();
    }
    if (!(*db)->Close().ok()) before.reset();
  }
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!db.ok()) return;
  auto reopened = ReadConsistent(**db);
  if (reopened.has_value() && before.has_value()) {
    ExpectContent(*reopened, *before, "after a reopen");
  }
}

}  // namespace
}  // namespace journalkv::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace journalkv::fuzz;
  if (size == 0) return 0;
  const bool wal2 = data[0] & 1;
  absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string log1 = wal2 ? TakePart(rest) : std::string(rest);
  std::optional<std::string> log2;
  if (wal2) log2 = std::string(rest);
  TryLogs(log1, log2);
  std::string sealed1 = log1;
  ResealWal(sealed1);
  std::optional<std::string> sealed2 = log2;
  if (sealed2.has_value()) ResealWal(*sealed2);
  if (sealed1 != log1 || sealed2 != log2) TryLogs(sealed1, sealed2);
  return 0;
}
