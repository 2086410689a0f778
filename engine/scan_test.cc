// ReadTransaction::Scan and WriteTransaction::Scan against a std::map: random starts, limits
// and bounds, values in overflow pages, a visitor that stops the scan or writes to the
// transaction it scans, and a damaged page.
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/mem_fs.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;
using Pairs = std::vector<std::pair<std::string, std::string>>;
using Model = std::map<std::string, std::string>;

Options MemOptions(vfs::FileSystem* fs) {
  Options o;
  o.file_system = fs;
  o.page_size = 512;  // small pages: many leaves, and values of a few hundred bytes overflow
  return o;
}

// What a scan of `model` from `from` within `o` shows, at most `limit` pairs.
Pairs Expected(const Model& model, const std::string& from, uint64_t limit,
               const IteratorOptions& o) {
  Pairs out;
  for (auto it = model.lower_bound(from); it != model.end() && out.size() < limit; ++it) {
    if (o.lower_bound.has_value() && it->first < *o.lower_bound) continue;
    if (o.upper_bound.has_value() && it->first >= *o.upper_bound) break;
    out.push_back(*it);
  }
  return out;
}

template <typename Txn>
Pairs Scanned(Txn& txn, const std::string& from, uint64_t limit, const IteratorOptions& o) {
  Pairs out;
  absl::StatusOr<uint64_t> n = txn.Scan(
      from, limit,
      [&out](absl::string_view k, absl::string_view v) {
        out.emplace_back(std::string(k), std::string(v));
        return true;
      },
      o);
  EXPECT_THAT(n, IsOk());
  if (n.ok()) {
    EXPECT_EQ(*n, out.size());
  }
  return out;
}

// The pages `read` reads through a new handle on /x.db with the default page size, whose cache
// starts empty: the cache misses it makes.
template <typename Read>
uint64_t PagesRead(vfs::MemFileSystem& fs, Read read) {
  Options options;
  options.file_system = &fs;
  auto db = Db::Open("/x.db", options);
  EXPECT_THAT(db, IsOk());
  if (!db.ok()) return 0;
  const uint64_t before = (*db)->Stats().cache_misses;
  read(**db);
  return (*db)->Stats().cache_misses - before;
}

TEST(ScanTest, ScansSeeTheModelFromEveryStartWithinEveryBound) {
  vfs::MemFileSystem fs;
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  std::mt19937_64 rng(23);
  auto random_key = [&] { return absl::StrCat("k", rng() % 3000); };
  Model model;
  WriteBatch batch;
  for (int i = 0; i < 1500; ++i) {
    const std::string k = random_key();
    // Every seventh value overflows its leaf (512-byte pages hold about 150 bytes a cell).
    const std::string v(i % 7 == 0 ? 900 + i % 300 : i % 40, static_cast<char>('a' + i % 26));
    model[k] = v;
    batch.Put(k, v);
  }
  ASSERT_THAT((*db)->Write(batch), IsOk());
  auto read = (*db)->BeginRead();
  ASSERT_THAT(read, IsOk());
  auto write = (*db)->BeginWrite();
  ASSERT_THAT(write, IsOk());
  for (int round = 0; round < 300; ++round) {
    IteratorOptions o;
    if (rng() % 3 == 0) o.lower_bound = random_key();
    if (rng() % 3 == 0) o.upper_bound = random_key();
    const std::string from = rng() % 5 == 0 ? std::string() : random_key();
    const uint64_t limit = rng() % 4 == 0 ? UINT64_MAX : rng() % 200;
    SCOPED_TRACE(absl::StrCat("from ", from, " limit ", limit, " bounds ",
                              o.lower_bound.value_or("-"), " .. ", o.upper_bound.value_or("-")));
    const Pairs want = Expected(model, from, limit, o);
    EXPECT_EQ(Scanned(**read, from, limit, o), want);
    EXPECT_EQ(Scanned(**write, from, limit, o), want);
  }
}

TEST(ScanTest, AVisitorThatReturnsFalseEndsTheScanAtThatPair) {
  vfs::MemFileSystem fs;
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  for (int i = 0; i < 100; ++i) ASSERT_THAT((*db)->Put(absl::StrCat("k", 100 + i), "v"), IsOk());
  auto read = (*db)->BeginRead();
  ASSERT_THAT(read, IsOk());
  std::vector<std::string> seen;
  absl::StatusOr<uint64_t> n = (*read)->Scan("k150", 1000, [&](absl::string_view k,
                                                               absl::string_view) {
    seen.emplace_back(k);
    return seen.size() < 3;
  });
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(*n, 3u);
  EXPECT_EQ(seen, (std::vector<std::string>{"k150", "k151", "k152"}));
  // A limit of 0 visits nothing; a start past the last key finds nothing.
  EXPECT_THAT((*read)->Scan("k150", 0, [](absl::string_view, absl::string_view) { return true; }),
              IsOk());
  absl::StatusOr<uint64_t> none =
      (*read)->Scan("l", 10, [](absl::string_view, absl::string_view) { return true; });
  ASSERT_THAT(none, IsOk());
  EXPECT_EQ(*none, 0u);
}

// A write transaction's scan goes on from the first key after the one visited, whatever the
// visitor wrote: a key it deletes is not seen again, one it puts ahead is seen, one it puts
// behind is not.
TEST(ScanTest, AWriteTransactionsScanFollowsTheVisitorsWrites) {
  vfs::MemFileSystem fs;
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  for (int i = 0; i < 300; i += 2) {
    ASSERT_THAT((*db)->Put(absl::StrCat("k", 1000 + i), std::string(i % 50, 'v')), IsOk());
  }
  auto txn = (*db)->BeginWrite();
  ASSERT_THAT(txn, IsOk());
  WriteTransaction& w = **txn;
  std::vector<std::string> seen;
  absl::StatusOr<uint64_t> n = w.Scan("k1100", 1000, [&](absl::string_view key,
                                                           absl::string_view) {
    const std::string k(key);
    seen.push_back(k);
    EXPECT_THAT(w.Delete(k), IsOk());
    const int i = std::stoi(k.substr(1));
    if (i < 1120) {
      EXPECT_THAT(w.Put(absl::StrCat("k", i + 1), "odd"), IsOk());  // ahead
    }
    EXPECT_THAT(w.Put(absl::StrCat("k", i - 51), "behind"), IsOk());
    return true;
  });
  ASSERT_THAT(n, IsOk());
  std::vector<std::string> want;
  for (int i = 1100; i < 1300; ++i) {
    if (i % 2 == 0 || i < 1121) want.push_back(absl::StrCat("k", i));
  }
  EXPECT_EQ(seen, want);
  EXPECT_EQ(*n, want.size());
  ASSERT_THAT(w.Commit(), IsOk());
}

// A scan reads the pages its pairs are on and no other: the next leaf is prefetched only when
// the transaction has it at hand (btree::Cursor::PrefetchSibling), never read for it. Pages
// read count as the cache misses of a handle whose cache started empty.
TEST(ScanTest, AScanReadsOnlyThePagesOfThePairsItVisits) {
  vfs::MemFileSystem fs;
  Options options;
  options.file_system = &fs;
  {
    auto db = Db::Open("/x.db", options);
    ASSERT_THAT(db, IsOk());
    WriteBatch batch;
    for (int i = 0; i < 3000; ++i) batch.Put(absl::StrCat("k", 10000 + i), std::string(100, 'v'));
    ASSERT_THAT((*db)->Write(batch), IsOk());
  }
  // 100 pairs (30-odd a leaf): the scan goes through four leaves or so.
  for (int from : {10005, 10500, 12890}) {
    SCOPED_TRACE(from);
    const uint64_t gets = PagesRead(fs, [from](Db& db) {
      auto read = db.BeginRead();
      ASSERT_THAT(read, IsOk());
      for (int i = from; i < from + 100; ++i) {
        EXPECT_THAT((*read)->Get(absl::StrCat("k", i)), IsOk());
      }
    });
    const uint64_t scan = PagesRead(fs, [from](Db& db) {
      auto read = db.BeginRead();
      ASSERT_THAT(read, IsOk());
      absl::StatusOr<uint64_t> n = (*read)->Scan(
          absl::StrCat("k", from), 100, [](absl::string_view, absl::string_view) { return true; });
      ASSERT_THAT(n, IsOk());
      EXPECT_EQ(*n, 100u);
    });
    EXPECT_GE(gets, 4u) << "the pairs should span leaves";
    EXPECT_EQ(scan, gets);
  }
}

// A pair the scan does not hand over (past its limit or its bound) has its value left unread:
// a value in overflow pages there costs no read of them.
TEST(ScanTest, APairPastTheLimitOrTheBoundHasItsOverflowPagesLeftUnread) {
  vfs::MemFileSystem fs;
  Options options;
  options.file_system = &fs;
  {
    auto db = Db::Open("/x.db", options);
    ASSERT_THAT(db, IsOk());
    ASSERT_THAT((*db)->Put("a", std::string(40000, 'o')), IsOk());  // about ten overflow pages
    ASSERT_THAT((*db)->Put("b", "inline"), IsOk());
  }
  const auto misses = [&](absl::string_view from, uint64_t limit, IteratorOptions o) {
    return PagesRead(fs, [&](Db& db) {
      auto read = db.BeginRead();
      ASSERT_THAT(read, IsOk());
      EXPECT_THAT((*read)->Scan(
                      from, limit, [](absl::string_view, absl::string_view) { return true; }, o),
                  IsOk());
    });
  };
  const uint64_t descent = misses("b", 1, {});  // the leaf, "b" inline
  IteratorOptions below_a;
  below_a.upper_bound = "a";
  EXPECT_EQ(misses("a", 0, {}), descent);
  EXPECT_EQ(misses("", 100, below_a), descent);
  EXPECT_GT(misses("a", 1, {}), descent + 5) << "the value should take overflow pages";
}

TEST(ScanTest, ADamagedPageEndsTheScanWithDataLossNamingIt) {
  vfs::MemFileSystem fs;
  {
    auto db = Db::Open("/x.db", MemOptions(&fs));
    ASSERT_THAT(db, IsOk());
    for (int i = 0; i < 2000; ++i) {
      ASSERT_THAT((*db)->Put(absl::StrCat("k", 10000 + i), "value"), IsOk());
    }
  }
  {
    // A byte of the last page, a leaf (the keys went in in order), after its header.
    auto file = fs.Open("/x.db", {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther});
    ASSERT_THAT(file, IsOk());
    absl::StatusOr<uint64_t> size = (*file)->Size();
    ASSERT_THAT(size, IsOk());
    const uint64_t at = *size - 512 + 100;
    uint8_t byte = 0;
    ASSERT_THAT((*file)->Read(at, absl::MakeSpan(&byte, 1)), IsOk());
    byte ^= 0x10;
    ASSERT_THAT((*file)->Write(at, absl::MakeConstSpan(&byte, 1)), IsOk());
  }
  auto db = Db::Open("/x.db", MemOptions(&fs));
  ASSERT_THAT(db, IsOk());
  auto read = (*db)->BeginRead();
  ASSERT_THAT(read, IsOk());
  uint64_t seen = 0;
  absl::StatusOr<uint64_t> n = (*read)->Scan("", UINT64_MAX, [&](absl::string_view,
                                                                 absl::string_view) {
    ++seen;
    return true;
  });
  EXPECT_THAT(n, StatusIs(absl::StatusCode::kDataLoss, "checksum mismatch"));
  EXPECT_GT(seen, 0u);
  EXPECT_LT(seen, 2000u);
}

}  // namespace
}  // namespace journalkv
