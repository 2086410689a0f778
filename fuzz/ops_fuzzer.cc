// Fuzz target 5: sequences of operations decoded from the fuzzer bytes, applied to a database
// on MemFileSystem and to a std::map model, in every journal mode. Byte 0 chooses the mode
// and the sync level; then each operation is one byte (the operation) and its arguments:
//   put k v, delete k, get k (autocommit, or inside the open write transaction),
//   scan (the whole database, forwards, and a Seek), begin, commit, rollback (of the write
//   transaction), checkpoint (its mode), reopen (close and open again), snapshot (WAL modes:
//   a second connection begins a read transaction and keeps it; its reads must go on seeing
//   what was committed then, whatever the first connection writes and checkpoints).
// Nothing fails on a MemFileSystem except by the API's own rules (an oversized key is
// InvalidArgument and changes nothing; a checkpoint may be busy while a snapshot is held), so
// any other error is a finding, as is any read that differs from the model.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_util.h"
#include "vfs/mem_fs.h"

namespace journalkv::fuzz {
namespace {

using Model = std::map<std::string, std::string>;

class Input {
 public:
  Input(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Keys from a small space, so that operations meet each other's keys; one in 64 oversized.
std::string DecodeKey(Input& in) {
  const uint8_t b = in.Byte();
  if (b == 0xFF) return std::string(400, 'K');  // over MaxKeySize at any page size here
  std::string key = absl::StrCat("k", b % 48);
  if (b >= 0xC0) key += std::string(b - 0xC0, 'x');  // up to 62 more bytes
  return key;
}

// Values from empty to several overflow pages.
std::string DecodeValue(Input& in) {
  const uint8_t b = in.Byte();
  const size_t sizes[] = {0, 1, 10, 100, 300, 480, 1000, 3000};
  return std::string(sizes[b % 8] + b / 8, static_cast<char>('a' + b % 26));
}

void Must(const absl::Status& s, const std::string& what) {
  if (!s.ok()) FuzzFail(absl::StrCat(what, ": ", s.ToString()));
}

void ExpectScan(Iterator& it, const Model& model, const std::string& what) {
  auto m = model.begin();
  for (it.SeekToFirst(); it.Valid(); it.Next(), ++m) {
    if (m == model.end()) FuzzFail(absl::StrCat(what, ": extra key ", absl::CEscape(it.key())));
    if (it.key() != m->first) {
      FuzzFail(absl::StrCat(what, ": key ", absl::CEscape(it.key()), " where the model has ",
                            absl::CEscape(m->first)));
    }
    auto v = it.value();
    Must(v.status(), what);
    if (*v != m->second) FuzzFail(absl::StrCat(what, ": wrong value of ", m->first));
  }
  Must(it.status(), what);
  if (m != model.end()) FuzzFail(absl::StrCat(what, ": key ", m->first, " missing"));
}

void ExpectGet(const absl::StatusOr<std::optional<std::string>>& got, const Model& model,
               const std::string& key, const std::string& what) {
  Must(got.status(), what);
  auto m = model.find(key);
  if (m == model.end() ? got->has_value() : (!got->has_value() || **got != m->second)) {
    FuzzFail(absl::StrCat(what, ": Get(", key, ") disagrees with the model"));
  }
}

bool Oversized(const std::string& key) { return key.size() > 300; }

class Run {
 public:
  Run(JournalMode mode, SyncLevel sync) : mode_(mode), options_(FuzzOptions(&fs_, mode)) {
    options_.sync = sync;
    Open();
  }
  ~Run() {
    txn_.reset();
    EndSnapshot();
    if (db_ != nullptr) Must(db_->Close(), "final close");
  }

  void Step(Input& in) {
    const uint8_t op = in.Byte() % 10;
    switch (op) {
      case 0: {  // put
        const std::string key = DecodeKey(in), value = DecodeValue(in);
        absl::Status s = txn_ ? txn_->Put(key, value) : db_->Put(key, value);
        if (Oversized(key)) {
          if (s.code() != absl::StatusCode::kInvalidArgument) FuzzFail("oversized key accepted");
          break;
        }
        Must(s, "put");
        (txn_ ? pending_ : committed_)[key] = value;
        break;
      }
      case 1: {  // delete
        const std::string key = DecodeKey(in);
        auto existed = txn_ ? txn_->Delete(key) : db_->Delete(key);
        if (Oversized(key)) break;  // an error or false: either way nothing changes
        Must(existed.status(), "delete");
        Model& m = txn_ ? pending_ : committed_;
        if (*existed != m.contains(key)) FuzzFail("Delete's answer disagrees with the model");
        m.erase(key);
        break;
      }
      case 2: {  // get
        const std::string key = DecodeKey(in);
        if (Oversized(key)) break;
        ExpectGet(txn_ ? txn_->Get(key) : db_->Get(key), txn_ ? pending_ : committed_, key,
                  "get");
        break;
      }
      case 3: {  // scan
        const std::string from = DecodeKey(in);
        if (txn_) {
          auto it = txn_->NewIterator();
          ExpectScan(*it, pending_, "scan in the write transaction");
          SeekCheck(*it, pending_, from);
        } else {
          auto r = db_->BeginRead();
          Must(r.status(), "begin read");
          auto it = (*r)->NewIterator();
          ExpectScan(*it, committed_, "scan");
          SeekCheck(*it, committed_, from);
          auto count = (*r)->Count();
          Must(count.status(), "count");
          if (*count != committed_.size()) FuzzFail("Count disagrees with the model");
        }
        break;
      }
      case 4:  // begin
        if (!txn_) {
          auto t = db_->BeginWrite();
          Must(t.status(), "begin write");
          txn_ = std::move(*t);
          pending_ = committed_;
        }
        break;
      case 5:  // commit
        if (txn_) {
          Must(txn_->Commit(), "commit");
          txn_.reset();
          committed_ = pending_;
        }
        break;
      case 6:  // rollback
        if (txn_) {
          Must(txn_->Rollback(), "rollback");
          txn_.reset();
        }
        break;
      case 7: {  // checkpoint
        const CheckpointMode modes[] = {CheckpointMode::kPassive, CheckpointMode::kFull,
                                        CheckpointMode::kRestart, CheckpointMode::kTruncate};
        auto c = db_->Checkpoint(modes[in.Byte() % 4]);
        if (!IsWalMode(mode_)) {
          if (c.status().code() != absl::StatusCode::kFailedPrecondition) {
            FuzzFail("a checkpoint in a rollback mode did not fail");
          }
        } else if (!c.ok() && !absl::StrContains(c.status().message(), "busy")) {
          Must(c.status(), "checkpoint");
        }
        break;
      }
      case 8:  // reopen
        txn_.reset();
        EndSnapshot();
        Must(db_->Close(), "close");
        db_.reset();
        Open();
        break;
      case 9:  // snapshot
        if (!IsWalMode(mode_)) break;
        if (snapshot_ != nullptr) {
          auto it = snapshot_->NewIterator();
          ExpectScan(*it, snapshot_model_, "scan of a held snapshot");
          EndSnapshot();
        } else {
          auto other = Db::Open(kDbPath, options_);
          Must(other.status(), "open of a second connection");
          other_ = std::move(*other);
          auto r = other_->BeginRead();
          Must(r.status(), "begin read on the second connection");
          snapshot_ = std::move(*r);
          snapshot_model_ = committed_;
        }
        break;
    }
  }

 private:
  void Open() {
    auto db = Db::Open(kDbPath, options_);
    Must(db.status(), "open");
    db_ = std::move(*db);
  }
  void EndSnapshot() {
    snapshot_.reset();
    if (other_ != nullptr) Must(other_->Close(), "close of the second connection");
    other_.reset();
  }
  static void SeekCheck(Iterator& it, const Model& model, const std::string& from) {
    if (Oversized(from)) return;
    it.Seek(from);
    auto m = model.lower_bound(from);
    if (m == model.end() ? it.Valid() : (!it.Valid() || it.key() != m->first)) {
      FuzzFail(absl::StrCat("Seek(", from, ") disagrees with the model"));
    }
  }

  JournalMode mode_;
  FuzzFileSystem fs_;
  Options options_;
  std::unique_ptr<Db> db_;
  std::unique_ptr<WriteTransaction> txn_;
  Model committed_, pending_;
  std::unique_ptr<Db> other_;
  std::unique_ptr<ReadTransaction> snapshot_;
  Model snapshot_model_;
};

}  // namespace
}  // namespace journalkv::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace journalkv::fuzz;
  using journalkv::JournalMode;
  using journalkv::SyncLevel;
  if (size == 0) return 0;
  Input in(data, size);
  const uint8_t config = in.Byte();
  const JournalMode modes[] = {JournalMode::kDelete, JournalMode::kTruncate,
                               JournalMode::kPersist, JournalMode::kMemory,
                               JournalMode::kOff,    JournalMode::kWal,
                               JournalMode::kWal2};
  const SyncLevel syncs[] = {SyncLevel::kOff, SyncLevel::kNormal, SyncLevel::kFull,
                             SyncLevel::kExtra};
  {
    // Atomic takes the top of the config byte (0xE0 and up), so that the inputs of the corpus
    // below it keep their modes.
    Run run(config >= 0xE0 ? JournalMode::kAtomic : modes[config % 7], syncs[(config / 7) % 4]);
    // A bound on the operations keeps every input fast (a reopen or a big value costs more).
    for (int ops = 0; ops < 400 && !in.empty(); ++ops) run.Step(in);
  }
  return 0;
}
