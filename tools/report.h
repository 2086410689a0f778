// What `jkv info` and `jkv stats` print (README, "CLI"): named values in a fixed order, as
// "name value" lines or as one JSON object (--json; the shell's `stats` answers with it, one
// line). Strings are printed as OneLine escapes them in text, and JSON-escaped in JSON.
//
// Thread-safety: a Report is used by one thread.
#ifndef JOURNALKV_TOOLS_REPORT_H_
#define JOURNALKV_TOOLS_REPORT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/db.h"
#include "vfs/vfs.h"

namespace journalkv::tools {

class Report {
 public:
  void Add(absl::string_view name, uint64_t value) { fields_.emplace_back(name, value); }
  void Add(absl::string_view name, double value) { fields_.emplace_back(name, value); }
  void Add(absl::string_view name, bool value) { fields_.emplace_back(name, value); }
  void Add(absl::string_view name, std::string value) {
    fields_.emplace_back(name, std::move(value));
  }
  // Disambiguates the other integer types (uint32_t, int) towards uint64_t.
  template <typename T>
  void AddInt(absl::string_view name, T value) {
    fields_.emplace_back(name, static_cast<uint64_t>(value));
  }

  // "name value\n" per field; a bool is yes or no.
  std::string Text() const;
  // {"name":value,...} on one line, without a newline; a double has 3 decimals.
  std::string Json() const;

 private:
  using Value = std::variant<uint64_t, double, bool, std::string>;
  std::vector<std::pair<std::string, Value>> fields_;
};

// `jkv info`: the database's state (pages, keys, the log's) and this invocation's settings.
absl::StatusOr<Report> InfoReport(Db& db, vfs::FileSystem& fs);

// `jkv stats`: every DbStats counter of this handle, I/O per file kind included.
Report StatsReport(const DbStats& stats);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_REPORT_H_
