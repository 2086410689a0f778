// Invariant checks. Abseil 20220623 has no absl/log, so journalkv has its own two:
//   JKV_CHECK(cond)  always on; prints file:line and aborts. Only where continuing would write
//                    wrong data. Never for anything a file or a caller controls: that is a Status.
//   JKV_DCHECK(cond) debug builds only (compiled out under NDEBUG), for internal invariants and
//                    the state tables' transitions. JKV_DCHECK_ALWAYS_ON keeps it in an
//                    optimized build: the sanitizer configurations (.bazelrc) set it, so CI's
//                    ASan and TSan tiers check every JKV_DCHECK.
#ifndef JOURNALKV_BASE_CHECK_H_
#define JOURNALKV_BASE_CHECK_H_

#include "absl/base/optimization.h"

namespace journalkv::base {
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);
}  // namespace journalkv::base

#define JKV_CHECK(cond)                                               \
  do {                                                                \
    if (ABSL_PREDICT_FALSE(!(cond))) {                                \
      ::journalkv::base::CheckFailed(__FILE__, __LINE__, #cond);      \
    }                                                                 \
  } while (0)

#if defined(NDEBUG) && !defined(JKV_DCHECK_ALWAYS_ON)
#define JKV_DCHECK_IS_ON 0
#define JKV_DCHECK(cond) \
  do {                   \
    if (false) {         \
      (void)(cond);      \
    }                    \
  } while (0)
#else
#define JKV_DCHECK_IS_ON 1
#define JKV_DCHECK(cond) JKV_CHECK(cond)
#endif

#endif  // JOURNALKV_BASE_CHECK_H_
