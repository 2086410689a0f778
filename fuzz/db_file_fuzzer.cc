// Fuzz target 1: a database file made of fuzzer bytes (page 1's header, tree pages, overflow
// chains, the freelist). Each input is tried twice: as it is, and with every page's checksum
// trailer recomputed (ResealDbFile), so that the B+tree and freelist decoders see the mutated
// structure instead of a checksum failure. Each try opens the file in the family its header
// names, reads everything (ReadConsistent: sorted, Get agrees, Check() returns), then writes a
// little (which allocates from the freelist and splits or merges pages) and reads again.
// Errors are fine; a crash, a sanitizer report or an inconsistent read is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

void TryDatabase(const std::string& bytes) {
  FuzzFileSystem fs;
  WriteFile(fs, kDbPath, bytes);
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, std::nullopt));
  if (!db.ok()) return;
  ReadConsistent(**db);
  auto txn = (*db)->BeginWrite();
  if (txn.ok()) {
    bool ok = true;
    for (int i = 0; i < 6 && ok; ++i) {
      ok = (*txn)->Put(absl::StrCat("new", i), std::string(i * 150, 'n')).ok();
    }
    if (ok) ok = (*txn)->Delete("key7").ok();
    if (ok) (void)(*txn)->Commit();
    txn->reset();
    ReadConsistent(**db);
  }
  (void)(*db)->Close();
}

}  // namespace
}  // namespace journalkv::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace journalkv::fuzz;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  TryDatabase(bytes);
  std::string resealed = bytes;
  ResealDbFile(resealed);
  if (resealed != bytes) TryDatabase(resealed);
  return 0;
}
