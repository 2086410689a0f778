#include <array>
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "base/backoff.h"
#include "base/compare.h"
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
  // At an odd address too (cells and frame headers are not aligned).
  std::array<uint8_t, 16> u{};
  base::EncodeFixed32(u.data() + 3, 0xa1b2c3d4u);
  EXPECT_EQ(u[3], 0xd4);
  EXPECT_EQ(u[6], 0xa1);
  EXPECT_EQ(base::DecodeFixed32(u.data() + 3), 0xa1b2c3d4u);
  base::EncodeFixed64(u.data() + 5, 0x1122334455667788ull);
  EXPECT_EQ(u[5], 0x88);
  EXPECT_EQ(u[12], 0x11);
  EXPECT_EQ(base::DecodeFixed64(u.data() + 5), 0x1122334455667788ull);
  EXPECT_EQ(base::DecodeFixed16(u.data() + 9), 0x3344);
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

int Sign(int v) { return (v > 0) - (v < 0); }

TEST(CompareBytesTest, OrdersAsMemcmpThenLength) {
  // Unsigned bytes (0x80 and 0xff after 0x7f), a prefix first, every length around the
  // 8- and 4-byte steps, and the first difference at every position of a word.
  const std::string high = "\xff";
  EXPECT_LT(base::CompareBytes("\x7f", "\x80"), 0);
  EXPECT_GT(base::CompareBytes(high, "\x01"), 0);
  EXPECT_LT(base::CompareBytes("abc", "abcd"), 0);
  EXPECT_EQ(base::CompareBytes("", ""), 0);
  EXPECT_LT(base::CompareBytes("", std::string(1, '\0')), 0);
  std::mt19937 rng(7);
  for (int round = 0; round < 200000; ++round) {
    // Lengths on both sides of the inline limit (kCompareInlineBytes).
    const size_t na = rng() % 41;
    const size_t nb = rng() % 4 == 0 ? na : rng() % 41;
    std::string a(na, '\0');
    for (char& c : a) c = static_cast<char>(rng() % 3 == 0 ? rng() : 'k');
    std::string b = a.substr(0, std::min(na, nb));
    b.resize(nb, 'k');
    if (!b.empty() && rng() % 2 == 0) b[rng() % b.size()] = static_cast<char>(rng());
    ASSERT_EQ(Sign(base::CompareBytes(a, b)), Sign(absl::string_view(a).compare(b)))
        << absl::CHexEscape(a) << " vs " << absl::CHexEscape(b);
  }
}

TEST(TypesTest, PageNumbersCompareAndHash) {
  EXPECT_LT(PageNo(1), PageNo(2));
  EXPECT_EQ(PageNo(3).value(), 3u);
  EXPECT_EQ(std::hash<PageNo>()(PageNo(5)), std::hash<PageNo>()(PageNo(5)));
}

}  // namespace
}  // namespace journalkv
