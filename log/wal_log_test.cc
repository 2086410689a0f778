#include "log/wal_log.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/endian.h"
#include "base/hash.h"
#include "base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "log/wal_format.h"

namespace journalkv::wal {
namespace {

using ::journalkv::testing::StatusIs;
using ::testing::ElementsAre;

constexpr uint32_t kPageSize = 512;
constexpr char kPath[] = "/db/x.db-wal";

// Writes the checksum every image the log takes carries in its last 8 bytes.
void Seal(uint32_t page_no, absl::Span<uint8_t> image) {
  base::EncodeFixed64(image.data() + image.size() - 8, ImageChecksum(page_no, image));
}

// A page image that names its frame and page, so that a frame read from the wrong place or a
// swapped image shows.
std::vector<uint8_t> ImageOf(uint32_t frame, uint32_t page_no, uint32_t page_size = kPageSize) {
  std::vector<uint8_t> image(page_size);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<uint8_t>(frame * 31 + i);
  base::EncodeFixed32(image.data(), frame);
  base::EncodeFixed32(image.data() + 4, page_no);
  Seal(page_no, absl::MakeSpan(image));
  return image;
}

class WalLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    JKV_ASSERT_OK_AND_ASSIGN(log_, WalLog::Open(&fs_, kPath, /*read_only=*/false));
  }

  // Writes a header for `generation` (its salts differ per generation) and returns it.
  WalHeader Restart(uint32_t generation) {
    WalHeader header{kPageSize, generation, 0xa0000000 + generation, 0xb0000000 + generation};
    absl::StatusOr<uint64_t> checksum = log_->WriteHeader(header);
    EXPECT_THAT(checksum, ::journalkv::testing::IsOk());
    header.checksum = checksum.value_or(0);
    return header;
  }

  // Appends frames first_frame.. holding `pages` (the last a commit frame when db_size != 0)
  // and returns the chain after them.
  uint64_t AppendTxn(const WalHeader& header, uint32_t first_frame, uint64_t prev,
                     const std::vector<uint32_t>& pages, uint32_t db_size) {
    std::vector<std::vector<uint8_t>> images;
    std::vector<FramePage> frames;
    for (size_t i = 0; i < pages.size(); ++i) {
      images.push_back(ImageOf(first_frame + i, pages[i], header.page_size));
    }
    for (size_t i = 0; i < pages.size(); ++i) frames.push_back({PageNo(pages[i]), images[i]});
    absl::StatusOr<uint64_t> chain = log_->Append(header, first_frame, prev, frames, db_size);
    EXPECT_THAT(chain, ::journalkv::testing::IsOk());
    return chain.value_or(0);
  }

  // Three transactions: frames 1-2, 3-5 and 6, committing at 2, 5 and 6.
  void WriteThreeTransactions() {
    header_ = Restart(1);
    chain_[0] = header_.checksum;
    chain_[2] = AppendTxn(header_, 1, chain_[0], {1, 2}, 2);
    chain_[5] = AppendTxn(header_, 3, chain_[2], {3, 1, 4}, 4);
    chain_[6] = AppendTxn(header_, 6, chain_[5], {5}, 5);
  }

  ScanResult ScanOk(uint32_t page_size = kPageSize) {
    absl::StatusOr<ScanResult> scan = log_->Scan(page_size);
    EXPECT_THAT(scan, ::journalkv::testing::IsOk());
    return scan.value_or(ScanResult{});
  }

  // A second File on the log, to change its bytes behind WalLog's back (as damage would).
  std::unique_ptr<vfs::File> Raw() {
    auto file = fs_.Open(kPath, {vfs::OpenMode::kReadWrite, vfs::FileKind::kOther});
    EXPECT_THAT(file, ::journalkv::testing::IsOk());
    return file.ok() ? std::move(file).value() : nullptr;
  }

  void FlipByte(uint64_t offset) {
    std::unique_ptr<vfs::File> raw = Raw();
    uint8_t byte[1];
    ASSERT_THAT(raw->Read(offset, absl::MakeSpan(byte)), ::journalkv::testing::IsOk());
    byte[0] ^= 0x40;
    ASSERT_THAT(raw->Write(offset, byte), ::journalkv::testing::IsOk());
  }

  uint64_t WalSize() {
    absl::StatusOr<uint64_t> size = log_->Size();
    EXPECT_THAT(size, ::journalkv::testing::IsOk());
    return size.value_or(0);
  }

  vfs::IoCounts WalCounts() { return fs_.stats().Snapshot(vfs::FileKind::kWal); }

  vfs::MemFileSystem fs_;
  std::unique_ptr<WalLog> log_;
  WalHeader header_;
  uint64_t chain_[7] = {};  // chain_[f]: the chain value after commit frame f
};

// --- The checksum chain and the valid prefix ---

TEST_F(WalLogTest, ScanFindsEveryCommittedFrame) {
  WriteThreeTransactions();
  const ScanResult scan = ScanOk();
  EXPECT_TRUE(scan.header_valid);
  EXPECT_EQ(scan.header, header_);
  EXPECT_EQ(scan.mx_frame, 6u);
  EXPECT_EQ(scan.db_size, 5u);
  EXPECT_EQ(scan.last_checksum, chain_[6]);
  EXPECT_THAT(scan.pages, ElementsAre(1, 2, 3, 1, 4, 5));
  for (uint32_t frame = 1; frame <= 6; ++frame) {
    std::vector<uint8_t> image(kPageSize);
    JKV_ASSERT_OK(log_->ReadPage(frame, kPageSize, absl::MakeSpan(image)));
    EXPECT_EQ(image, ImageOf(frame, scan.pages[frame - 1])) << "frame " << frame;
  }
}

TEST_F(WalLogTest, AppendReturnsTheChainOfItsFrames) {
  WriteThreeTransactions();
  // Recompute the chain from the spec: each frame seeded with the previous one's checksum.
  uint64_t chain = header_.checksum;
  const uint32_t pages[] = {1, 2, 3, 1, 4, 5};
  const uint32_t db_sizes[] = {0, 2, 0, 0, 4, 5};
  for (uint32_t frame = 1; frame <= 6; ++frame) {
    const std::vector<uint8_t> image = ImageOf(frame, pages[frame - 1]);
    chain = FrameChecksum(chain, {pages[frame - 1], db_sizes[frame - 1], header_.salt1,
                                  header_.salt2, ImageChecksum(pages[frame - 1], image)});
    if (frame == 2 || frame == 5 || frame == 6) {
      EXPECT_EQ(chain, chain_[frame]) << "frame " << frame;
    }
  }
}

TEST_F(WalLogTest, DamagedImageEndsThePrefixAtThePreviousCommit) {
  WriteThreeTransactions();
  FlipByte(FrameImageOffset(4, kPageSize) + 100);
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, 2u);
  EXPECT_EQ(scan.db_size, 2u);
  EXPECT_EQ(scan.last_checksum, chain_[2]);
  EXPECT_THAT(scan.pages, ElementsAre(1, 2));
}

TEST_F(WalLogTest, DamagedFrameHeaderEndsThePrefix) {
  WriteThreeTransactions();
  FlipByte(FrameHeaderOffset(6, kPageSize) + 4);  // frame 6's db_size
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, 5u);
  EXPECT_EQ(scan.last_checksum, chain_[5]);
}

TEST_F(WalLogTest, TornLastFrameIsNotCounted) {
  WriteThreeTransactions();
  JKV_ASSERT_OK(log_->Truncate(FrameImageOffset(6, kPageSize) + 100));
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, 5u);
  EXPECT_EQ(scan.db_size, 4u);
  EXPECT_EQ(scan.last_checksum, chain_[5]);
  EXPECT_THAT(scan.pages, ElementsAre(1, 2, 3, 1, 4));
}

TEST_F(WalLogTest, LogEndingExactlyAfterTheLastFrameIsWhole) {
  WriteThreeTransactions();
  JKV_ASSERT_OK(log_->Truncate(LogEnd(6, kPageSize)));
  EXPECT_EQ(ScanOk().mx_frame, 6u);
}

TEST_F(WalLogTest, UncommittedTailIsNotCounted) {
  WriteThreeTransactions();
  AppendTxn(header_, 7, chain_[6], {6, 7, 8}, /*db_size=*/0);
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, 6u);
  EXPECT_EQ(scan.db_size, 5u);
  EXPECT_EQ(scan.last_checksum, chain_[6]);
  EXPECT_EQ(scan.pages.size(), 6u);
}

TEST_F(WalLogTest, FramesOfAnOlderGenerationAreNotAccepted) {
  WriteThreeTransactions();
  const WalHeader next = Restart(2);
  const uint64_t chain = AppendTxn(next, 1, next.checksum, {8, 9}, 9);
  // Frames 3-6 of generation 1 are still in the file, right after the new ones.
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.header, next);
  EXPECT_EQ(scan.mx_frame, 2u);
  EXPECT_EQ(scan.db_size, 9u);
  EXPECT_EQ(scan.last_checksum, chain);
  EXPECT_THAT(scan.pages, ElementsAre(8, 9));
}

// A frame 3 whose chain does continue from the new frame 2 but that carries the old salts:
// only the salt check can refuse it. The same frame with the new salts is accepted.
TEST_F(WalLogTest, OldSaltsAreRefusedEvenWhenTheChainContinues) {
  WriteThreeTransactions();
  const WalHeader next = Restart(2);
  const uint64_t chain = AppendTxn(next, 1, next.checksum, {8, 9}, 9);
  const std::vector<uint8_t> image = ImageOf(3, 3);
  const FramePage page{PageNo(3), image};
  JKV_ASSERT_OK(log_->Append(header_, 3, chain, {&page, 1}, 10).status());
  EXPECT_EQ(ScanOk().mx_frame, 2u);
  JKV_ASSERT_OK(log_->Append(next, 3, chain, {&page, 1}, 10).status());
  EXPECT_EQ(ScanOk().mx_frame, 3u);
}

TEST_F(WalLogTest, FrameOfPageZeroEndsThePrefix) {
  WriteThreeTransactions();
  // Append refuses page 0, so encode the frame by hand, with valid salts, chain and image.
  std::vector<uint8_t> raw(kFrameHeaderSize);
  const std::vector<uint8_t> image = ImageOf(7, 0);
  FrameHeader header{0, 7, header_.salt1, header_.salt2};
  EncodeFrameHeader(header, chain_[6], image, absl::MakeSpan(raw));
  JKV_ASSERT_OK(Raw()->Write(FrameImageOffset(7, kPageSize), image));
  JKV_ASSERT_OK(Raw()->Write(FrameHeaderOffset(7, kPageSize), raw));
  EXPECT_EQ(ScanOk().mx_frame, 6u);
  // The same frame of page 7 is accepted: only page_no kept it out.
  const std::vector<uint8_t> image7 = ImageOf(7, 7);
  header.page_no = 7;
  EncodeFrameHeader(header, chain_[6], image7, absl::MakeSpan(raw));
  JKV_ASSERT_OK(Raw()->Write(FrameImageOffset(7, kPageSize), image7));
  JKV_ASSERT_OK(Raw()->Write(FrameHeaderOffset(7, kPageSize), raw));
  EXPECT_EQ(ScanOk().mx_frame, 7u);
}

// --- Frames written again (W11) ---

// A transaction's spilled frame written again holds the new image; until Rechain the chain
// from it is broken, so nothing of the transaction is recovered; after it and the commit,
// all of it is.
TEST_F(WalLogTest, RewrittenFramesCountOnceRechained) {
  WriteThreeTransactions();
  uint64_t chain = AppendTxn(header_, 7, chain_[6], {6, 7, 8}, /*db_size=*/0);
  const std::vector<uint8_t> again = ImageOf(99, 7);
  const FramePage page{PageNo(7), again};
  JKV_ASSERT_OK(log_->RewriteFrames(header_, 8, {&page, 1}));
  std::vector<uint8_t> image(kPageSize);
  JKV_ASSERT_OK(log_->ReadPage(8, kPageSize, absl::MakeSpan(image)));
  EXPECT_EQ(image, again);
  const std::vector<uint8_t> commit = ImageOf(10, 9);
  const FramePage commit_page{PageNo(9), commit};
  // A commit frame appended without the rechain does not vouch for frames 8 and 9.
  JKV_ASSERT_OK(log_->Append(header_, 10, chain, {&commit_page, 1}, 9).status());
  EXPECT_EQ(ScanOk().mx_frame, 6u);

  // Rechain reads and writes frame headers only.
  JKV_ASSERT_OK_AND_ASSIGN(const FrameHeader seventh, log_->ReadFrameHeader(7, kPageSize));
  const vfs::IoCounts before = WalCounts();
  JKV_ASSERT_OK_AND_ASSIGN(chain, log_->Rechain(header_, 8, 9, seventh.checksum));
  EXPECT_EQ(WalCounts().bytes_written - before.bytes_written, 2 * kFrameHeaderSize);
  EXPECT_EQ(WalCounts().bytes_read - before.bytes_read, 2 * kFrameHeaderSize);
  JKV_ASSERT_OK(log_->Append(header_, 10, chain, {&commit_page, 1}, 9).status());
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, 10u);
  EXPECT_THAT(scan.pages, ElementsAre(1, 2, 3, 1, 4, 5, 6, 7, 8, 9));
}

// --- Logs of format version 1 (an earlier build) ---

class V1LogTest : public WalLogTest {
 protected:
  // Writes a version-1 log: its header, then frames of `pages`, the last one committing
  // `db_size` (0: none commits).
  void WriteV1(const std::vector<uint32_t>& pages, uint32_t db_size) {
    WalHeader header{kPageSize, 1, 0xa1, 0xb1};
    std::vector<uint8_t> raw(kWalHeaderSize);
    EncodeWalHeader(header, absl::MakeSpan(raw));
    base::EncodeFixed32(raw.data() + 4, 1);
    uint64_t chain = base::Xxh3(raw.data(), 24, 0);
    base::EncodeFixed64(raw.data() + 24, chain);
    std::unique_ptr<vfs::File> file = Raw();
    JKV_ASSERT_OK(file->Write(0, raw));
    for (uint32_t f = 1; f <= pages.size(); ++f) {
      std::vector<uint8_t> frame(kV1FrameHeaderSize + kPageSize);
      base::EncodeFixed32(frame.data(), pages[f - 1]);
      base::EncodeFixed32(frame.data() + 4, f == pages.size() ? db_size : 0);
      base::EncodeFixed32(frame.data() + 8, header.salt1);
      base::EncodeFixed32(frame.data() + 12, header.salt2);
      const std::vector<uint8_t> image = ImageOf(f, pages[f - 1]);
      std::memcpy(frame.data() + kV1FrameHeaderSize, image.data(), kPageSize);
      chain = base::Xxh3Pair(frame.data(), 16, image.data(), image.size(), chain);
      base::EncodeFixed64(frame.data() + 16, chain);
      JKV_ASSERT_OK(file->Write(V1FrameOffset(f, kPageSize), frame));
    }
  }
};

TEST_F(V1LogTest, ACommittedLogIsRefusedAndLeftAlone) {
  WriteV1({1, 2, 3}, 3);
  const uint64_t size = WalSize();
  EXPECT_THAT(log_->Scan(kPageSize),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "format version 1, written by an earlier journalkv build"));
  EXPECT_EQ(WalSize(), size);
  EXPECT_EQ(WalCounts().writes, 0u);  // the test wrote through another kind of file
}

TEST_F(V1LogTest, ALogWithoutACommitIsEmpty) {
  WriteV1({1, 2, 3}, 0);
  const ScanResult scan = ScanOk();
  EXPECT_FALSE(scan.header_valid);
  EXPECT_EQ(scan.mx_frame, 0u);
  WriteV1({}, 0);
  EXPECT_FALSE(ScanOk().header_valid);
}

TEST_F(V1LogTest, ATornCommitIsNoCommit) {
  WriteV1({1, 2, 3}, 3);
  JKV_ASSERT_OK(log_->Truncate(V1FrameOffset(3, kPageSize) + 100));
  EXPECT_FALSE(ScanOk().header_valid);
}

// --- The header ---

TEST_F(WalLogTest, HeaderOfAnotherPageSizeIsAnEmptyLog) {
  WriteThreeTransactions();
  const ScanResult scan = ScanOk(4096);
  EXPECT_FALSE(scan.header_valid);
  EXPECT_EQ(scan.mx_frame, 0u);
  EXPECT_EQ(scan.db_size, 0u);
  EXPECT_EQ(scan.last_checksum, 0u);
  EXPECT_TRUE(scan.pages.empty());
}

TEST_F(WalLogTest, EmptyShortOrDamagedHeaderIsAnEmptyLog) {
  EXPECT_FALSE(ScanOk().header_valid);  // the file was just created: empty
  WriteThreeTransactions();
  FlipByte(20);
  EXPECT_FALSE(ScanOk().header_valid);
  FlipByte(20);
  EXPECT_TRUE(ScanOk().header_valid);
  JKV_ASSERT_OK(log_->Truncate(kWalHeaderSize - 1));
  const ScanResult scan = ScanOk();
  EXPECT_FALSE(scan.header_valid);
  EXPECT_EQ(scan.mx_frame, 0u);
}

TEST_F(WalLogTest, HeaderAloneIsAValidEmptyLog) {
  const WalHeader header = Restart(1);
  const ScanResult scan = ScanOk();
  EXPECT_TRUE(scan.header_valid);
  EXPECT_EQ(scan.header, header);
  EXPECT_EQ(scan.mx_frame, 0u);
  EXPECT_EQ(scan.last_checksum, header.checksum);  // the seed of frame 1
  EXPECT_TRUE(scan.pages.empty());
}

TEST_F(WalLogTest, NewerVersionIsRefusedNotEmptied) {
  WriteThreeTransactions();
  std::vector<uint8_t> raw(kWalHeaderSize);
  EncodeWalHeader(header_, absl::MakeSpan(raw));
  base::EncodeFixed32(raw.data() + 4, kWalVersion + 1);
  JKV_ASSERT_OK(Raw()->Write(0, raw));
  EXPECT_THAT(log_->Scan(kPageSize), StatusIs(absl::StatusCode::kFailedPrecondition, "newer"));
}

TEST_F(WalLogTest, WriteHeaderWritesOnlyTheHeader) {
  WriteThreeTransactions();
  const uint64_t size = WalSize();
  const vfs::IoCounts before = WalCounts();
  Restart(2);
  EXPECT_EQ(WalCounts().writes, before.writes + 1);
  EXPECT_EQ(WalCounts().bytes_written, before.bytes_written + kWalHeaderSize);
  EXPECT_EQ(WalSize(), size);
}

TEST_F(WalLogTest, WriteHeaderRefusesABadPageSize) {
  EXPECT_THAT(log_->WriteHeader({1000, 1, 2, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, "page size 1000 is invalid"));
  EXPECT_EQ(WalSize(), 0u);
}

// --- Opening, reading, bad arguments, I/O errors ---

TEST_F(WalLogTest, ReadOnlyOpenOfAMissingLogIsNotFound) {
  EXPECT_THAT(WalLog::Open(&fs_, "/db/missing.db-wal", /*read_only=*/true),
              StatusIs(absl::StatusCode::kNotFound, ""));
}

TEST_F(WalLogTest, ReadOnlyLogScansButRefusesWrites) {
  WriteThreeTransactions();
  JKV_ASSERT_OK_AND_ASSIGN(log_, WalLog::Open(&fs_, kPath, /*read_only=*/true));
  EXPECT_EQ(ScanOk().mx_frame, 6u);
  EXPECT_THAT(log_->WriteHeader(header_), StatusIs(absl::StatusCode::kFailedPrecondition, ""));
}

TEST_F(WalLogTest, ReadPageOfAMissingFrameIsDataLoss) {
  WriteThreeTransactions();
  JKV_ASSERT_OK(log_->Truncate(FrameImageOffset(6, kPageSize) + 10));
  std::vector<uint8_t> image(kPageSize);
  EXPECT_THAT(log_->ReadPage(6, kPageSize, absl::MakeSpan(image)),
              StatusIs(absl::StatusCode::kDataLoss, "wal frame 6 is missing"));
  EXPECT_THAT(log_->ReadPage(1, kPageSize, absl::MakeSpan(image.data(), 100)),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot read frame 1"));
}

TEST_F(WalLogTest, AppendRefusesBadFramesAndWritesNothing) {
  const WalHeader header = Restart(1);
  const std::vector<uint8_t> image = ImageOf(1, 1);
  const std::vector<uint8_t> small(100);
  const FramePage good{PageNo(1), image};
  const FramePage zero{PageNo(0), image};
  const FramePage short_image{PageNo(2), small};
  const FramePage two[] = {good, short_image};
  EXPECT_THAT(log_->Append(header, 0, header.checksum, {&good, 1}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "at frame 0"));
  EXPECT_THAT(log_->Append(header, 1, header.checksum, {}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "cannot append 0 frames"));
  EXPECT_THAT(log_->Append(header, 1, header.checksum, {&zero, 1}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, "page 0"));
  EXPECT_THAT(log_->Append(header, 1, header.checksum, two, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, "image of page 2 has 100 bytes"));
  EXPECT_EQ(WalSize(), kWalHeaderSize);
}

TEST(WalLogFaultTest, IoErrorsAreReturned) {
  vfs::MemFileSystem mem;
  vfs::FaultInjectingFileSystem fs(&mem);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalLog> log, WalLog::Open(&fs, kPath, false));
  const WalHeader header{kPageSize, 1, 2, 3};
  JKV_ASSERT_OK_AND_ASSIGN(const uint64_t seed, log->WriteHeader(header));
  const std::vector<uint8_t> image = ImageOf(1, 1);
  const FramePage page{PageNo(1), image};
  JKV_ASSERT_OK(log->Append(header, 1, seed, {&page, 1}, 1).status());

  fs.FailNth(vfs::FaultOp::kRead, 2, EIO);  // the first chunk of frames, after the header
  EXPECT_THAT(log->Scan(kPageSize), StatusIs(absl::StatusCode::kInternal, "Input/output"));
  fs.FailNth(vfs::FaultOp::kRead, 1, EIO);
  EXPECT_THAT(log->Scan(kPageSize), StatusIs(absl::StatusCode::kInternal, "Input/output"));
  fs.FailNth(vfs::FaultOp::kWrite, 1, ENOSPC);
  EXPECT_THAT(log->Append(header, 2, seed, {&page, 1}, 2),
              StatusIs(absl::StatusCode::kResourceExhausted, ""));
  fs.ClearFaults();
  JKV_ASSERT_OK_AND_ASSIGN(const ScanResult scan, log->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, 1u);
  EXPECT_EQ(fs.op_count(vfs::FaultOp::kSync), 0u);  // WalLog never syncs
}

// --- Preallocation ---

// A disk that cannot take a preallocation step still takes the frames: the append writes them
// past the end itself (a full disk failed every commit that needed a step, even one of a page,
// on a disk with room for it).
TEST(WalLogFaultTest, AStepTheDiskCannotTakeLeavesTheAppendToGrowTheFileByItsFrames) {
  vfs::MemFileSystem mem;
  vfs::FaultInjectingFileSystem fs(&mem);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalLog> log, WalLog::Open(&fs, kPath, false));
  const WalHeader header{kPageSize, 1, 2, 3};
  JKV_ASSERT_OK_AND_ASSIGN(const uint64_t seed, log->WriteHeader(header));
  const std::vector<uint8_t> image = ImageOf(1, 1);
  const FramePage page{PageNo(1), image};
  fs.FailNth(vfs::FaultOp::kWrite, 2, ENOSPC);  // the step's second chunk of zeros
  JKV_ASSERT_OK(log->Append(header, 1, seed, {&page, 1}, 1).status());
  fs.ClearFaults();
  JKV_ASSERT_OK_AND_ASSIGN(const uint64_t size, log->Size());
  // The header and one frame, no more: the first chunk of zeros was given back.
  EXPECT_EQ(size, LogEnd(1, kPageSize));
  JKV_ASSERT_OK_AND_ASSIGN(const ScanResult scan, log->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, 1u);
}

// A disk with room for part of the step's first chunk of zeros: pwrite writes what fits and
// then fails, so the file grew even though no chunk went through whole. That part is given
// back too (it used to stay: the log then held every free block of a small disk, and the
// database file could not grow at the next checkpoint; full_disk_sweep_test on tmpfs).
TEST(WalLogFaultTest, AStepThatWasWrittenInPartIsGivenBackWhole) {
  vfs::MemFileSystem mem;
  vfs::FaultInjectingFileSystem fs(&mem);
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalLog> log, WalLog::Open(&fs, kPath, false));
  const WalHeader header{kPageSize, 1, 2, 3};
  JKV_ASSERT_OK_AND_ASSIGN(const uint64_t seed, log->WriteHeader(header));
  fs.SetCapacity(fs.used_bytes() + 64 * 1024);  // far less than the 1 MiB step
  const std::vector<uint8_t> image = ImageOf(1, 1);
  const FramePage page{PageNo(1), image};
  JKV_ASSERT_OK(log->Append(header, 1, seed, {&page, 1}, 1).status());
  JKV_ASSERT_OK_AND_ASSIGN(const uint64_t size, log->Size());
  EXPECT_EQ(size, LogEnd(1, kPageSize));
  JKV_ASSERT_OK_AND_ASSIGN(const ScanResult scan, log->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, 1u);
}

TEST_F(WalLogTest, AppendPreallocatesInWholeSteps) {
  WriteThreeTransactions();
  const uint64_t end = LogEnd(6, kPageSize);
  // The file held the 32-byte header, so it grew by at least kGrowBytes past it, rounded up.
  EXPECT_EQ(WalSize(), 2 * kGrowBytes);
  EXPECT_GE(WalSize(), end);
  // The preallocated bytes are zeros.
  std::vector<uint8_t> tail(WalSize() - end);
  JKV_ASSERT_OK(Raw()->Read(end, absl::MakeSpan(tail)));
  EXPECT_EQ(tail, std::vector<uint8_t>(tail.size(), 0));
  EXPECT_EQ(WalCounts().syncs, 0u);
}

// A smaller first step (WalOptions::grow_bytes): the file starts at two steps and then doubles,
// in whole steps of that size.
TEST(WalLogGrowTest, ASmallerStepStartsSmallAndDoubles) {
  vfs::MemFileSystem fs;
  constexpr uint64_t kStep = 64 * 1024;
  JKV_ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalLog> log,
                           WalLog::Open(&fs, kPath, false, kStep));
  const WalHeader header{kPageSize, 1, 2, 3};
  JKV_ASSERT_OK_AND_ASSIGN(uint64_t chain, log->WriteHeader(header));
  const std::vector<uint8_t> image = ImageOf(1, 1);
  const FramePage page{PageNo(1), image};
  std::vector<uint64_t> sizes;
  uint32_t frame = 1;
  // Until a frame ends past 4 steps.
  for (; frame == 1 || LogEnd(frame - 1, kPageSize) <= 4 * kStep; ++frame) {
    JKV_ASSERT_OK_AND_ASSIGN(chain, log->Append(header, frame, chain, {&page, 1}, 1));
    JKV_ASSERT_OK_AND_ASSIGN(const uint64_t size, log->Size());
    if (sizes.empty() || sizes.back() != size) sizes.push_back(size);
  }
  EXPECT_EQ(sizes, (std::vector<uint64_t>{2 * kStep, 4 * kStep, 8 * kStep}));
  // Every byte past the header was first written as a zero (DbStats::log_zero_bytes).
  EXPECT_EQ(log->zero_bytes(), 8 * kStep - kWalHeaderSize);
  JKV_ASSERT_OK_AND_ASSIGN(const ScanResult scan, log->Scan(kPageSize));
  EXPECT_EQ(scan.mx_frame, frame - 1);
}

TEST_F(WalLogTest, AppendThatFitsIsOneWriteAndKeepsTheSize) {
  WriteThreeTransactions();
  const uint64_t size = WalSize();
  const vfs::IoCounts before = WalCounts();
  AppendTxn(header_, 7, chain_[6], {1, 2, 3, 4}, 6);
  EXPECT_EQ(WalSize(), size);
  EXPECT_EQ(WalCounts().writes, before.writes + 1);
  EXPECT_EQ(WalCounts().bytes_written, before.bytes_written + 4 * FrameSize(kPageSize));
}

TEST_F(WalLogTest, RestartReusesTheFileWithoutGrowing) {
  WriteThreeTransactions();
  const uint64_t size = WalSize();
  const vfs::IoCounts before = WalCounts();
  const WalHeader next = Restart(2);
  AppendTxn(next, 1, next.checksum, {7, 8, 9}, 9);
  EXPECT_EQ(WalSize(), size);
  EXPECT_EQ(WalCounts().writes, before.writes + 2);  // the header and the frames
  EXPECT_EQ(ScanOk().mx_frame, 3u);
}

TEST_F(WalLogTest, GrowthDoublesAtFirst) {
  // No header yet, so the file starts empty and the first step is exactly kGrowBytes.
  WalHeader header{kPageSize, 1, 5, 6};
  std::vector<uint8_t> raw(kWalHeaderSize);
  header.checksum = EncodeWalHeader(header, absl::MakeSpan(raw));
  uint64_t chain = AppendTxn(header, 1, header.checksum, {1}, 1);
  EXPECT_EQ(WalSize(), kGrowBytes);
  // Frames 2..a end just past 1 MiB, frames a+1..b just past 2 MiB.
  const uint32_t a = FramesInFile(kGrowBytes, kPageSize) + 1;
  const uint32_t b = FramesInFile(2 * kGrowBytes, kPageSize) + 1;
  ASSERT_GT(LogEnd(a, kPageSize), kGrowBytes);
  ASSERT_GT(LogEnd(b, kPageSize), 2 * kGrowBytes);
  chain = AppendTxn(header, 2, chain, std::vector<uint32_t>(a - 1, 2), 2);
  EXPECT_EQ(WalSize(), 2 * kGrowBytes);
  chain = AppendTxn(header, a + 1, chain, std::vector<uint32_t>(b - a, 3), 3);
  EXPECT_EQ(WalSize(), 4 * kGrowBytes);

  JKV_ASSERT_OK(log_->WriteHeader(header).status());
  const ScanResult scan = ScanOk();
  EXPECT_EQ(scan.mx_frame, b);
  EXPECT_EQ(scan.last_checksum, chain);
}

TEST_F(WalLogTest, GrowthDoublesUpToTheMaxStep) {
  // Steps double the file up to kMaxGrowBytes, then stay there: no commit zero-fills more.
  WalHeader header{kPageSize, 1, 5, 6};
  std::vector<uint8_t> raw(kWalHeaderSize);
  header.checksum = EncodeWalHeader(header, absl::MakeSpan(raw));
  uint64_t chain = header.checksum;
  std::vector<uint64_t> sizes;
  uint32_t frame = 1;
  while (sizes.empty() || sizes.back() <= 3 * kMaxGrowBytes) {
    chain = AppendTxn(header, frame, chain, std::vector<uint32_t>(250, 4), 4);
    frame += 250;
    if (sizes.empty() || WalSize() != sizes.back()) sizes.push_back(WalSize());
  }
  const uint64_t mib = uint64_t{1} << 20;
  EXPECT_THAT(sizes, ::testing::ElementsAre(1 * mib, 2 * mib, 4 * mib, 8 * mib, 16 * mib,
                                            24 * mib, 32 * mib));
  static_assert(kMaxGrowBytes == 8 * (uint64_t{1} << 20));
}

TEST_F(WalLogTest, TruncatedLogGrowsAgain) {
  WriteThreeTransactions();
  JKV_ASSERT_OK(log_->Truncate(0));
  EXPECT_EQ(WalSize(), 0u);
  const WalHeader next = Restart(2);
  AppendTxn(next, 1, next.checksum, {1}, 1);
  EXPECT_EQ(WalSize(), 2 * kGrowBytes);
  EXPECT_EQ(ScanOk().mx_frame, 1u);
}

// The known size is only a lower bound: when the file was cut behind WalLog's back, an append
// past the stale bound asks the file again and grows it from its real size.
TEST_F(WalLogTest, StaleKnownSizeIsRefreshed) {
  WriteThreeTransactions();
  JKV_ASSERT_OK(Raw()->Truncate(LogEnd(6, kPageSize)));
  const uint32_t past = FramesInFile(2 * kGrowBytes, kPageSize) + 1;
  AppendTxn(header_, 7, chain_[6], std::vector<uint32_t>(past - 6, 9), 9);
  // Grown from the real size (the end, rounded up: 3 MiB), not from the stale 2 MiB (4 MiB).
  EXPECT_EQ(WalSize(), 3 * kGrowBytes);
  EXPECT_EQ(ScanOk().mx_frame, past);
}

// --- Scale ---

TEST_F(WalLogTest, ScansAHundredThousandFrames) {
  constexpr uint32_t kFrames = 100000;
  constexpr uint32_t kPerTxn = 1000;
  const WalHeader header = Restart(1);
  uint64_t chain = header.checksum;
  std::vector<uint8_t> images(kPerTxn * kPageSize);
  std::vector<FramePage> pages(kPerTxn);
  for (uint32_t first = 1; first <= kFrames; first += kPerTxn) {
    for (uint32_t i = 0; i < kPerTxn; ++i) {
      const uint32_t frame = first + i;
      uint8_t* image = images.data() + i * kPageSize;
      std::memset(image, static_cast<uint8_t>(frame), kPageSize);
      base::EncodeFixed32(image, frame);
      Seal(frame % 977 + 1, absl::MakeSpan(image, kPageSize));
      pages[i] = {PageNo(frame % 977 + 1), absl::MakeConstSpan(image, kPageSize)};
    }
    JKV_ASSERT_OK_AND_ASSIGN(chain, log_->Append(header, first, chain, pages, first + kPerTxn));
  }
  const auto start = std::chrono::steady_clock::now();
  const ScanResult scan = ScanOk();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::testing::Test::RecordProperty("scan_seconds", std::to_string(seconds));
  EXPECT_EQ(scan.mx_frame, kFrames);
  EXPECT_EQ(scan.db_size, kFrames + 1);
  EXPECT_EQ(scan.last_checksum, chain);
  ASSERT_EQ(scan.pages.size(), kFrames);
  for (uint32_t frame : {1u, 2u, 977u, 50001u, kFrames}) {
    EXPECT_EQ(scan.pages[frame - 1], frame % 977 + 1) << "frame " << frame;
    std::vector<uint8_t> image(kPageSize);
    JKV_ASSERT_OK(log_->ReadPage(frame, kPageSize, absl::MakeSpan(image)));
    EXPECT_EQ(base::DecodeFixed32(image.data()), frame);
    EXPECT_EQ(image[kPageSize - 9], static_cast<uint8_t>(frame));
  }
}

}  // namespace
}  // namespace journalkv::wal
