// The structure check of the B+tree: walks every page of the tree and its overflow chains and
// reports what is wrong, page by page. Used by tests after every batch of operations, by the
// `jkv check` command and by the engine's integrity check.
//
// Thread-safety: as the transaction's (one thread at a time).
#ifndef JOURNALKV_BTREE_BTREE_CHECK_H_
#define JOURNALKV_BTREE_BTREE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"
#include "pager/page_access.h"

namespace journalkv::btree {

struct CheckProblem {
  PageNo page;  // the page the problem is about
  std::string message;
};

struct CheckReport {
  // The problems found, at most kMaxKept of them (problem_count counts them all).
  static constexpr size_t kMaxKept = 1000;
  std::vector<CheckProblem> problems;
  uint64_t problem_count = 0;

  // What the walk saw.
  uint64_t keys = 0;
  int depth = 0;  // levels of the tree: 0 for an empty tree, 1 for a root leaf
  uint32_t leaf_pages = 0;
  uint32_t interior_pages = 0;
  uint32_t overflow_pages = 0;
  uint32_t free_pages = 0;
  uint64_t free_bytes = 0;  // free space inside leaf and interior pages

  bool ok() const { return problem_count == 0; }
  // "ok: ..." with the counts, or one line per problem kept.
  std::string ToString() const;
};

// Checks the tree whose root is in meta slot 0 of `pages`:
//  - every leaf and interior page: type, header, cells inside the content area and not
//    overlapping, cell sizes plus garbage_bytes adding up to the content area, keys strictly
//    increasing and within the bounds the parent gives the page, interior pages with at least
//    one separator, leaves other than the root not empty;
//  - all leaves at the same depth;
//  - every overflow chain: page types, and exactly as long as its value needs;
//  - every page 2..page_count used exactly once: by the tree, by an overflow chain, or listed in
//    `freelist_pages` (the pager's free pages, trunk pages included).
// A page that cannot be read because it is damaged (DataLoss) is a problem too. Other errors of
// the pager (I/O) end the check and are returned.
absl::StatusOr<CheckReport> CheckTree(pager::PageReader& pages,
                                      absl::Span<const PageNo> freelist_pages);

}  // namespace journalkv::btree

#endif  // JOURNALKV_BTREE_BTREE_CHECK_H_
