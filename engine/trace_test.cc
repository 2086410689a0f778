// The trace format (engine/trace.h): round trips of every record kind, kept and synthetic,
// from several threads; damaged and truncated input (T1); unknown versions and flags; the
// synthetic key mapping (T2); and what a Db records (Options::record_path).
#include "engine/trace.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_matchers.h"
#include "engine/db.h"
#include "gtest/gtest.h"

namespace journalkv {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every kind once, from the calling thread.
void WriteEveryKind(TraceWriter& w, const std::string& tag) {
  w.BeginRead();
  w.Get(tag + "k1");
  w.Scan(tag + "a", 10, 3, std::nullopt, std::nullopt);
  w.EndRead();
  w.BeginWrite();
  w.Put(tag + "k1", "value-" + tag);
  w.Put(std::string("\0\xff", 2), "");  // binary key, empty value
  w.Delete(tag + "k2");
  w.Scan(tag + "b", 100, 100, std::string("lo"), std::string("up"));
  w.Commit();
  w.BeginWrite();
  w.Rollback();
  w.Checkpoint(wal::CheckpointMode::kTruncate);
}

const std::vector<TraceKind> kEveryKind = {
    TraceKind::kBeginRead, TraceKind::kGet,      TraceKind::kScan,     TraceKind::kEndRead,
    TraceKind::kBeginWrite, TraceKind::kPut,     TraceKind::kPut,      TraceKind::kDelete,
    TraceKind::kScan,      TraceKind::kCommit,   TraceKind::kBeginWrite, TraceKind::kRollback,
    TraceKind::kCheckpoint};

TEST(TraceTest, RoundTripKeepsEveryKindAndField) {
  const std::string path = TempPath("keep.jkvtrace");
  JKV_ASSERT_OK_AND_ASSIGN(auto w, TraceWriter::Create(path, TraceValues::kKeep, 7));
  WriteEveryKind(*w, "t");
  JKV_ASSERT_OK(w->Close());
  JKV_ASSERT_OK_AND_ASSIGN(Trace t, ReadTrace(path));
  EXPECT_EQ(t.values, TraceValues::kKeep);
  EXPECT_EQ(t.threads, 1u);
  ASSERT_EQ(t.records.size(), kEveryKind.size());
  for (size_t i = 0; i < kEveryKind.size(); ++i) {
    EXPECT_EQ(t.records[i].kind, kEveryKind[i]) << i;
    if (i > 0) {
      EXPECT_GE(t.records[i].time_us, t.records[i - 1].time_us);
    }
  }
  EXPECT_EQ(t.records[1].key, "tk1");
  EXPECT_EQ(t.records[2].key, "ta");
  EXPECT_EQ(t.records[2].limit, 10u);
  EXPECT_EQ(t.records[2].visited, 3u);
  EXPECT_FALSE(t.records[2].lower_bound.has_value());
  EXPECT_EQ(t.records[5].value, "value-t");
  EXPECT_EQ(t.records[5].value_size, 7u);
  EXPECT_EQ(ReplayValue(t, 5), "value-t");
  EXPECT_EQ(t.records[6].key, std::string("\0\xff", 2));
  EXPECT_EQ(t.records[6].value, "");
  EXPECT_EQ(t.records[7].key, "tk2");
  EXPECT_EQ(t.records[8].lower_bound, "lo");
  EXPECT_EQ(t.records[8].upper_bound, "up");
  EXPECT_EQ(t.records[12].checkpoint_mode, wal::CheckpointMode::kTruncate);
}

TEST(TraceTest, SyntheticKeepsLengthsAndEqualityNotBytes) {
  const std::string path = TempPath("synthetic.jkvtrace");
  JKV_ASSERT_OK_AND_ASSIGN(auto w, TraceWriter::Create(path, TraceValues::kSynthetic, 99));
  WriteEveryKind(*w, "t");
  JKV_ASSERT_OK(w->Close());
  JKV_ASSERT_OK_AND_ASSIGN(Trace t, ReadTrace(path));
  EXPECT_EQ(t.values, TraceValues::kSynthetic);
  ASSERT_EQ(t.records.size(), kEveryKind.size());
  // The put's key equals the get's (same original), differs from the original bytes.
  EXPECT_EQ(t.records[5].key, t.records[1].key);
  EXPECT_EQ(t.records[1].key.size(), 3u);
  EXPECT_NE(t.records[1].key, "tk1");
  EXPECT_NE(t.records[7].key, t.records[1].key);  // tk2 vs tk1
  EXPECT_EQ(t.records[5].value, "");              // not stored
  EXPECT_EQ(t.records[5].value_size, 7u);
  EXPECT_EQ(ReplayValue(t, 5).size(), 7u);
  EXPECT_EQ(t.records[8].lower_bound->size(), 2u);
  EXPECT_EQ(t.records[8].key, SyntheticKey("tb", 99));
  // The file holds no original key or value.
  const std::string bytes = Slurp(path);
  EXPECT_FALSE(absl::StrContains(bytes, "tk1"));
  EXPECT_FALSE(absl::StrContains(bytes, "value-t"));
}

TEST(TraceTest, SyntheticMappingIsABijectionPerLengthAndKeepsPrefixes) {
  // Every 2-byte key: 65536 distinct synthetic keys of length 2 (T2).
  std::set<std::string> seen;
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string k{static_cast<char>(a), static_cast<char>(b)};
      const std::string s = SyntheticKey(k, 5);
      ASSERT_EQ(s.size(), 2u);
      seen.insert(s);
    }
  }
  EXPECT_EQ(seen.size(), 65536u);
  EXPECT_EQ(SyntheticKey("user/17", 5), SyntheticKey("user/17", 5));
  EXPECT_NE(SyntheticKey("user/17", 5), SyntheticKey("user/17", 6));  // another seed
  EXPECT_EQ(SyntheticKey("user/17", 5).substr(0, 5), SyntheticKey("user/99", 5).substr(0, 5));
  EXPECT_EQ(SyntheticKey("", 5), "");
}

TEST(TraceTest, SeveralThreadsKeepTheirOwnOrder) {
  const std::string path = TempPath("threads.jkvtrace");
  JKV_ASSERT_OK_AND_ASSIGN(auto w, TraceWriter::Create(path, TraceValues::kKeep, 1));
  constexpr int kThreads = 4, kRounds = 300;  // several blocks of 64 KiB
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kRounds; ++r) {
        w->BeginWrite();
        w->Put(absl::StrCat("thread", i, "/", r), std::string(200, 'a' + i));
        w->Commit();
      }
    });
  }
  for (auto& t : threads) t.join();
  JKV_ASSERT_OK(w->Close());
  JKV_ASSERT_OK_AND_ASSIGN(Trace t, ReadTrace(path));
  EXPECT_EQ(t.threads, static_cast<uint32_t>(kThreads));
  ASSERT_EQ(t.records.size(), size_t{kThreads * kRounds * 3});
  // Each recorded thread: begin, put, commit in turn, its puts in order (T3).
  std::vector<int> next(kThreads, 0), phase(kThreads, 0);
  std::vector<std::string> owner(kThreads);
  for (const TraceRecord& r : t.records) {
    ASSERT_LT(r.thread, static_cast<uint32_t>(kThreads));
    const TraceKind want[] = {TraceKind::kBeginWrite, TraceKind::kPut, TraceKind::kCommit};
    ASSERT_EQ(r.kind, want[phase[r.thread]]);
    phase[r.thread] = (phase[r.thread] + 1) % 3;
    if (r.kind != TraceKind::kPut) continue;
    const std::string prefix = r.key.substr(0, r.key.find('/'));
    if (owner[r.thread].empty()) owner[r.thread] = prefix;
    ASSERT_EQ(prefix, owner[r.thread]);
    EXPECT_EQ(r.key, absl::StrCat(prefix, "/", next[r.thread]++));
    EXPECT_EQ(r.value.size(), 200u);
  }
  for (int n : next) EXPECT_EQ(n, kRounds);
}

std::string SmallTrace() {
  const std::string path = TempPath("small.jkvtrace");
  auto w = TraceWriter::Create(path, TraceValues::kKeep, 3);
  JKV_EXPECT_OK(w.status());
  WriteEveryKind(**w, "s");
  JKV_EXPECT_OK((*w)->Close());
  return Slurp(path);
}

// The offset an error names, or -1.
long NamedOffset(const absl::Status& s) {
  const std::string m(s.message());
  const size_t at = m.rfind("at offset ");
  if (at == std::string::npos) return -1;
  return std::stol(m.substr(at + 10));
}

TEST(TraceTest, EveryTruncationIsAnErrorNamingAnOffset) {
  const std::string bytes = SmallTrace();
  JKV_ASSERT_OK(ParseTrace(bytes, "small").status());
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::StatusOr<Trace> t = ParseTrace(absl::string_view(bytes).substr(0, n), "small");
    ASSERT_FALSE(t.ok()) << "cut at " << n;
    if (n >= 8) {  // shorter than the magic: "not a trace" needs no offset
      EXPECT_TRUE(absl::StrContains(t.status().message(), "trace small: ")) << t.status();
      const long at = NamedOffset(t.status());
      EXPECT_GE(at, 0) << t.status();
      EXPECT_LE(at, static_cast<long>(n)) << t.status();
    }
  }
}

TEST(TraceTest, EveryFlippedByteIsAnError) {
  const std::string bytes = SmallTrace();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    absl::StatusOr<Trace> t = ParseTrace(bad, "flip");
    ASSERT_FALSE(t.ok()) << "flip at " << i;
  }
  std::string bad = bytes;
  bad[kTraceHeaderBytes + kTraceBlockHeaderBytes + 2] ^= 1;  // the first record's payload
  absl::StatusOr<Trace> t = ParseTrace(bad, "flip");
  EXPECT_EQ(t.status().message(),
            absl::StrCat("trace flip: damaged block (checksum mismatch) at offset ",
                         kTraceHeaderBytes));
}

TEST(TraceTest, RefusesAnUnknownVersionOrFlagAndOtherFiles) {
  std::string bytes = SmallTrace();
  auto* h = reinterpret_cast<uint8_t*>(bytes.data());
  base::EncodeFixed16(h + 8, 2);
  base::EncodeFixed32(h + 12, static_cast<uint32_t>(base::Xxh3(h, 12, 0)));
  absl::StatusOr<Trace> t = ParseTrace(bytes, "v2");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t.status().message(),
            "trace v2: format version 2 is not known to this build (it reads version 1)");
  base::EncodeFixed16(h + 8, 1);
  base::EncodeFixed16(h + 10, 4);
  base::EncodeFixed32(h + 12, static_cast<uint32_t>(base::Xxh3(h, 12, 0)));
  t = ParseTrace(bytes, "f4");
  EXPECT_TRUE(absl::StrContains(t.status().message(), "unknown flags 0x4")) << t.status();
  t = ParseTrace("SQLite format 3\0....", "db");
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(t.status().message(), "not a journalkv trace"));
  EXPECT_EQ(ReadTrace(TempPath("missing.jkvtrace")).status().code(),
            absl::StatusCode::kNotFound);
}

std::vector<TraceKind> Kinds(const Trace& t) {
  std::vector<TraceKind> kinds;
  for (const TraceRecord& r : t.records) kinds.push_back(r.kind);
  return kinds;
}

TEST(TraceTest, DbRecordsEveryOperationOfTheHandle) {
  const std::string db_path = TempPath("recorded.db");
  const std::string trace_path = TempPath("recorded.jkvtrace");
  std::remove(db_path.c_str());
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kOff;
  o.record_path = trace_path;
  o.record_values = TraceValues::kKeep;
  {
    JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(db_path, o));
    JKV_ASSERT_OK(db->Put("a", "1"));                       // begin_write put commit
    JKV_ASSERT_OK(db->Get("a").status());                   // get
    JKV_ASSERT_OK_AND_ASSIGN(bool existed, db->Delete("zz"));  // begin_write delete rollback
    EXPECT_FALSE(existed);
    WriteBatch batch;
    batch.Put("b", "2");
    batch.Delete("a");
    JKV_ASSERT_OK(db->Write(batch));  // begin_write put delete commit
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto r, db->BeginRead());  // begin_read
      JKV_ASSERT_OK(r->Get("b").status());                // get
      IteratorOptions bounds;
      bounds.upper_bound = "c";
      JKV_ASSERT_OK_AND_ASSIGN(uint64_t n, r->Scan("", 10, [](auto, auto) { return true; },
                                               bounds));  // scan
      EXPECT_EQ(n, 1u);
    }  // end_read
    {
      JKV_ASSERT_OK_AND_ASSIGN(auto w, db->BeginWrite());  // begin_write
      JKV_ASSERT_OK(w->Put("c", "3"));                     // put
      EXPECT_EQ(w->Put(std::string(100000, 'k'), "x").code(),
                absl::StatusCode::kInvalidArgument);   // refused: not recorded
    }  // rollback
    JKV_ASSERT_OK(db->Checkpoint(CheckpointMode::kPassive).status());  // checkpoint
    EXPECT_EQ(db->Stats().trace_error, "");
    JKV_ASSERT_OK(db->Close());
  }
  JKV_ASSERT_OK_AND_ASSIGN(Trace t, ReadTrace(trace_path));
  using K = TraceKind;
  EXPECT_EQ(Kinds(t), (std::vector<K>{K::kBeginWrite, K::kPut, K::kCommit, K::kGet,
                                      K::kBeginWrite, K::kDelete, K::kRollback,
                                      K::kBeginWrite, K::kPut, K::kDelete, K::kCommit,
                                      K::kBeginRead, K::kGet, K::kScan, K::kEndRead,
                                      K::kBeginWrite, K::kPut, K::kRollback, K::kCheckpoint}));
  EXPECT_EQ(t.records[8].key, "b");
  EXPECT_EQ(t.records[8].value, "2");
  EXPECT_EQ(t.records[13].visited, 1u);
  EXPECT_EQ(t.records[13].limit, 10u);
  EXPECT_EQ(t.records[13].upper_bound, "c");
}

TEST(TraceTest, ARecordingThatCannotBeCreatedFailsOpen) {
  Options o;
  o.record_path = TempPath("no-such-dir/x.jkvtrace");
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(TempPath("unrecorded.db"), o);
  EXPECT_EQ(db.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(db.status().message(), "no-such-dir/x.jkvtrace"));
}

TEST(TraceTest, SeveralThreadsRecordThroughOneDb) {
  const std::string db_path = TempPath("threads.db");
  const std::string trace_path = TempPath("threads-db.jkvtrace");
  std::remove(db_path.c_str());
  Options o;
  o.journal_mode = JournalMode::kWal;
  o.sync = SyncLevel::kOff;
  o.record_path = trace_path;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Db> db, Db::Open(db_path, o));
  constexpr int kThreads = 4, kOps = 50;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kOps; ++r) {
        JKV_ASSERT_OK(db->Put(absl::StrCat(i, "/", r), "v"));
        JKV_ASSERT_OK(db->Get(absl::StrCat(i, "/", r)).status());
      }
    });
  }
  for (auto& t : threads) t.join();
  JKV_ASSERT_OK(db->Close());
  JKV_ASSERT_OK_AND_ASSIGN(Trace t, ReadTrace(trace_path));
  EXPECT_EQ(t.threads, static_cast<uint32_t>(kThreads));
  EXPECT_EQ(t.records.size(), size_t{kThreads * kOps * 4});
}

}  // namespace
}  // namespace journalkv
