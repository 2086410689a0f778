// Shared pieces of the fuzz targets (fuzz/*_fuzzer.cc): the valid databases the side-file
// targets attach fuzzer bytes to, the consistency checks every target applies to what a read
// returns, and the "reseal" helpers that recompute a mutated file's checksums so that the
// fuzzer gets past them into the decoders behind (a checksum only tells damage from intent;
// what the code does with well-sealed nonsense is what needs fuzzing).
//
// Everything runs on vfs::MemFileSystem: no disk, and each input gets a fresh file system.
// A broken expectation calls FuzzFail, which prints what went wrong and aborts, so libFuzzer
// (or the replay test) reports the input as a crash.
//
// Thread-safety: single-threaded, as libFuzzer calls LLVMFuzzerTestOneInput.
#ifndef JOURNALKV_FUZZ_FUZZ_UTIL_H_
#define JOURNALKV_FUZZ_FUZZ_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/db.h"
#include "engine/options.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {

// The targets' file system: in memory, with files of at most 64 MiB. A valid log may name a
// page gigabytes out (a commit that grows the database that far), and an in-memory file holds
// every byte below its end; past the limit the write fails as EFBIG would, and that error is
// what the input must end in.
class FuzzFileSystem : public vfs::MemFileSystem {
 public:
  FuzzFileSystem() { SetMaxFileBytes(uint64_t{64} << 20); }
};

inline constexpr char kDbPath[] = "/x.db";
// Small pages keep the files (and so the corpora and each execution) small.
inline constexpr uint32_t kFuzzPageSize = 512;

[[noreturn]] void FuzzFail(const std::string& what);

// Options for a database on `fs`: small pages and cache, a short busy timeout (a fuzzed -shm
// can make a lock look held; waiting 5 s for it would only slow the fuzzer), manual
// checkpoints so that nothing runs unless a target asks for it.
Options FuzzOptions(vfs::FileSystem* fs, std::optional<JournalMode> mode);

// The content every valid database starts with: keys of several sizes, values from empty to
// several overflow pages, and enough deletions that the freelist holds pages.
std::map<std::string, std::string> BaseContent();
// Builds the base database in `mode` at kDbPath on `fs` and closes it (WAL modes checkpoint
// and remove their logs on close, so only the database file is left).
absl::Status WriteBaseDb(vfs::MemFileSystem& fs, JournalMode mode);

// The bytes of the base database in `mode`'s family, built once per process (every rollback
// mode shares one; wal and wal2 each have their own, since page 1 records the family).
const std::string& BaseDbFile(JournalMode mode);

// A database with a live log: the base database in a WAL mode, opened, then a few commits
// (in wal2 enough that both logs hold frames), all left in the log(s). The files are
// snapshots taken while the connection was open (so the -shm is the live index, and the log
// has not been checkpointed away), and `content` is what they hold.
struct LogFixture {
  std::string db, wal, wal2, shm;
  std::map<std::string, std::string> content;
};
const LogFixture& GetLogFixture(JournalMode mode);  // built once per process and mode

// The bytes of a file on `fs` (empty when it does not exist).
std::string ReadFile(vfs::FileSystem& fs, const std::string& path);
void WriteFile(vfs::FileSystem& fs, const std::string& path, absl::string_view bytes);

// Reads everything `db` holds through one read transaction and checks that it is consistent:
// iteration strictly increasing forwards, the same keys backwards, Get agrees with the
// iteration for every key met, Count agrees, Seek lands where the iteration says. Errors
// (DataLoss and the like) are fine; a disagreement is not (FuzzFail). Returns the content,
// or std::nullopt when a read failed on the way. Check() is called too: it may report
// problems or fail, never crash.
// `healthy`, when given, is set to whether Check() found nothing wrong.
std::optional<std::map<std::string, std::string>> ReadConsistent(Db& db,
                                                                 bool* healthy = nullptr);

// Fails unless `got` is exactly `want`; `what` names the situation.
void ExpectContent(const std::map<std::string, std::string>& got,
                   const std::map<std::string, std::string>& want, const std::string& what);

// Reseal helpers: fix every checksum of a file in place, so that structure behind it is
// reached. Each leaves bytes it cannot make sense of as they are.
// Database file: every whole page's trailer (page size from the header; 512 when invalid).
void ResealDbFile(std::string& file);
// Rollback journal: the header checksum, then each record's and the seal's checksum for as
// long as the records parse.
void ResealJournal(std::string& file);
// WAL log: the header checksum, then each frame's page trailer and chained checksum (salts
// kept as they are, so mismatching salts still get tested).
void ResealWal(std::string& file);

// Splits fuzzer bytes into parts: `data` is read as [u16 length][bytes] pieces, the last part
// taking whatever is left. Lets one input carry several files.
std::string TakePart(absl::string_view& data);

}  // namespace journalkv::fuzz

#endif  // JOURNALKV_FUZZ_FUZZ_UTIL_H_
