// Golden-byte tests: the expected bytes are written from the format comments of
// journal_format.h and db_format.h, not produced by the encoders.
#include "pager/journal_format.h"

#include <cstring>
#include <string>
#include <vector>

#include "base/endian.h"
#include "base/hash.h"
#include "gtest/gtest.h"
#include "pager/db_format.h"

namespace journalkv::pager {
namespace {

TEST(JournalFormatTest, HeaderMatchesTheSpecification) {
  std::vector<uint8_t> out(kJournalHeaderSize, 0xee);
  EncodeJournalHeader({4096, 0x0102030405060708ull, 77, 0x1234}, absl::MakeSpan(out));
  const uint8_t expected[40] = {
      'j', 'k', 'v', 'j', 'r', 'n', 'l', 1,  // magic
      1, 0, 0, 0,                              // format_version
      0x00, 0x10, 0, 0,                        // page_size 4096
      8, 7, 6, 5, 4, 3, 2, 1,                  // nonce
      77, 0, 0, 0,                             // orig_pages
      0x00, 0x02, 0, 0,                        // sector_size 512
      0x34, 0x12, 0, 0, 0, 0, 0, 0,            // records_offset
  };
  EXPECT_EQ(std::memcmp(out.data(), expected, 40), 0);
  EXPECT_EQ(base::DecodeFixed64(out.data() + 40), base::Xxh3(expected, 40, 0));
  for (size_t i = 48; i < out.size(); ++i) ASSERT_EQ(out[i], 0) << i;

  auto decoded = DecodeJournalHeader(out);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->page_size, 4096u);
  EXPECT_EQ(decoded->nonce, 0x0102030405060708ull);
  EXPECT_EQ(decoded->orig_pages, 77u);
  EXPECT_EQ(decoded->records_offset, 0x1234u);
}

TEST(JournalFormatTest, DamagedOrZeroedHeaderIsNotAHeader) {
  std::vector<uint8_t> out(kJournalHeaderSize);
  EncodeJournalHeader({512, 1, 2, 512}, absl::MakeSpan(out));
  out[20] ^= 1;
  EXPECT_FALSE(DecodeJournalHeader(out).has_value());
  std::vector<uint8_t> zeros(kJournalHeaderSize, 0);
  EXPECT_FALSE(DecodeJournalHeader(zeros).has_value());
}

TEST(JournalFormatTest, RecordMatchesTheSpecification) {
  std::vector<uint8_t> image(512);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(i * 7);
  std::string out;
  AppendRecord(99, PageNo(5), image, &out);
  ASSERT_EQ(out.size(), 4 + 4 + 512 + 8u);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(out.data());
  EXPECT_EQ(base::DecodeFixed32(p), 5u);
  EXPECT_EQ(base::DecodeFixed32(p + 4), 1u);
  EXPECT_EQ(std::memcmp(p + 8, image.data(), 512), 0);
  EXPECT_EQ(base::DecodeFixed64(p + 520), base::Xxh3(p, 520, 99));
}

TEST(JournalFormatTest, SealMatchesTheSpecification) {
  Seal seal;
  seal.new_pages = 12;
  seal.entries = {{PageNo(1), 0xaabbccdd00112233ull}, {PageNo(9), 5}};
  std::string out;
  AppendSeal(3, seal, &out);
  ASSERT_EQ(out.size(), 16 + 2 * 12 + 8u);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(out.data());
  EXPECT_EQ(base::DecodeFixed32(p), 0u);
  EXPECT_EQ(base::DecodeFixed32(p + 4), 2u);
  EXPECT_EQ(base::DecodeFixed32(p + 8), 2u);
  EXPECT_EQ(base::DecodeFixed32(p + 12), 12u);
  EXPECT_EQ(base::DecodeFixed32(p + 16), 1u);
  EXPECT_EQ(base::DecodeFixed64(p + 20), 0xaabbccdd00112233ull);
  EXPECT_EQ(base::DecodeFixed32(p + 28), 9u);
  EXPECT_EQ(base::DecodeFixed64(p + 32), 5u);
  EXPECT_EQ(base::DecodeFixed64(p + 40), base::Xxh3(p, 40, 3));
}

TEST(DbFormatTest, HeaderPageMatchesTheSpecification) {
  std::vector<uint8_t> page(512, 0xee);
  DbHeader h;
  h.page_size = 512;
  h.change_counter = 0x1122334455667788ull;
  h.page_count = 40;
  h.freelist_head = PageNo(7);
  h.freelist_count = 3;
  h.journal_family = JournalFamily::kWal;
  h.meta[0] = 5;
  h.meta[15] = 0xdeadbeef;
  EncodeDbHeader(h, absl::MakeSpan(page));
  SealPage(PageNo(1), absl::MakeSpan(page));
  const uint8_t expected[48] = {
      'j', 'o', 'u', 'r', 'n', 'a', 'l', 'k', 'v', 0, 'f', 'm', 't', 0, 0, 0,  // magic
      1, 0, 0, 0,                                                              // version
      0x00, 0x02, 0, 0,                                                        // page_size
      0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,                          // counter
      40, 0, 0, 0,                                                             // page_count
      7, 0, 0, 0,                                                              // freelist_head
      3, 0, 0, 0,                                                              // freelist_count
      1, 0, 0, 0,                                                              // family, rsvd
  };
  EXPECT_EQ(std::memcmp(page.data(), expected, 48), 0);
  EXPECT_EQ(base::DecodeFixed32(page.data() + 48), 5u);
  EXPECT_EQ(base::DecodeFixed32(page.data() + 48 + 60), 0xdeadbeefu);
  EXPECT_EQ(base::DecodeFixed64(page.data() + 504), base::Xxh3(page.data(), 504, 1));
  EXPECT_TRUE(PageChecksumOk(PageNo(1), page));
  EXPECT_FALSE(PageChecksumOk(PageNo(2), page));  // misdirected: seeded with the page number

  auto decoded = DecodeDbHeader(page, "x");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, h);
  auto prefix = DecodeHeaderPrefix(page, "x");
  ASSERT_TRUE(prefix.ok());
  EXPECT_EQ(*prefix, 512u);
}

}  // namespace
}  // namespace journalkv::pager
