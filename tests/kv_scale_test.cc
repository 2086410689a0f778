// The key-value engine at scale and under concurrency, on the real file system:
//  - a bulk load of 1,000,000 keys (16-byte keys, 100-byte values) in one transaction, every key
//    read back in random order, a full scan, then every key deleted (the rates are printed, not
//    asserted: tests measure nothing);
//  - a 64 MiB value, keys at exactly the size limit and one byte over;
//  - reader threads beside a writer thread, and a reader process beside a writer process, each
//    seeing only whole transactions.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "btree/btree_format.h"
#include "engine/db.h"
#include "gtest/gtest.h"
#include "pager/db_format.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

class KvScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/jkv_scale_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/scale.db";
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::string dir_, path_;
};

std::string Key16(uint64_t i) { return absl::StrFormat("key%013d", i); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

TEST_F(KvScaleTest, BulkLoadReadScanAndDeleteOfAMillionKeys) {
  const int n = journalkv::testing::ScaledForSanitizer(1000000, 100000);
  auto db = Db::Open(path_, Options());  // the defaults: delete journal, sync full, 4 KiB pages
  ASSERT_THAT(db, IsOk());
  const std::string value(100, 'v');
  auto start = std::chrono::steady_clock::now();
  {
    auto txn = (*db)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < n; ++i) ASSERT_THAT((*txn)->Put(Key16(i), value), IsOk());
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  const double load = Seconds(start);

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(1));
  start = std::chrono::steady_clock::now();
  {
    auto txn = (*db)->BeginRead();
    ASSERT_THAT(txn, IsOk());
    for (int i : order) {
      auto v = (*txn)->Get(Key16(i));
      ASSERT_THAT(v, IsOk());
      ASSERT_TRUE(v->has_value()) << i;
      ASSERT_EQ(v->value().size(), 100u);
    }
  }
  const double reads = Seconds(start);

  start = std::chrono::steady_clock::now();
  {
    auto txn = (*db)->BeginRead();
    ASSERT_THAT(txn, IsOk());
    auto it = (*txn)->NewIterator();
    int seen = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ASSERT_EQ(it->key(), Key16(seen));
      ++seen;
    }
    ASSERT_THAT(it->status(), IsOk());
    ASSERT_EQ(seen, n);
  }
  const double scan = Seconds(start);

  auto check = (*db)->Check();
  ASSERT_THAT(check, IsOk());
  ASSERT_TRUE(check->ok()) << check->problems[0];
  EXPECT_EQ(check->keys, static_cast<uint64_t>(n));

  start = std::chrono::steady_clock::now();
  {
    auto txn = (*db)->BeginWrite();
    ASSERT_THAT(txn, IsOk());
    for (int i = 0; i < n; ++i) {
      auto existed = (*txn)->Delete(Key16(i));
      ASSERT_THAT(existed, IsOk());
      ASSERT_TRUE(*existed);
    }
    ASSERT_THAT((*txn)->Commit(), IsOk());
  }
  const double del = Seconds(start);
  check = (*db)->Check();
  ASSERT_THAT(check, IsOk());
  ASSERT_TRUE(check->ok()) << check->problems[0];
  EXPECT_EQ(check->keys, 0u);
  // Every page but the header (and at most an empty root) is back on the freelist.
  EXPECT_GE(check->free_pages + 2, check->pages);
  std::printf("%d keys: bulk load %.0f keys/s, random read %.0f keys/s, full scan %.0f keys/s, "
              "delete all %.0f keys/s\n",
              n, n / load, n / reads, n / scan, n / del);
}

TEST_F(KvScaleTest, SixtyFourMebibyteValue) {
  auto db = Db::Open(path_, Options());
  ASSERT_THAT(db, IsOk());
  std::string big(64 << 20, '\0');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  ASSERT_THAT((*db)->Put("big", big), IsOk());
  auto v = (*db)->Get("big");
  ASSERT_THAT(v, IsOk());
  ASSERT_TRUE(v->has_value());
  EXPECT_TRUE(**v == big);
  const uint32_t pages_with_value = (*db)->Stats().page_count;
  EXPECT_GT(pages_with_value, (64u << 20) / 4096);
  // Overwriting with a small value gives the overflow chain back to the freelist.
  ASSERT_THAT((*db)->Put("big", "small"), IsOk());
  EXPECT_GE((*db)->Stats().freelist_pages, (64u << 20) / 4096 - 1);
  auto check = (*db)->Check();
  ASSERT_THAT(check, IsOk());
  EXPECT_TRUE(check->ok()) << check->problems[0];
}

TEST_F(KvScaleTest, KeysAtTheLimitAndOneByteOver) {
  auto db = Db::Open(path_, Options());
  ASSERT_THAT(db, IsOk());
  const size_t limit = btree::MaxKeySize(pager::UsableSize(4096));
  EXPECT_GE(limit, 1024u);
  const std::string at_limit(limit, 'k');
  const std::string over(limit + 1, 'k');
  ASSERT_THAT((*db)->Put(at_limit, "v"), IsOk());
  EXPECT_THAT((*db)->Put(over, "v"),
              StatusIs(absl::StatusCode::kInvalidArgument, absl::StrCat("limit of ", limit)));
  auto v = (*db)->Get(at_limit);
  ASSERT_THAT(v, IsOk());
  EXPECT_TRUE(v->has_value());
  auto txn = (*db)->BeginRead();
  ASSERT_THAT(txn, IsOk());
  auto count = (*txn)->Count();
  ASSERT_THAT(count, IsOk());
  EXPECT_EQ(*count, 1u);  // nothing was written for the oversized key
}

// Transaction t writes kKeys keys, all with value t: a snapshot with two values is torn.
constexpr int kKeys = 50;

absl::Status WriteGeneration(Db& db, int t) {
  auto txn = db.BeginWrite();
  if (!txn.ok()) return txn.status();
  for (int k = 0; k < kKeys; ++k) {
    absl::Status s = (*txn)->Put(absl::StrCat("row", k), absl::StrCat(t));
    if (!s.ok()) return s;
  }
  return (*txn)->Commit();
}

// "" when the snapshot is whole, else a description.
std::string CheckGeneration(Db& db) {
  auto txn = db.BeginRead();
  if (!txn.ok()) return std::string(txn.status().message());
  auto it = (*txn)->NewIterator();
  std::string first;
  int rows = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next(), ++rows) {
    auto v = it->value();
    if (!v.ok()) return std::string(v.status().message());
    if (rows == 0) first = *v;
    if (*v != first) return absl::StrCat("torn snapshot: ", first, " and ", *v);
  }
  if (rows != 0 && rows != kKeys) return absl::StrCat("snapshot with ", rows, " rows");
  return std::string(it->status().message());
}

TEST_F(KvScaleTest, ReaderThreadsBesideAWriterThreadSeeWholeTransactions) {
  Options o;
  o.sync = SyncLevel::kOff;  // the point is isolation, not the disk
  o.busy_timeout = absl::Seconds(30);
  auto db = Db::Open(path_, o);
  ASSERT_THAT(db, IsOk());
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, torn{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        const std::string problem = CheckGeneration(**db);
        if (!problem.empty()) {
          std::fprintf(stderr, "reader: %s\n", problem.c_str());
          torn.fetch_add(1);
        }
        reads.fetch_add(1);
      }
    });
  }
  for (int t = 1; t <= 300 || reads.load() < 300; ++t) {
    ASSERT_THAT(WriteGeneration(**db, t), IsOk());
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(torn.load(), 0);
}

TEST_F(KvScaleTest, ReaderProcessBesideAWriterProcessSeesWholeTransactions) {
  Options o;
  o.sync = SyncLevel::kOff;
  o.busy_timeout = absl::Seconds(30);
  { ASSERT_THAT(Db::Open(path_, o), IsOk()); }
  const pid_t writer = fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    auto db = Db::Open(path_, o);
    if (!db.ok()) _exit(2);
    for (int t = 1; t <= 400; ++t) {
      if (!WriteGeneration(**db, t).ok()) _exit(3);
    }
    _exit(0);
  }
  const pid_t reader = fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    auto db = Db::Open(path_, o);
    if (!db.ok()) _exit(2);
    for (int i = 0; i < 2000; ++i) {
      const std::string problem = CheckGeneration(**db);
      if (!problem.empty()) {
        std::fprintf(stderr, "reader process: %s\n", problem.c_str());
        _exit(4);
      }
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer status " << status;
  ASSERT_EQ(waitpid(reader, &status, 0), reader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "reader status " << status;
  auto db = Db::Open(path_, o);
  ASSERT_THAT(db, IsOk());
  EXPECT_EQ(CheckGeneration(**db), "");
  auto v = (*db)->Get("row0");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(**v, "400");
}

}  // namespace
}  // namespace journalkv
