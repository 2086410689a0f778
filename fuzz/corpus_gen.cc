// Writes the seed corpora of the fuzz targets: valid files of each kind, made by the engine
// itself (fuzz_util's base database and log fixtures, journals caught at crash points of a
// real transaction). Run from the repository root:
//   ./bazelw run //fuzz:corpus_gen -- "$PWD/fuzz/corpus"
// It writes <dir>/<target>/seed-*; inputs found by fuzzing sit beside them under other names.
// Journals and logs carry random nonces and salts, so each run writes other bytes.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <utility>
#include <vector>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "fuzz/fuzz_util.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

std::string out_dir;

void Seed(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::filesystem::path dir = std::filesystem::path(out_dir) / target;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ("seed-" + name), std::ios::binary) << bytes;
}

void DbFileSeeds() {
  Seed("db_file", "rollback", BaseDbFile(JournalMode::kDelete));
  Seed("db_file", "wal", BaseDbFile(JournalMode::kWal));
  Seed("db_file", "wal2", BaseDbFile(JournalMode::kWal2));
  vfs::MemFileSystem fs;
  {
    auto db = Db::Open(kDbPath, FuzzOptions(&fs, JournalMode::kDelete));
    if (!db.ok()) FuzzFail(db.status().ToString());
  }
  Seed("db_file", "empty", ReadFile(fs, kDbPath));
  {
    auto db = Db::Open(kDbPath, FuzzOptions(&fs, JournalMode::kDelete));
    if (!db.ok() || !(*db)->Put("one", std::string(2000, '1')).ok()) FuzzFail("one key");
  }
  Seed("db_file", "one-overflowing-key", ReadFile(fs, kDbPath));
  // A deeper tree: many small keys.
  {
    auto db = Db::Open(kDbPath, FuzzOptions(&fs, JournalMode::kDelete));
    if (!db.ok()) FuzzFail(db.status().ToString());
    auto txn = (*db)->BeginWrite();
    if (!txn.ok()) FuzzFail(txn.status().ToString());
    for (int i = 0; i < 300; ++i) {
      if (!(*txn)->Put(absl::StrFormat("deep%05d", i * 7919 % 300), "v").ok()) FuzzFail("put");
    }
    if (!(*txn)->Commit().ok()) FuzzFail("commit");
  }
  Seed("db_file", "deep-tree", ReadFile(fs, kDbPath));
}

// Journals left by a transaction over the base database that stops at crash point n (every
// mutation after it fails), for several n: headers alone, records, and sealed journals.
void JournalSeeds() {
  const JournalMode modes[] = {JournalMode::kDelete, JournalMode::kTruncate,
                               JournalMode::kPersist};
  for (JournalMode mode : modes) {
    std::vector<std::pair<uint64_t, std::string>> journals;  // distinct, by crash point
    std::set<std::string> seen;
    for (uint64_t n = 1; n < 400; ++n) {
      vfs::MemFileSystem base;
      WriteFile(base, kDbPath, BaseDbFile(JournalMode::kDelete));
      vfs::FaultInjectingFileSystem fs(&base);
      {
        auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
        if (!db.ok()) FuzzFail(db.status().ToString());
        fs.CrashAfterMutations(n);
        auto txn = (*db)->BeginWrite();
        if (txn.ok()) {
          // Enough pages that the transaction spills before its commit (cache_pages 16).
          for (int i = 0; i < 40; ++i) {
            if (!(*txn)->Put(absl::StrCat("key", i), std::string(i * 13, 'j')).ok()) break;
          }
          (void)(*txn)->Commit();
        }
        fs.SimulateProcessCrash();
      }
      const std::string journal = ReadFile(base, std::string(kDbPath) + "-journal");
      if (journal.size() >= 512 && seen.insert(journal).second) journals.emplace_back(n, journal);
    }
    // Six spread over the transaction: early records to the sealed journal of the last phase.
    for (size_t i = 0; i < 6 && !journals.empty(); ++i) {
      const auto& [n, journal] = journals[i * (journals.size() - 1) / 5];
      Seed("journal", absl::StrCat(JournalModeName(mode), "-crash", n), journal);
    }
  }
}

std::string Part(const std::string& bytes) {
  if (bytes.size() > 0xFFFF) FuzzFail("a log too big for a u16 part");
  std::string out(2, '\0');
  out[0] = static_cast<char>(bytes.size() & 0xFF);
  out[1] = static_cast<char>(bytes.size() >> 8);
  return out + bytes;
}

void WalSeeds() {
  const LogFixture& w = GetLogFixture(JournalMode::kWal);
  Seed("wal", "wal", std::string(1, '\0') + w.wal);
  Seed("wal", "wal-empty", std::string(1, '\0'));
  // Torn tails: the log cut inside a frame, and after a frame that is not a commit.
  const uint64_t frame = 24 + kFuzzPageSize;
  for (uint64_t frames : {1, 3, 7}) {
    const uint64_t cut = 32 + frames * frame + (frames % 2 ? 100 : 0);
    if (cut < w.wal.size()) Seed("wal", absl::StrCat("wal-cut", frames), "\0" + w.wal.substr(0, cut));
  }
  const LogFixture& w2 = GetLogFixture(JournalMode::kWal2);
  Seed("wal", "wal2", std::string(1, '\1') + Part(w2.wal) + w2.wal2);
  Seed("wal", "wal2-first-only", std::string(1, '\1') + Part(w2.wal));
  Seed("wal", "wal2-second-only", std::string(1, '\1') + Part("") + w2.wal2);
}

void ShmSeeds() {
  const size_t image = 2 * 32 * 1024;
  const LogFixture& w = GetLogFixture(JournalMode::kWal);
  const LogFixture& w2 = GetLogFixture(JournalMode::kWal2);
  Seed("shm", "wal-cold", std::string(1, '\0') + w.shm.substr(0, image));
  Seed("shm", "wal-live", std::string(1, '\1') + w.shm.substr(0, image));
  Seed("shm", "wal2-cold", std::string(1, '\2') + w2.shm.substr(0, image));
  Seed("shm", "wal2-live", std::string(1, '\3') + w2.shm.substr(0, image));
  Seed("shm", "live-header-only", std::string(1, '\1') + w.shm.substr(0, 256));
  Seed("shm", "cold-empty", std::string(1, '\0'));
}

// Operation sequences: random bytes in every mode and at every sync level (the decoder takes
// any bytes), weighted towards puts so that the trees grow past one page.
void OpsSeeds() {
  std::mt19937 rng(21);
  for (int config = 0; config < 28; config += 3) {
    std::string ops(1, static_cast<char>(config));
    for (int i = 0; i < 160; ++i) {
      const int op = rng() % 14;
      ops += static_cast<char>(op >= 10 ? 0 : op);  // 0: put
      ops += static_cast<char>(rng() % 256);
      ops += static_cast<char>(rng() % 256);
    }
    Seed("ops", absl::StrCat("config", config), ops);
  }
}

}  // namespace
}  // namespace journalkv::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: corpus_gen DIR\n");
    return 2;
  }
  journalkv::fuzz::out_dir = argv[1];
  journalkv::fuzz::DbFileSeeds();
  journalkv::fuzz::JournalSeeds();
  journalkv::fuzz::WalSeeds();
  journalkv::fuzz::ShmSeeds();
  journalkv::fuzz::OpsSeeds();
  std::printf("corpus_gen: seeds written under %s\n", argv[1]);
  return 0;
}
