// Helpers shared by the tests of btree/.
#ifndef JOURNALKV_BTREE_BTREE_TEST_UTIL_H_
#define JOURNALKV_BTREE_BTREE_TEST_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "btree/btree.h"
#include "btree/cursor.h"
#include "btree/mem_pages_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::btree {

// Runs the structure check with MemPages' freelist; the report's text when it is not clean.
inline std::string CheckProblems(MemPages& pages) {
  const std::vector<PageNo> free_pages = pages.FreePages();
  absl::StatusOr<CheckReport> report = BTree::Check(pages, free_pages);
  if (!report.ok()) return report.status().ToString();
  return report->ok() ? "" : report->ToString();
}

#define JKV_EXPECT_TREE_OK(pages) EXPECT_EQ(::journalkv::btree::CheckProblems(pages), "")
#define JKV_ASSERT_TREE_OK(pages) ASSERT_EQ(::journalkv::btree::CheckProblems(pages), "")

// Every key and value, in cursor order.
inline absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ScanAll(
    pager::PageReader& pages) {
  std::vector<std::pair<std::string, std::string>> out;
  Cursor c(pages);
  JKV_RETURN_IF_ERROR(c.SeekToFirst());
  while (c.Valid()) {
    JKV_ASSIGN_OR_RETURN(std::string value, c.value());
    out.emplace_back(std::string(c.key()), std::move(value));
    JKV_RETURN_IF_ERROR(c.Next());
  }
  return out;
}

using ::journalkv::testing::IsOkAndHolds;

// A key that sorts by i: "k" and i in 8 decimal digits.
inline std::string NumKey(int i) { return absl::StrFormat("k%08d", i); }

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_TEST_UTIL_H_
