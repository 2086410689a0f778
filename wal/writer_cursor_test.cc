// The writer's cursor derived from an index header (WriterCursor::AtEndOf) and the current-log
// accessor, for WAL and WAL2 headers.
#include "wal/writer_cursor.h"

#include "gtest/gtest.h"
#include "shm/wal_index.h"

namespace journalkv::wal {
namespace {

shm::IndexHeader Header(uint32_t current_log) {
  shm::IndexHeader h;
  h.current_log = current_log;
  h.logs[0] = {3, 0x11, 0x12, 40, 0xAAAA};
  h.logs[1] = {4, 0x21, 0x22, 7, 0xBBBB};
  return h;
}

TEST(WriterCursorTest, WalAppendsToLogZeroAfterItsLastFrame) {
  const WriterCursor c = WriterCursor::AtEndOf(Header(0), /*wal2=*/false);
  EXPECT_EQ(c.log, 0);
  EXPECT_EQ(c.next_frame, 41u);
  EXPECT_EQ(c.chain, 0xAAAAu);
}

// WAL never looks at current_log: only log 0 exists.
TEST(WriterCursorTest, WalIgnoresTheCurrentLogWord) {
  EXPECT_EQ(CurrentLog(Header(1), /*wal2=*/false), 0);
  EXPECT_EQ(WriterCursor::AtEndOf(Header(1), /*wal2=*/false).log, 0);
}

// V1: in WAL2 the writer appends to the log the header names current (bit 0 of its word).
TEST(WriterCursorTest, Wal2AppendsToTheCurrentLog) {
  EXPECT_EQ(CurrentLog(Header(1), /*wal2=*/true), 1);
  EXPECT_EQ(CurrentLog(Header(2), /*wal2=*/true), 0);
  EXPECT_EQ(CurrentLog(Header(3), /*wal2=*/true), 1);
  const WriterCursor c = WriterCursor::AtEndOf(Header(1), /*wal2=*/true);
  EXPECT_EQ(c, (WriterCursor{1, 8, 0xBBBB}));
  EXPECT_EQ(WriterCursor::AtEndOf(Header(0), /*wal2=*/true), (WriterCursor{0, 41, 0xAAAA}));
}

// A generation with no frames (just restarted or switched to): the next append is frame 1.
TEST(WriterCursorTest, AnEmptyGenerationStartsAtFrameOne) {
  shm::IndexHeader h = Header(1);
  h.logs[1].mx_frame = 0;
  EXPECT_EQ(WriterCursor::AtEndOf(h, /*wal2=*/true).next_frame, 1u);
}

// Moved by appends, the cursor is at the end of the header that names them.
TEST(WriterCursorTest, ACursorMovedByAppendsIsAtTheEndOfTheHeaderThatNamesThem) {
  shm::IndexHeader h = Header(0);
  WriterCursor c = WriterCursor::AtEndOf(h, /*wal2=*/true);
  c.next_frame += 3;
  c.chain = 0xCCCC;
  EXPECT_NE(c, WriterCursor::AtEndOf(h, /*wal2=*/true));
  h.logs[0].mx_frame = c.next_frame - 1;
  h.logs[0].last_checksum = c.chain;
  EXPECT_EQ(c, WriterCursor::AtEndOf(h, /*wal2=*/true));
  c.CheckInvariants(h, /*wal2=*/true);
}

}  // namespace
}  // namespace journalkv::wal
