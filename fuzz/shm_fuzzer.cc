// Fuzz target 4: a wal-index (x.db-shm) of fuzzer bytes beside a valid database and log
// (GetLogFixture). Input: byte 0 holds flags, the rest is the -shm image (its first two
// 32 KiB regions: the header, checkpoint info, pins and slots, then log 0's first hash block).
//   bit 0 clear: "cold". The image is the -shm file when the database is opened with no
//     connection alive. An opener alone must not trust it (it reinitialises the index from
//     the log), so the database must read exactly as the fixture holds it.
//   bit 0 set: "live". A first connection opens the valid files, then the image is copied over
//     its shared mapping (as a buggy or hostile process sharing the -shm could), and that
//     connection and a second one read, write and checkpoint. Here the index is trusted by
//     design, so only consistency is asked: no crash, no hang, each read self-consistent.
//   bit 1: wal2 instead of wal.
// Each image is tried as it is and with both index header copies resealed (their checksums
// recomputed), so that the header's fields themselves get fuzzed.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/hash.h"
#include "fuzz/fuzz_util.h"
#include "shm/wal_index.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

constexpr int kRegions = 2;

void ResealShm(std::string& image) {
  for (size_t off : {shm::kHeaderAOffset, shm::kHeaderBOffset}) {
    if (off + shm::kHeaderBytes > image.size()) continue;
    // 18 words then their XXH3 as a low and a high word (native order: x86 is little-endian,
    // as the checksum's byte encoding is).
    const uint64_t sum = base::Xxh3(image.data() + off, shm::kHeaderBytes - 8, 0);
    std::memcpy(image.data() + off + shm::kHeaderBytes - 8, &sum, 8);
  }
}

void WriteFixture(vfs::MemFileSystem& fs, const LogFixture& f) {
  WriteFile(fs, kDbPath, f.db);
  WriteFile(fs, std::string(kDbPath) + "-wal", f.wal);
  if (!f.wal2.empty()) WriteFile(fs, std::string(kDbPath) + "-wal2", f.wal2);
}

void TryCold(const std::string& image, JournalMode mode) {
  const LogFixture& f = GetLogFixture(mode);
  FuzzFileSystem fs;
  WriteFixture(fs, f);
  WriteFile(fs, std::string(kDbPath) + "-shm", image);
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!db.ok()) FuzzFail(absl::StrCat("open beside a stale -shm: ", db.status().ToString()));
  auto content = ReadConsistent(**db);
  if (!content.has_value()) FuzzFail("the valid database failed to read beside a stale -shm");
  ExpectContent(*content, f.content, "beside a stale -shm");
}

// Reads and writes through `db`, asking only that what it reads is consistent.
void Exercise(Db& db, int round) {
  bool healthy = false;
  ReadConsistent(db, &healthy);
  if (db.Put(absl::StrCat("live", round), std::string(round * 200, 'L')).ok()) {
    auto got = db.Get(absl::StrCat("live", round));
    if (healthy && got.ok() && !got->has_value()) FuzzFail("a commit on a live -shm does not read back");
  }
  (void)db.Checkpoint(round == 0 ? CheckpointMode::kPassive : CheckpointMode::kRestart);
  ReadConsistent(db);
}

void TryLive(const std::string& image, JournalMode mode) {
  const LogFixture& f = GetLogFixture(mode);
  FuzzFileSystem fs;
  WriteFixture(fs, f);
  auto first = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!first.ok()) FuzzFail(absl::StrCat("open of the fixture: ", first.status().ToString()));
  {
    // Make sure the index covers the log before it is overwritten.
    auto content = ReadConsistent(**first);
    if (!content.has_value()) FuzzFail("the fixture failed to read");
    ExpectContent(*content, f.content, "the fixture");
  }
  {
    auto shm = fs.Open(std::string(kDbPath) + "-shm", {vfs::OpenMode::kReadWrite,
                                                       vfs::FileKind::kShm});
    if (!shm.ok()) FuzzFail(absl::StrCat("opening the -shm: ", shm.status().ToString()));
    for (int r = 0; r < kRegions; ++r) {
      const size_t from = r * shm::kRegionSize;
      if (from >= image.size()) break;
      auto map = (*shm)->MapSharedRegion(r, shm::kRegionSize);
      if (!map.ok()) FuzzFail(map.status().ToString());
      std::memcpy(*map, image.data() + from, std::min(shm::kRegionSize, image.size() - from));
    }
  }
  Exercise(**first, 0);
  auto second = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (second.ok()) {
    Exercise(**second, 1);
    Exercise(**first, 2);
    (void)(*second)->Close();
  }
  (void)(*first)->Close();
  // Once every connection is gone the -shm is dropped: the files must open and read again.
  auto again = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (again.ok()) ReadConsistent(**again);
}

}  // namespace
}  // namespace journalkv::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace journalkv::fuzz;
  using journalkv::JournalMode;
  if (size == 0) return 0;
  const bool live = data[0] & 1;
  const JournalMode mode = (data[0] & 2) ? JournalMode::kWal2 : JournalMode::kWal;
  std::string image(reinterpret_cast<const char*>(data) + 1,
                    std::min<size_t>(size - 1, kRegions * journalkv::shm::kRegionSize));
  std::string resealed = image;
  ResealShm(resealed);
  for (const std::string* im : {&image, &resealed}) {
    if (im == &resealed && resealed == image) break;
    if (live) {
      TryLive(*im, mode);
    } else {
      TryCold(*im, mode);
    }
  }
  return 0;
}
