#include "fuzz/fuzz_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/journal_format.h"
#include "pager/pager_options.h"
#include "log/wal_format.h"

namespace journalkv::fuzz {

void FuzzFail(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

Options FuzzOptions(vfs::FileSystem* fs, std::optional<JournalMode> mode) {
  Options o;
  o.file_system = fs;
  o.journal_mode = mode;
  o.page_size = kFuzzPageSize;
  o.cache_pages = 16;  // small enough that a big transaction spills
  o.busy_timeout = absl::Milliseconds(2);
  o.checkpoint_policy = "manual";
  o.wal2_switch_pages = 8;
  o.reader_slots = 4;
  return o;
}

std::map<std::string, std::string> BaseContent() {
  std::map<std::string, std::string> m;
  for (int i = 0; i < 40; ++i) {
    std::string key = absl::StrCat("key", i * 7 % 40);
    if (i % 5 == 0) key += std::string(i + 20, 'k');  // longer keys: interior separators
    // Empty, small, and values over one and several overflow pages (512-byte pages).
    const size_t sizes[] = {0, 3, 40, 600, 1300};
    m[key] = std::string(sizes[i % 5], static_cast<char>('a' + i % 26));
  }
  m[""] = "the empty key";
  m[std::string("\0\xff", 2)] = std::string("binary\0value", 12);
  return m;
}

absl::Status WriteBaseDb(vfs::MemFileSystem& fs, JournalMode mode) {
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!db.ok()) return db.status();
  // Written twice over, the second time deleting some keys, so that pages are freed.
  std::map<std::string, std::string> content = BaseContent();
  for (const auto& [k, v] : content) {
    absl::Status s = (*db)->Put(k, v + "old");
    if (!s.ok()) return s;
  }
  auto txn = (*db)->BeginWrite();
  if (!txn.ok()) return txn.status();
  for (int i = 0; i < 10; ++i) {
    absl::Status s = (*txn)->Put(absl::StrCat("gone", i), std::string(700, 'g'));
    if (!s.ok()) return s;
  }
  for (const auto& [k, v] : content) {
    absl::Status s = (*txn)->Put(k, v);
    if (!s.ok()) return s;
  }
  absl::Status s = (*txn)->Commit();
  if (!s.ok()) return s;
  txn->reset();
  for (int i = 0; i < 10; ++i) {
    auto d = (*db)->Delete(absl::StrCat("gone", i));
    if (!d.ok()) return d.status();
  }
  if (IsWalMode(mode)) {
    auto c = (*db)->Checkpoint(CheckpointMode::kTruncate);
    if (!c.ok()) return c.status();
  }
  return (*db)->Close();
}

const std::string& BaseDbFile(JournalMode mode) {
  static const std::string* files[4] = {nullptr, nullptr, nullptr, nullptr};  // by family
  const int family = static_cast<int>(pager::FamilyOf(mode));
  if (files[family] == nullptr) {
    FuzzFileSystem fs;
    absl::Status s = WriteBaseDb(fs, mode);
    if (!s.ok()) FuzzFail(absl::StrCat("building the base database: ", s.ToString()));
    files[family] = new std::string(ReadFile(fs, kDbPath));
  }
  return *files[family];
}

namespace {

// A log file is preallocated past its frames; the zeros there are dropped (to the end of the
// last frame that holds anything), so that the fixtures and seeds stay small.
std::string TrimLog(std::string log) {
  size_t end = log.find_last_not_of('\0');
  if (end == std::string::npos) return "";
  const uint64_t frame = wal::FrameSize(kFuzzPageSize);
  const uint64_t frames = end < wal::kWalHeaderSize ? 0 : (end - wal::kWalHeaderSize) / frame + 1;
  log.resize(std::min<uint64_t>(log.size(), wal::LogEnd(static_cast<uint32_t>(frames), kFuzzPageSize)));
  return log;
}

absl::StatusOr<LogFixture> BuildLogFixture(JournalMode mode) {
  FuzzFileSystem fs;
  WriteFile(fs, kDbPath, BaseDbFile(mode));
  LogFixture f;
  f.content = BaseContent();
  auto db = Db::Open(kDbPath, FuzzOptions(&fs, mode));
  if (!db.ok()) return db.status();
  for (int i = 0; i < 6; ++i) {
    auto txn = (*db)->BeginWrite();
    if (!txn.ok()) return txn.status();
    for (int j = 0; j < 3; ++j) {
      const std::string key = absl::StrCat("log", i, "-", j);
      const std::string value(j * 300 + i, static_cast<char>('A' + i));
      JKV_RETURN_IF_ERROR((*txn)->Put(key, value));
      f.content[key] = value;
    }
    const std::string gone = absl::StrCat("key", i);
    JKV_ASSIGN_OR_RETURN(bool existed, (*txn)->Delete(gone));
    (void)existed;
    f.content.erase(gone);
    JKV_RETURN_IF_ERROR((*txn)->Commit());
    // wal2: once the first log passes wal2_switch_pages, a checkpoint lets the writer move to
    // the other log, so that both hold frames.
    if (mode == JournalMode::kWal2 && i == 2) {
      JKV_RETURN_IF_ERROR((*db)->Checkpoint(CheckpointMode::kPassive).status());
    }
  }
  f.db = ReadFile(fs, kDbPath);
  f.wal = TrimLog(ReadFile(fs, std::string(kDbPath) + "-wal"));
  f.wal2 = TrimLog(ReadFile(fs, std::string(kDbPath) + "-wal2"));
  f.shm = ReadFile(fs, std::string(kDbPath) + "-shm");
  return f;
}

}  // namespace

const LogFixture& GetLogFixture(JournalMode mode) {
  static const LogFixture* fixtures[2] = {nullptr, nullptr};
  const int i = mode == JournalMode::kWal2 ? 1 : 0;
  if (fixtures[i] == nullptr) {
    auto f = BuildLogFixture(mode);
    if (!f.ok()) FuzzFail(absl::StrCat("building the log fixture: ", f.status().ToString()));
    fixtures[i] = new LogFixture(*std::move(f));
  }
  return *fixtures[i];
}

std::string ReadFile(vfs::FileSystem& fs, const std::string& path) {
  auto file = fs.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  if (!file.ok()) return "";
  auto size = (*file)->Size();
  if (!size.ok()) FuzzFail(size.status().ToString());
  std::string out(*size, '\0');
  absl::Status s = (*file)->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()),
                                                   out.size()));
  if (!s.ok()) FuzzFail(s.ToString());
  return out;
}

void WriteFile(vfs::FileSystem& fs, const std::string& path, absl::string_view bytes) {
  auto file = fs.Open(path, {vfs::OpenMode::kCreate, vfs::FileKind::kOther});
  if (!file.ok()) FuzzFail(file.status().ToString());
  absl::Status s = (*file)->Truncate(0);
  if (s.ok()) {
    s = (*file)->Write(0, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              bytes.size()));
  }
  if (!s.ok()) FuzzFail(s.ToString());
}

namespace {

// JKV_FUZZ_VERBOSE=1 prints why a read gave up (to tell an expected error from a wrong one
// when a finding is being looked at).
void Verbose(const char* what, const absl::Status& s) {
  static const bool verbose = std::getenv("JKV_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "fuzz: %s: %s\n", what, s.ToString().c_str());
}

// A corrupt tree may be big or cyclic; the checks stop after this many keys (none of the
// corpora's databases is near it, so a longer walk is itself suspicious but not wrong).
constexpr int kMaxKeys = 20000;

}  // namespace

std::optional<std::map<std::string, std::string>> ReadConsistent(Db& db, bool* healthy_out) {
  // Check() must return, whatever it finds. When it finds nothing wrong, every read must agree
  // with every other; when it reports damage, a tree sealed by a buggy or hostile writer may
  // send a Get down another path than a scan takes (the engine does not re-verify every
  // page's key order and bounds on each read), so then only the scan's own order is asked.
  auto check = db.Check();
  const bool healthy = check.ok() && check->ok();
  if (healthy_out != nullptr) *healthy_out = healthy;

  auto txn = db.BeginRead();
  if (!txn.ok()) {
    Verbose("BeginRead", txn.status());
    return std::nullopt;
  }
  std::map<std::string, std::string> content;
  std::vector<std::string> order;
  bool complete = true;
  {
    auto it = (*txn)->NewIterator();
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string key(it->key());
      if (!order.empty() && !(order.back() < key)) {
        FuzzFail(absl::StrCat("iteration not strictly increasing: \"",
                              absl::CEscape(order.back()), "\" then \"", absl::CEscape(key),
                              "\""));
      }
      auto value = it->value();
      if (!value.ok()) {
        Verbose("value", value.status());
        complete = false;
        break;
      }
      order.push_back(key);
      content[key] = *value;
      if (order.size() >= kMaxKeys) {
        complete = false;
        break;
      }
    }
    if (!it->status().ok()) {
      Verbose("iteration", it->status());
      complete = false;
    }
  }
  if (!healthy) return complete ? std::optional(content) : std::nullopt;
  // Backwards: the same keys in reverse, as far as both got.
  if (complete) {
    auto it = (*txn)->NewIterator();
    size_t i = order.size();
    for (it->SeekToLast(); it->Valid(); it->Prev()) {
      if (i == 0) FuzzFail("backward iteration yields more keys than forward");
      --i;
      if (it->key() != order[i]) {
        FuzzFail(absl::StrCat("backward iteration disagrees at \"", absl::CEscape(order[i]),
                              "\": \"", absl::CEscape(it->key()), "\""));
      }
    }
    if (it->status().ok() && i != 0) {
      FuzzFail(absl::StrCat("backward iteration ended early with ", i, " keys left"));
    }
  }
  // Keys met (two dozen spread over them, which keeps an execution fast): Get returns its
  // value; Seek lands on it; the key just after it, when not the next key, is missing.
  const size_t stride = std::max<size_t>(1, order.size() / 24);
  for (size_t i = 0; i < order.size(); i += stride) {
    auto got = (*txn)->Get(order[i]);
    if (!got.ok()) {
      complete = false;
      continue;
    }
    if (!got->has_value() || **got != content[order[i]]) {
      FuzzFail(absl::StrCat("Get(\"", absl::CEscape(order[i]),
                            "\") disagrees with the iteration: ",
                            got->has_value() ? "another value" : "missing"));
    }
    auto it = (*txn)->NewIterator();
    it->Seek(order[i]);
    if (it->Valid() && it->key() != order[i]) {
      FuzzFail(absl::StrCat("Seek(\"", absl::CEscape(order[i]), "\") lands on \"",
                            absl::CEscape(it->key()), "\""));
    }
    if (complete) {
      // A key just after this one (and before the next) is absent.
      std::string between = order[i] + std::string(1, '\0');
      if (i + 1 < order.size() && between == order[i + 1]) continue;
      auto absent = (*txn)->Get(between);
      if (absent.ok() && absent->has_value()) {
        FuzzFail(absl::StrCat("Get(\"", absl::CEscape(between),
                              "\") finds a key the iteration did not"));
      }
    }
  }
  if (complete) {
    auto count = (*txn)->Count();
    if (count.ok() && *count != order.size()) {
      FuzzFail(absl::StrCat("Count() ", *count, " but the iteration found ", order.size()));
    }
  }
  if (!complete) return std::nullopt;
  return content;
}

void ExpectContent(const std::map<std::string, std::string>& got,
                   const std::map<std::string, std::string>& want, const std::string& what) {
  if (got == want) return;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) FuzzFail(absl::StrCat(what, ": key \"", absl::CEscape(k), "\" lost"));
    if (it->second != v) {
      FuzzFail(absl::StrCat(what, ": key \"", absl::CEscape(k), "\" has a wrong value"));
    }
  }
  for (const auto& [k, v] : got) {
    if (!want.contains(k)) {
      FuzzFail(absl::StrCat(what, ": key \"", absl::CEscape(k), "\" appeared"));
    }
  }
  FuzzFail(what);
}

namespace {

uint8_t* Bytes(std::string& s) { return reinterpret_cast<uint8_t*>(s.data()); }

}  // namespace

void ResealDbFile(std::string& file) {
  uint32_t page_size = kFuzzPageSize;
  if (file.size() >= pager::kHeaderPrefixSize) {
    const uint32_t p = base::DecodeFixed32(Bytes(file) + 20);
    if (pager::IsValidPageSize(p)) page_size = p;
  }
  for (uint64_t off = 0; off + page_size <= file.size(); off += page_size) {
    pager::SealPage(PageNo(static_cast<uint32_t>(off / page_size + 1)),
                    absl::MakeSpan(Bytes(file) + off, page_size));
  }
}

void ResealJournal(std::string& file) {
  if (file.size() < pager::kJournalHeaderSize) return;
  uint8_t* p = Bytes(file);
  base::EncodeFixed64(p + 40, base::Xxh3(p, 40, 0));
  const uint32_t page_size = base::DecodeFixed32(p + 12);
  const uint64_t nonce = base::DecodeFixed64(p + 16);
  uint64_t off = base::DecodeFixed64(p + 32);
  if (!pager::IsValidPageSize(page_size)) return;
  // Sizes are compared as "fits in what is left", never as off + size, which can wrap.
  while (off < file.size() && file.size() - off >= 16) {
    const uint64_t left = file.size() - off;
    const uint32_t kind = base::DecodeFixed32(p + off + 4);
    uint64_t body;
    if (kind == pager::kRecordKindSeal) {
      const uint64_t n = base::DecodeFixed32(p + off + 8);
      body = 16 + pager::kSealEntrySize * n;
    } else {
      body = pager::kRecordPrefixSize + page_size;
      // The page image's own trailer, as the database file would carry it.
      const uint32_t page_no = base::DecodeFixed32(p + off);
      if (body <= left && page_no != 0) {
        pager::SealPage(PageNo(page_no), absl::MakeSpan(p + off + 8, page_size));
      }
    }
    if (body > left || left - body < 8) return;
    base::EncodeFixed64(p + off + body, base::Xxh3(p + off, body, nonce));
    off += body + 8;
  }
}

void ResealWal(std::string& file) {
  if (file.size() < wal::kWalHeaderSize) return;
  uint8_t* p = Bytes(file);
  uint64_t prev = base::Xxh3(p, 24, 0);
  base::EncodeFixed64(p + 24, prev);
  const uint32_t page_size = base::DecodeFixed32(p + 8);
  if (!pager::IsValidPageSize(page_size)) return;
  const uint32_t frames = wal::FramesInFile(file.size(), page_size);
  for (uint32_t f = 1; f <= frames; ++f) {
    const auto header = absl::MakeSpan(p + wal::FrameHeaderOffset(f, page_size),
                                       wal::kFrameHeaderSize);
    auto image = absl::MakeSpan(p + wal::FrameImageOffset(f, page_size), page_size);
    wal::FrameHeader h = wal::DecodeFrameHeader(header);
    if (h.page_no != 0) pager::SealPage(PageNo(h.page_no), image);
    h.image_sum = wal::StoredImageChecksum(image);
    wal::RechainFrameHeader(h, prev, header);
    prev = h.checksum;
  }
}

std::string TakePart(absl::string_view& data) {
  if (data.size() < 2) {
    std::string rest(data);
    data = {};
    return rest;
  }
  const size_t n = std::min<size_t>(
      data.size() - 2, base::DecodeFixed16(reinterpret_cast<const uint8_t*>(data.data())));
  std::string part(data.substr(2, n));
  data.remove_prefix(2 + n);
  return part;
}

}  // namespace journalkv::fuzz
