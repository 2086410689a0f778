// KeyHints against the plain binary search it stands in for: on pages of random keys with
// shared prefixes, short keys, zero bytes (heads that tie through their padding) and keys of
// 0xff bytes, every search key gets the same LowerBound (and exactness) and UpperBound with
// the hints as without. Also the pages Build refuses.
#include "btree/key_hints.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "btree/btree_format.h"
#include "btree/btree_page.h"
#include "gtest/gtest.h"

namespace journalkv::btree {
namespace {

constexpr uint32_t kU = 4088;
constexpr PageNo kPage(9);

// A leaf holding `keys` in the given order (cell i holds keys[i]); false when they do not fit.
bool MakePage(const std::vector<std::string>& keys, std::vector<uint8_t>* page) {
  page->assign(kU, 0);
  InitNodePage(absl::MakeSpan(*page), PageType::kLeaf, PageNo(0));
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string cell = MakeLeafCell(kU, keys[i], 1, "v", PageNo(0));
    absl::StatusOr<uint8_t*> dst = ReserveCell(kPage, absl::MakeSpan(*page), static_cast<int>(i),
                                               static_cast<uint32_t>(cell.size()));
    if (!dst.ok() || *dst == nullptr) return false;
    std::copy(cell.begin(), cell.end(), *dst);
  }
  return true;
}

std::string RandomBytes(std::mt19937& rng, int max_len) {
  static constexpr char kAlphabet[] = {'\0', '\1', 'a', 'b', 'c', '\x7f', '\xfe', '\xff'};
  std::string s(rng() % (max_len + 1), '\0');
  for (char& c : s) c = kAlphabet[rng() % sizeof(kAlphabet)];
  return s;
}

// Keys near `key`: itself, its prefixes, one byte more (zero, middle, 0xff), its last byte
// one up and one down.
void AddNeighbours(const std::string& key, std::set<std::string>* out) {
  out->insert(key);
  for (size_t n = 0; n < key.size(); ++n) out->insert(key.substr(0, n));
  for (char c : {'\0', 'b', '\xff'}) out->insert(key + c);
  if (!key.empty()) {
    std::string up = key;
    std::string down = key;
    if (up.back() != '\xff') ++up.back();
    if (down.back() != '\0') --down.back();
    out->insert(up);
    out->insert(down);
  }
}

TEST(KeyHintsTest, SearchesAgreeWithThePlainSearch) {
  std::mt19937 rng(20261205);
  int pages = 0;
  int searches = 0;
  for (int round = 0; round < 400; ++round) {
    const std::string prefix = RandomBytes(rng, round % 3 == 0 ? 0 : 24);
    std::set<std::string> keys;
    const int n = KeyHints::kMinCells + static_cast<int>(rng() % 120);
    while (static_cast<int>(keys.size()) < n) keys.insert(prefix + RandomBytes(rng, 10));
    const std::vector<std::string> sorted(keys.begin(), keys.end());
    std::vector<uint8_t> page;
    if (!MakePage(sorted, &page)) continue;
    ++pages;
    const PageView view = *PageView::Open(kPage, page);
    std::unique_ptr<KeyHints> hints = KeyHints::Build(view);
    ASSERT_NE(hints, nullptr) << "round " << round;
    EXPECT_EQ(hints->cell_count(), n);

    std::set<std::string> probes = {std::string(), std::string(40, '\xff'), prefix};
    for (const std::string& k : sorted) AddNeighbours(k, &probes);
    AddNeighbours(prefix, &probes);
    for (int i = 0; i < 50; ++i) probes.insert(prefix.substr(0, rng() % (prefix.size() + 1)) +
                                               RandomBytes(rng, 12));
    for (const std::string& q : probes) {
      bool exact_plain = false;
      bool exact_hinted = false;
      const int lower_plain = view.LowerBound(q, &exact_plain);
      ASSERT_EQ(hints->LowerBound(view, q, &exact_hinted), lower_plain) << "round " << round;
      ASSERT_EQ(exact_hinted, exact_plain) << "round " << round;
      ASSERT_EQ(hints->UpperBound(view, q), view.UpperBound(q)) << "round " << round;
      ++searches;
    }
    ASSERT_FALSE(view.damaged());
  }
  EXPECT_GT(pages, 300);
  EXPECT_GT(searches, 100000);
}

// Keys that differ only past their first four bytes after the prefix all tie on their heads:
// the search falls back to whole keys over the whole run of ties.
TEST(KeyHintsTest, LongRunsOfTiedHeadsStillSearchRight) {
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back(std::string("p") + "same" + std::to_string(1000 + i));
  keys.push_back("q");
  std::vector<uint8_t> page;
  ASSERT_TRUE(MakePage(keys, &page));
  const PageView view = *PageView::Open(kPage, page);
  std::unique_ptr<KeyHints> hints = KeyHints::Build(view);
  ASSERT_NE(hints, nullptr);
  EXPECT_EQ(hints->prefix(), "");  // "p..." and "q" share nothing
  for (const std::string& k : keys) {
    std::set<std::string> probes;
    AddNeighbours(k, &probes);
    for (const std::string& q : probes) {
      bool exact_plain = false;
      bool exact_hinted = false;
      ASSERT_EQ(hints->LowerBound(view, q, &exact_hinted), view.LowerBound(q, &exact_plain)) << q;
      ASSERT_EQ(exact_hinted, exact_plain) << q;
      ASSERT_EQ(hints->UpperBound(view, q), view.UpperBound(q)) << q;
    }
  }
}

TEST(KeyHintsTest, SmallPagesGetNone) {
  std::vector<std::string> keys;
  for (int i = 0; i < KeyHints::kMinCells - 1; ++i) keys.push_back("k" + std::to_string(i));
  std::vector<uint8_t> page;
  ASSERT_TRUE(MakePage(keys, &page));
  EXPECT_EQ(KeyHints::Build(*PageView::Open(kPage, page)), nullptr);
}

// A page whose middle key does not share the prefix of its first and last (keys out of order:
// a damaged page) gets no hints, so its searches stay the plain ones.
TEST(KeyHintsTest, KeysOutsideTheFirstAndLastsPrefixGetNone) {
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back("key" + std::to_string(10 + i));
  keys[5] = "a";
  std::vector<uint8_t> page;
  ASSERT_TRUE(MakePage(keys, &page));
  EXPECT_EQ(KeyHints::Build(*PageView::Open(kPage, page)), nullptr);
}

// The object, the heads and the prefix are one allocation of the size memory_bytes() says.
TEST(KeyHintsTest, MemoryIsTheHeadsAndThePrefix) {
  std::vector<std::string> keys;
  for (int i = 0; i < 20; ++i) keys.push_back("user:" + std::to_string(100000 + i));
  std::vector<uint8_t> page;
  ASSERT_TRUE(MakePage(keys, &page));
  std::unique_ptr<KeyHints> hints = KeyHints::Build(*PageView::Open(kPage, page));
  ASSERT_NE(hints, nullptr);
  EXPECT_EQ(hints->prefix(), "user:1000");
  EXPECT_EQ(hints->memory_bytes(), sizeof(KeyHints) + 4 * 20 + 9);
}

}  // namespace
}  // namespace journalkv::btree
