// WriteBatch: puts and deletes gathered in memory, then applied by Db::Write atomically in one
// write transaction and one commit (all of them or none). A batch is a plain value: build it on
// any thread, hand it to Db::Write from any thread (a Db takes writes from many threads at
// once; each Write is its own transaction). The operations apply in the order added, so a
// later Put of a key overrides an earlier one and a Delete after a Put removes it.
//
//   journalkv::WriteBatch batch;
//   batch.Put("apple", "red");
//   batch.Delete("banana");
//   JKV_RETURN_IF_ERROR(db->Write(batch));
//
// Thread-safety: a WriteBatch is not safe to change from several threads at once.
#ifndef JOURNALKV_ENGINE_WRITE_BATCH_H_
#define JOURNALKV_ENGINE_WRITE_BATCH_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace journalkv {

class WriteBatch {
 public:
  struct Op {
    bool is_delete = false;
    std::string key;
    std::string value;  // empty for a delete
  };

  void Put(absl::string_view key, absl::string_view value) {
    bytes_ += key.size() + value.size();
    ops_.push_back(Op{false, std::string(key), std::string(value)});
  }
  void Delete(absl::string_view key) {
    bytes_ += key.size();
    ops_.push_back(Op{true, std::string(key), std::string()});
  }
  void Clear() {
    ops_.clear();
    bytes_ = 0;
  }

  size_t Count() const { return ops_.size(); }
  size_t ApproximateBytes() const { return bytes_; }  // keys and values added up
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
  size_t bytes_ = 0;
};

}  // namespace journalkv

#endif  // JOURNALKV_ENGINE_WRITE_BATCH_H_
