#include "tools/tokens.h"

#include <string>

#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace journalkv::tools {
namespace {

using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;

std::string AllBytes() {
  std::string s;
  for (int c = 0; c < 256; ++c) s.push_back(static_cast<char>(c));
  return s;
}

TEST(EncodeTokenTest, PrintableBytesStandForThemselves) {
  EXPECT_EQ(EncodeToken("user:1/a~b!"), "user:1/a~b!");
  EXPECT_EQ(EncodeToken(""), "");
}

TEST(EncodeTokenTest, EveryOtherByteIsLowerCaseHexEscape) {
  EXPECT_EQ(EncodeToken(std::string("a b\0\n\\\x7f\xff", 8)), "a\\x20b\\x00\\x0a\\x5c\\x7f\\xff");
}

TEST(EncodeTokenTest, OutputHasOnlyPlainBytes) {
  for (char c : EncodeToken(AllBytes())) {
    EXPECT_GE(static_cast<unsigned char>(c), 0x21);
    EXPECT_LE(static_cast<unsigned char>(c), 0x7e);
  }
}

TEST(DecodeTokenTest, RoundTripsEveryByte) {
  const std::string all = AllBytes();
  JKV_ASSERT_OK_AND_ASSIGN(std::string decoded, DecodeToken(EncodeToken(all)));
  EXPECT_EQ(decoded, all);
  JKV_ASSERT_OK_AND_ASSIGN(std::string empty, DecodeToken(""));
  EXPECT_EQ(empty, "");
}

TEST(DecodeTokenTest, AcceptsUpperCaseHexAndEscapedPlainBytes) {
  JKV_ASSERT_OK_AND_ASSIGN(std::string s, DecodeToken("\\xFF\\x2d-k\\x41"));
  EXPECT_EQ(s, "\xff--kA");
}

TEST(DecodeTokenTest, RejectsUnknownEscape) {
  EXPECT_THAT(DecodeToken("ab\\q"), StatusIs(absl::StatusCode::kInvalidArgument,
                                             "bad escape at offset 2: '\\' followed by 'q'"));
  EXPECT_THAT(DecodeToken("\\\\"),
              StatusIs(absl::StatusCode::kInvalidArgument, "followed by 0x5c"));
  EXPECT_THAT(DecodeToken("\\n"), StatusIs(absl::StatusCode::kInvalidArgument, "'n'"));
}

TEST(DecodeTokenTest, RejectsShortOrNonHexEscape) {
  EXPECT_THAT(DecodeToken("a\\x4"), StatusIs(absl::StatusCode::kInvalidArgument, "two hex digits"));
  EXPECT_THAT(DecodeToken("\\x"), StatusIs(absl::StatusCode::kInvalidArgument, "two hex digits"));
  EXPECT_THAT(DecodeToken("\\xZZ"), StatusIs(absl::StatusCode::kInvalidArgument, "two hex digits"));
  EXPECT_THAT(DecodeToken("\\x4g"), StatusIs(absl::StatusCode::kInvalidArgument, "two hex digits"));
}

TEST(DecodeTokenTest, RejectsTrailingBackslash) {
  EXPECT_THAT(DecodeToken("abc\\"),
              StatusIs(absl::StatusCode::kInvalidArgument, "offset 3: token ends with '\\'"));
}

TEST(DecodeTokenTest, RejectsRawBytesThatMustBeEscaped) {
  EXPECT_THAT(DecodeToken("a b"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           "byte 0x20 at offset 1 must be escaped as \\x20"));
  EXPECT_THAT(DecodeToken("a\tb"), StatusIs(absl::StatusCode::kInvalidArgument, "0x09"));
  EXPECT_THAT(DecodeToken(std::string("\0", 1)),
              StatusIs(absl::StatusCode::kInvalidArgument, "0x00"));
  EXPECT_THAT(DecodeToken("\xff"), StatusIs(absl::StatusCode::kInvalidArgument, "\\xff"));
}

TEST(DecodeTokenTest, ErrorNeverRepeatsRawBytes) {
  absl::StatusOr<std::string> s = DecodeToken(std::string("\n\\\n", 3));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message().find('\n'), absl::string_view::npos) << s.status();
}

TEST(SplitFieldsTest, SplitsAtEverySingleSpace) {
  EXPECT_THAT(SplitFields("put k v"), ElementsAre("put", "k", "v"));
  EXPECT_THAT(SplitFields("put  v"), ElementsAre("put", "", "v"));
  EXPECT_THAT(SplitFields("get k "), ElementsAre("get", "k", ""));
  EXPECT_THAT(SplitFields("count"), ElementsAre("count"));
}

TEST(SplitFieldsTest, EncodedTokensSplitBackExactly) {
  const std::string k("a b", 3), v("\n\\ x", 4);
  const std::string line = EncodeToken(k) + " " + EncodeToken(v);
  std::vector<absl::string_view> fields = SplitFields(line);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(*DecodeToken(fields[0]), k);
  EXPECT_EQ(*DecodeToken(fields[1]), v);
}

TEST(OneLineTest, EscapesControlBytesOnly) {
  EXPECT_EQ(OneLine("a b\n\x7f\xc3\xa9\\"), "a b\\x0a\\x7f\xc3\xa9\\");
}

}  // namespace
}  // namespace journalkv::tools
