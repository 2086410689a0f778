#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/types.h"
#include "gtest/gtest.h"

namespace journalkv {
namespace {

using ::journalkv::testing::IsOk;
using ::journalkv::testing::StatusIs;

TEST(BackoffTest, StepsDoubleFromTheFirstUpToTheCap) {
  base::Backoff wait(absl::InfiniteFuture(), absl::Microseconds(100));
  EXPECT_EQ(wait.Step(), absl::Microseconds(20));
  EXPECT_EQ(wait.Step(), absl::Microseconds(40));
  EXPECT_EQ(wait.Step(), absl::Microseconds(80));
  EXPECT_EQ(wait.Step(), absl::Microseconds(100));
  EXPECT_EQ(wait.Step(), absl::Microseconds(100));
  wait.SetNext(absl::Microseconds(500));  // a yield longer than the cap, once
  EXPECT_EQ(wait.Step(), absl::Microseconds(500));
  EXPECT_EQ(wait.Step(), absl::Microseconds(100));
  EXPECT_FALSE(wait.Expired());
}

TEST(BackoffTest, AFixedStepAndAnExpiredDeadline) {
  base::Backoff wait(absl::Now() - absl::Seconds(1), absl::Microseconds(200),
                     absl::Microseconds(200));
  EXPECT_TRUE(wait.Expired());
  EXPECT_EQ(wait.Step(), absl::Microseconds(200));
  EXPECT_EQ(wait.Step(), absl::Microseconds(200));
}

TEST(EndianTest, EncodesLittleEndianByteByByte) {
  std::array<uint8_t, 8> b{};
  base::EncodeFixed32(b.data(), 0x11223344u);
  EXPECT_EQ(b[0], 0x44);
  EXPECT_EQ(b[3], 0x11);
  EXPECT_EQ(base::DecodeFixed32(b.data()), 0x11223344u);
  base::EncodeFixed64(b.data(), 0x0102030405060708ull);
  EXPECT_EQ(b[0], 0x08);
  EXPECT_EQ(b[7], 0x01);
  EXPECT_EQ(base::DecodeFixed64(b.data()), 0x0102030405060708ull);
  base::EncodeFixed16(b.data(), 0xbeef);
  EXPECT_EQ(b[0], 0xef);
  EXPECT_EQ(base::DecodeFixed16(b.data()), 0xbeef);
}

TEST(HashTest, SeedChangesTheChecksum) {
  const char data[] = "journalkv";
  EXPECT_EQ(base::Xxh3(data, 9, 1), base::Xxh3(data, 9, 1));
  EXPECT_NE(base::Xxh3(data, 9, 1), base::Xxh3(data, 9, 2));
  // A known answer of XXH3-64 (empty input, seed 0) guards against a wrong library version.
  EXPECT_EQ(base::Xxh3("", 0, 0), 0x2D06800538D394C2ull);
}

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError("odd");
  return x / 2;
}

absl::Status Quarter(int x, int* out) {
  JKV_ASSIGN_OR_RETURN(int h, Half(x));
  JKV_ASSIGN_OR_RETURN(*out, Half(h));
  return absl::OkStatus();
}

TEST(StatusMacrosTest, PropagateTheFirstError) {
  int out = 0;
  EXPECT_THAT(Quarter(8, &out), IsOk());
  EXPECT_EQ(out, 2);
  EXPECT_THAT(Quarter(6, &out), StatusIs(absl::StatusCode::kInvalidArgument, "odd"));
}

TEST(TypesTest, PageNumbersCompareAndHash) {
  EXPECT_LT(PageNo(1), PageNo(2));
  EXPECT_EQ(PageNo(3).value(), 3u);
  EXPECT_EQ(std::hash<PageNo>()(PageNo(5)), std::hash<PageNo>()(PageNo(5)));
}

}  // namespace
}  // namespace journalkv
