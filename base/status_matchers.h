// Test-only gMock matchers for absl::Status and absl::StatusOr (Abseil 20220623 has none).
//   EXPECT_THAT(s, IsOk());
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kDataLoss, "page 7"));
//   JKV_ASSERT_OK_AND_ASSIGN(auto v, Foo());
#ifndef JOURNALKV_BASE_STATUS_MATCHERS_H_
#define JOURNALKV_BASE_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, substr,
           "has code " + absl::StatusCodeToString(code) + " and a message containing \"" +
               std::string(substr) + "\"") {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code && s.message().find(substr) != absl::string_view::npos;
}

// A StatusOr that is OK and whose value matches `m` (a matcher, or a value to equal).
MATCHER_P(IsOkAndHolds, m, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(m, *arg, result_listener);
}

}  // namespace journalkv::testing

#define JKV_ASSERT_OK(expr) ASSERT_THAT((expr), ::journalkv::testing::IsOk())
#define JKV_EXPECT_OK(expr) EXPECT_THAT((expr), ::journalkv::testing::IsOk())

#define JKV_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  JKV_ASSERT_OK_AND_ASSIGN_IMPL_(JKV_MATCHERS_CONCAT_(jkv_or_, __LINE__), lhs, expr)
#define JKV_MATCHERS_CONCAT_INNER_(a, b) a##b
#define JKV_MATCHERS_CONCAT_(a, b) JKV_MATCHERS_CONCAT_INNER_(a, b)
#define JKV_ASSERT_OK_AND_ASSIGN_IMPL_(var, lhs, expr)           \
  auto var = (expr);                                             \
  ASSERT_TRUE(var.ok()) << var.status().ToString();              \
  lhs = std::move(var).value()

#endif  // JOURNALKV_BASE_STATUS_MATCHERS_H_
