// `jkv inspect` (tools/inspect.h) on the files of live databases, and on damaged, truncated and
// foreign files: it prints what can be read, names what is wrong, and never fails on content.
#include "tools/inspect.h"

#include <stdlib.h>

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "shm/wal_index.h"
#include "vfs/posix_fs.h"

namespace journalkv::tools {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

class InspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = absl::StrCat(::testing::TempDir(), "/inspect_XXXXXX");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  std::string Path(const std::string& name) { return absl::StrCat(dir_, "/", name); }
  std::string Run(const std::string& db, const std::string& what, uint64_t page = 0) {
    std::ostringstream out;
    absl::Status s = Inspect(fs_, db, what, page, out);
    EXPECT_THAT(s, IsOk()) << what;
    return out.str();
  }
  void WriteBytes(const std::string& path, const std::string& bytes) {
    auto f = *fs_.Open(path, vfs::OpenOptions{vfs::OpenMode::kCreate, vfs::FileKind::kOther});
    ASSERT_THAT(f->Truncate(0), IsOk());
    ASSERT_THAT(f->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                bytes.size())),
                IsOk());
  }
  std::string ReadBytes(const std::string& path) {
    auto f = *fs_.Open(path, vfs::OpenOptions{vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
    std::string s(*f->Size(), '\0');
    EXPECT_THAT(f->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(s.data()), s.size())), IsOk());
    return s;
  }

  vfs::PosixFileSystem fs_;
  std::string dir_;
};

TEST_F(InspectTest, PagesOfAHealthyDatabaseAndOfADamagedOne) {
  const std::string db = Path("x.db");
  {
    Options o;
    o.journal_mode = JournalMode::kDelete;
    std::unique_ptr<Db> d = *Db::Open(db, o);
    ASSERT_THAT(d->Put("alpha", "one"), IsOk());
    ASSERT_THAT(d->Put("beta", std::string(5000, 'b')), IsOk());  // overflows
  }
  std::string out = Run(db, "page", 1);
  EXPECT_THAT(out, HasSubstr("checksum 0x"));
  EXPECT_THAT(out, HasSubstr(" ok\nmagic ok\nformat_version 1\npage_size 4096\n"));
  EXPECT_THAT(out, HasSubstr("journal_family 0"));
  out = Run(db, "page", 2);
  EXPECT_THAT(out, HasSubstr("type leaf\ncell_count 2\n"));
  EXPECT_THAT(out, HasSubstr("key alpha value_size 3 value one\n"));
  EXPECT_THAT(out, HasSubstr("key beta value_size 5000 value "));
  EXPECT_THAT(out, HasSubstr("overflow_page "));
  EXPECT_THAT(Run(db, "page", 3), HasSubstr("type overflow\nnext_page "));
  EXPECT_THAT(Run(db, "page", 99), HasSubstr("page 99: not in the file (pages are 1.."));

  // A flipped byte in page 2's cells: the checksum says so, and the cells still print.
  std::string bytes = ReadBytes(db);
  bytes[4096 + 4000] ^= 0x5a;
  WriteBytes(db, bytes);
  out = Run(db, "page", 2);
  EXPECT_THAT(out, HasSubstr("BAD: the content hashes to"));
  EXPECT_THAT(out, HasSubstr("type leaf"));
  // Page 2 with impossible cell pointers and counts: named, not crashed on.
  bytes[4096 + 2] = static_cast<char>(0xff);
  bytes[4096 + 3] = static_cast<char>(0xff);
  WriteBytes(db, bytes);
  EXPECT_THAT(Run(db, "page", 2), HasSubstr("BAD: 65535 cell pointers do not fit in the page"));
  bytes[4096 + 2] = 1;
  bytes[4096 + 3] = 0;
  bytes[4096 + 12] = static_cast<char>(0xf0);  // the cell pointer past the page
  bytes[4096 + 13] = static_cast<char>(0xff);
  WriteBytes(db, bytes);
  EXPECT_THAT(Run(db, "page", 2), HasSubstr("BAD: offset outside the content area"));

  // A foreign file and a truncated one.
  WriteBytes(db, std::string(10000, 'z'));
  out = Run(db, "page", 1);
  EXPECT_THAT(out, HasSubstr("BAD: page 1: "));
  EXPECT_THAT(out, HasSubstr("not a journalkv database"));
  EXPECT_THAT(out, HasSubstr("magic BAD"));
  WriteBytes(db, "jour");
  EXPECT_THAT(Run(db, "page", 1), HasSubstr("BAD: the file is shorter than page 1's header"));
  std::ostringstream ignored;
  EXPECT_THAT(Inspect(fs_, Path("missing.db"), "page", 1, ignored),
              StatusIs(absl::StatusCode::kNotFound, "missing.db"));
}

TEST_F(InspectTest, TheLogAndTheIndexOfALiveWalDatabaseAndADamagedLog) {
  const std::string db = Path("w.db");
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.checkpoint_policy = "manual";
  std::unique_ptr<Db> d = *Db::Open(db, o);
  for (int i = 0; i < 5; ++i) ASSERT_THAT(d->Put(absl::StrCat("k", i), "v"), IsOk());
  auto reader = *d->BeginRead();  // a pinned snapshot for the slot lines
  std::string out = Run(db, "wal");
  EXPECT_THAT(out, HasSubstr("magic ok\nversion 2\npage_size 4096\n"));
  EXPECT_THAT(out, HasSubstr(", commit, db_size 2\n"));
  EXPECT_THAT(out, HasSubstr("5 commits"));
  EXPECT_THAT(out, Not(HasSubstr("BAD")));
  out = Run(db, "shm");
  EXPECT_THAT(out, HasSubstr(absl::StrFormat("layout_version 0x%08x ok\n", shm::kShmLayoutVersion)));
  EXPECT_THAT(out, HasSubstr("sync floor full, append epoch 0\n"));
  EXPECT_THAT(out, HasSubstr("db_epoch "));
  EXPECT_THAT(out, ::testing::ContainsRegex("log 0 synced through seq [0-9]+ frame 6\n"));
  EXPECT_THAT(out, HasSubstr("slots claimed in this life: below 1\n"));
  EXPECT_THAT(out, HasSubstr("published copies agree\n"));
  EXPECT_THAT(out, HasSubstr("appended copies agree\n"));
  EXPECT_THAT(out, ::testing::ContainsRegex("slot [0-9]+: owner 0x[0-9a-f]+, log 0 seq [0-9]+ frame "));
  EXPECT_THAT(out, HasSubstr("hash block 0 of log 0 (frames 1..4096): "));
  reader.reset();

  // The same log with frame 3's image damaged, under another database's name: the chain
  // breaks there, and what came before is still listed.
  std::string log = ReadBytes(db + "-wal");
  const std::string copy = Path("c.db");
  log[32 + 2 * (32 + 4096) + 32 + 100] ^= 1;  // frame 3's image
  WriteBytes(copy + "-wal", log);
  out = Run(copy, "wal");
  EXPECT_THAT(out, HasSubstr("frame 3 at 8288: page "));
  EXPECT_THAT(out, HasSubstr("image BAD (torn, or not the image its header names): the valid "
                             "frames end here"));
  EXPECT_THAT(out, HasSubstr("2 valid frames"));
  // Frame 2's header damaged instead: the chain breaks there.
  log[32 + 2 * (32 + 4096) + 32 + 100] ^= 1;
  log[32 + (32 + 4096) + 4] ^= 1;  // frame 2's db_size
  WriteBytes(copy + "-wal", log);
  out = Run(copy, "wal");
  EXPECT_THAT(out, HasSubstr("frame 2 at 4160: page "));
  EXPECT_THAT(out, HasSubstr("checksum BAD (torn, or not of this chain): the valid frames end here"));
  EXPECT_THAT(out, HasSubstr("1 valid frames"));
  log[32 + (32 + 4096) + 4] ^= 1;
  // A damaged header: named, the log counts as empty.
  log[13] ^= 1;
  WriteBytes(copy + "-wal", log);
  EXPECT_THAT(Run(copy, "wal"), HasSubstr("the log counts as empty"));
  WriteBytes(copy + "-wal", "short");
  EXPECT_THAT(Run(copy, "wal"), HasSubstr("BAD: shorter than the 32-byte header"));
  // A damaged index: one header copy flipped.
  std::string shm = ReadBytes(db + "-shm");
  shm[8 + 4] ^= 1;
  WriteBytes(copy + "-shm", shm);
  out = Run(copy, "shm");
  EXPECT_THAT(out, HasSubstr("checksum BAD"));
  EXPECT_THAT(out, HasSubstr("published copies DISAGREE"));
  WriteBytes(copy + "-shm", std::string(100, '\0'));
  EXPECT_THAT(Run(copy, "shm"), HasSubstr("BAD: shorter than region 0"));
}

TEST_F(InspectTest, AJournalWithRecordsAndDamagedOnes) {
  const std::string db = Path("j.db");
  Options o;
  o.journal_mode = JournalMode::kPersist;
  o.cache_pages = 8;  // the transaction spills: its journal has records on disk while it runs
  std::unique_ptr<Db> d = *Db::Open(db, o);
  for (int i = 0; i < 300; ++i) ASSERT_THAT(d->Put(absl::StrCat("k", 1000 + i), std::string(100, 'v')), IsOk());
  auto w = *d->BeginWrite();
  for (int i = 0; i < 300; ++i) ASSERT_THAT(w->Put(absl::StrCat("k", 1000 + i), std::string(100, 'w')), IsOk());
  ASSERT_GT(d->Stats().spills, 0u);
  std::string out = Run(db, "journal");
  EXPECT_THAT(out, HasSubstr("magic ok\nformat_version 1\npage_size 4096\n"));
  EXPECT_THAT(out, ::testing::ContainsRegex("record 1 at [0-9]+: original of page [0-9]+\n"));
  EXPECT_THAT(out, Not(HasSubstr("checksum 0x0000000000000000 BAD")));
  const std::string journal = ReadBytes(db + "-journal");
  ASSERT_THAT(w->Rollback(), IsOk());
  w.reset();
  // Persist mode zeroes the header when a transaction ends: no transaction.
  EXPECT_THAT(Run(db, "journal"), HasSubstr("the header is not valid"));
  // The third record damaged: the journal ends there, after two.
  uint64_t records = 0;
  for (int i = 7; i >= 0; --i) records = records << 8 | static_cast<uint8_t>(journal[32 + i]);
  ASSERT_GE(records, 512u);
  std::string damaged = journal;
  damaged[records + 2 * (8 + 4096 + 8) + 8 + 50] ^= 1;
  const std::string copy = Path("c.db");
  WriteBytes(copy + "-journal", damaged);
  out = Run(copy, "journal");
  EXPECT_THAT(out, HasSubstr("does not check: the journal ends here"));
  EXPECT_THAT(out, HasSubstr("record 2 at "));
  EXPECT_THAT(out, HasSubstr("2 records, not sealed"));
  WriteBytes(copy + "-journal", "tiny");
  EXPECT_THAT(Run(copy, "journal"), HasSubstr("BAD: shorter than the 512-byte header"));
}

TEST_F(InspectTest, UnknownStructuresAreErrors) {
  std::ostringstream out;
  EXPECT_THAT(Inspect(fs_, Path("x.db"), "leaves", 0, out),
              StatusIs(absl::StatusCode::kInvalidArgument, "unknown structure \"leaves\""));
}

}  // namespace
}  // namespace journalkv::tools
