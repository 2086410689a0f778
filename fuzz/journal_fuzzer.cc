// Fuzz target 2: a rollback journal (x.db-journal) of fuzzer bytes next to a valid database,
// so that opening the database decides whether the journal is hot and rolls it back. Each
// input is tried as it is and resealed (ResealJournal: the header's, every record's and the
// seal's checksums recomputed, and the page images' trailers), in the three modes that keep a
// journal file. What must hold:
//  - no journal rolled back (Stats().recoveries == 0): the database reads exactly as it was
//    committed (BaseContent), because a journal that is not hot must not change anything;
//  - a journal rolled back: whatever the database now holds reads consistently;
//  - either way, a write after that commits and reads back (where Check() finds no damage),
//    or fails with an error.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_util.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

void TryJournal(const std::string& journal, JournalMode mode) {
  FuzzFileSystem fs;
  WriteFile(fs, kDbPath, BaseDbFile(JournalMode::kDelete));
  WriteFile(fs, std::string(kDbPath) + "-journal", journal);
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!db.ok()) return;
  bool healthy = false;
  auto content = ReadConsistent(**db, &healthy);
  const bool rolled_back = (*db)->Stats().recoveries > 0;
  if (!rolled_back) {
    if (!content.has_value()) FuzzFail("the valid database failed to read beside a cold journal");
    ExpectContent(*content, BaseContent(), "beside a journal that was not rolled back");
  }
  absl::Status s = (*db)->Put("after", "recovery");
  if (s.ok()) {
    auto got = (*db)->Get("after");
    // A tree that Check() finds damaged may send the Get down another path than the Put.
    if (healthy && got.ok() && (!got->has_value() || **got != "recovery")) {
      FuzzFail("a commit after recovery does not read back");
    }
    ReadConsistent(**db);
  }
  (void)(*db)->Close();
}

}  // namespace
}  // namespace journalkv::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace journalkv::fuzz;
  using journalkv::JournalMode;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string resealed = bytes;
  ResealJournal(resealed);
  // The mode comes from the input's last byte, so that one input does not cost three opens.
  const JournalMode modes[] = {JournalMode::kDelete, JournalMode::kTruncate,
                               JournalMode::kPersist};
  const JournalMode mode = modes[size == 0 ? 0 : data[size - 1] % 3];
  TryJournal(bytes, mode);
  if (resealed != bytes) TryJournal(resealed, mode);
  return 0;
}
