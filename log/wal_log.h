// One write-ahead log file: appending frames, reading a frame's page, restarting the log with a
// new header, and the recovery scan that finds the valid prefix (wal_format.h).
//
// The file is preallocated: whenever an append would pass its end, it is extended with zeros in
// steps of at least kGrowBytes, doubling the file up to steps of kMaxGrowBytes (a bigger step
// would be one commit writing that many zeros: 64 MiB cost a 177 ms commit), so that once the
// log has reached its
// steady-state size an append overwrites bytes that already exist and a data-only flush
// (fdatasync) makes it durable without touching the file's size or extents. A restart writes
// the new header over the old one and reuses the file from frame 1; old frames stay in the file
// but carry the old salts, so they are never accepted. When the disk cannot take a step
// (ResourceExhausted), preallocation gives up for that append, which writes just its frames past
// the end: a full disk fails only a commit whose own frames do not fit.
//
// The map (Options::mmap_size; wal/wal_connection.h Q1..Q5): opened with map_bytes > 0, the
// file reads through a copies-only read map of that many bytes (File::EnableCopyMap;
// vfs/read_map.h E1..E5), made once at open and covering frames appended later without a
// remap (E3); every Read below (frames, the scan, the checkpoint's) is then a guarded copy
// out of it, and a pread past the map, past the size last seen or after a fault (a file cut
// by another connection). No pointer into the map leaves this class: a frame's bytes are
// always copied into the caller's buffer.
//
// WalLog never syncs: the protocol above it (wal/wal_connection, wal/checkpoint_copy) decides
// when, and syncs file() through vfs::SyncFile with the reason at the call site.
//
// Thread-safety: Read* may run concurrently with each other and with Append (pread/pwrite on
// disjoint ranges); Append, WriteHeader and Truncate are called by one thread at a time (the holder
// of the WRITE lock, or the checkpointer holding it for TRUNCATE).
#ifndef JOURNALKV_LOG_WAL_LOG_H_
#define JOURNALKV_LOG_WAL_LOG_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"
#include "vfs/vfs.h"
#include "log/wal_format.h"

namespace journalkv::wal {

// The smallest step by which the file grows (zero-filled), by default; WalOptions::grow_bytes
// (engine Options::wal_grow_bytes) sets it per connection, a power of two from kMinGrowBytes
// to kMaxGrowBytes.
inline constexpr uint64_t kGrowBytes = uint64_t{1} << 20;
inline constexpr uint64_t kMinGrowBytes = uint64_t{1} << 12;
inline constexpr uint64_t kMaxGrowBytes = uint64_t{8} << 20;
// Whether `bytes` is a preallocation step WalLog::Open takes.
constexpr bool ValidGrowBytes(uint64_t bytes) {
  return bytes >= kMinGrowBytes && bytes <= kMaxGrowBytes && (bytes & (bytes - 1)) == 0;
}

// What the recovery scan found.
struct ScanResult {
  bool header_valid = false;  // false: the log is empty (missing, short or damaged header)
  WalHeader header;           // valid when header_valid
  uint32_t mx_frame = 0;      // the last frame of the valid prefix (a commit frame), 0: none
  uint32_t db_size = 0;       // that commit frame's db_size (0 when mx_frame == 0)
  uint64_t last_checksum = 0;  // the chain value after mx_frame (the header's when 0 frames)
  std::vector<uint32_t> pages;  // pages[f - 1]: page_no of frame f, for f in [1, mx_frame]
};

// A page to append: its number and its whole image (page_size bytes).
struct FramePage {
  PageNo page_no;
  absl::Span<const uint8_t> image;
};

class WalLog {
 public:
  // Opens the log at `path`: created when missing unless `read_only`. NotFound when read-only
  // and missing. The file is not read here. `grow_bytes`: the smallest preallocation step (a
  // power of two in [kMinGrowBytes, kMaxGrowBytes]). `map_bytes` > 0: reads go through a read
  // map of that many bytes (see above); where the file system has none, or the address space
  // is short, they stay preads (the same bytes).
  static absl::StatusOr<std::unique_ptr<WalLog>> Open(vfs::FileSystem* fs,
                                                      const std::string& path, bool read_only,
                                                      uint64_t grow_bytes = kGrowBytes,
                                                      uint64_t map_bytes = 0);

  // Reads the header and every frame up to the end of the valid prefix. `page_size` is the
  // database's: a header with another page size is treated as an empty log. I/O errors (not a
  // short file) are returned, and FailedPrecondition for a log of a newer version (so that it
  // is not taken as empty and overwritten).
  // Frames past `max_frames` are not looked at: the valid prefix ends at the last commit frame
  // no later than it (the wal-index's limit, so that recovery adopts only what it can index).
  absl::StatusOr<ScanResult> Scan(uint32_t page_size,
                                  uint32_t max_frames = std::numeric_limits<uint32_t>::max());

  // Writes `header` (checksum computed) at offset 0; returns its checksum, the seed of frame 1.
  absl::StatusOr<uint64_t> WriteHeader(const WalHeader& header);

  // Writes frames first_frame, first_frame+1, ... holding `pages` in order, in one write, the
  // last one a commit frame with `commit_db_size` when that is nonzero. `prev` is the chain
  // value before first_frame (ScanResult::last_checksum or the previous Append's result);
  // `header` gives the salts and page size. Returns the chain value after the last frame.
  // Grows the file first when needed (see above). Each image must end with its own checksum
  // (the database's page trailer, wal_format.h): it is copied into the frame header, not
  // computed here.
  absl::StatusOr<uint64_t> Append(const WalHeader& header, uint32_t first_frame, uint64_t prev,
                                  absl::Span<const FramePage> pages, uint32_t commit_db_size);

  // Overwrites frames first_frame, first_frame+1, ... (written earlier and not yet covered by a
  // commit frame) with `pages`, in one write: the page numbers and images are the new ones,
  // the checksums placeholders, stale until Rechain recomputes them (wal/wal_connection.h W11;
  // until then no commit frame can vouch for these frames, so recovery takes none of them).
  absl::Status RewriteFrames(const WalHeader& header, uint32_t first_frame,
                             absl::Span<const FramePage> pages);
  // Recomputes the checksum chain of frames first_frame..last_frame from `prev` (the chain
  // value before first_frame): reads each frame's header and writes it back with its checksum
  // replaced (a header carries its image's checksum, so no image is read). Returns the chain
  // value after last_frame. DataLoss when the file ends before last_frame.
  absl::StatusOr<uint64_t> Rechain(const WalHeader& header, uint32_t first_frame,
                                   uint32_t last_frame, uint64_t prev);

  // Writes frames first_frame..last_frame of the generation `header` describes again, as they
  // are, each checked first (salts, the chain from the frame before it, its image's checksum):
  // after a failed sync the kernel may have dropped them while a later sync succeeds, so they
  // are made dirty again before a sync vouches for them (wal/log_durability.h W13). With
  // first_frame 1 the log header is written again too. `last_checksum` is the chain value the
  // frames must end with (the index header's): a lost write may leave at its place an older
  // frame of the same generation that still continues the chain (a commit a failed sync
  // dropped, whose frames were since written over), which only the chain's end tells from the
  // one published. DataLoss naming the first frame that does not check, or the end. May run
  // beside Append and readers: it writes only bytes that are already there, of frames no
  // transaction rewrites.
  absl::Status WriteAgain(const WalHeader& header, uint32_t first_frame, uint32_t last_frame,
                          uint64_t last_checksum);

  // Zeroes the header of frame `frame` when the file holds it, so that the valid prefix ends
  // before it (wal/log_durability.h W13 e: commits dropped after a failed sync must not come
  // back when the index is rebuilt from the log). Unsynced. REQUIRES: no one writes that frame
  // meanwhile (it is past the published frames and at or before the appended ones, or the
  // caller holds WRITE).
  absl::Status BreakChainAt(uint32_t frame, uint32_t page_size);

  // Reads the page image of frame `frame` into `out` (page_size bytes), without checking it
  // (the frame was validated when it was indexed; the page trailer is checked above).
  absl::Status ReadPage(uint32_t frame, uint32_t page_size, absl::Span<uint8_t> out);

  // Reads frame `frame` whole: its header (returned, not checked) and its page image into
  // `out` (page_size bytes), in one read. DataLoss when the file ends before it. The
  // checkpoint uses it to check the wal-index's page number against the frame's own.
  absl::StatusOr<FrameHeader> ReadFrame(uint32_t frame, uint32_t page_size,
                                        absl::Span<uint8_t> out);
  // Reads only the header of frame `frame` (not checked). DataLoss when the file ends before
  // it.
  absl::StatusOr<FrameHeader> ReadFrameHeader(uint32_t frame, uint32_t page_size);

  // Cuts the file to `size` bytes (TRUNCATE checkpoints cut it to 0; a restart cuts a log
  // past WalOptions::size_limit back to it).
  absl::Status Truncate(uint64_t size);
  absl::StatusOr<uint64_t> Size();

  vfs::File& file() { return *file_; }
  // The read map's counters (all zero without one): copies, fallbacks, faults.
  vfs::ReadMapCounters map_counters() const { return file_->read_map_counters(); }
  // Zero bytes this object wrote preallocating the file (they count in a process's written
  // bytes, but hold no frame).
  uint64_t zero_bytes() const { return zero_bytes_.load(std::memory_order_relaxed); }
  const std::string& path() const { return file_->path(); }

 private:
  WalLog(std::unique_ptr<vfs::File> file, uint64_t grow_bytes)
      : file_(std::move(file)), grow_bytes_(grow_bytes) {}
  absl::Status EnsureSize(uint64_t end);
  // InvalidArgument for frames Append cannot write, before anything is written.
  absl::Status CheckFrames(uint32_t first_frame, uint32_t page_size,
                           absl::Span<const FramePage> pages) const;
  // Reads out.size() bytes at `offset`, a part of frame `frame`; DataLoss when the file ends
  // first.
  absl::Status ReadInFrame(uint32_t frame, uint64_t offset, absl::Span<uint8_t> out);

  std::unique_ptr<vfs::File> file_;
  const uint64_t grow_bytes_;  // the smallest preallocation step
  std::atomic<uint64_t> zero_bytes_{0};  // written by the one writer, read by Stats
  // The file is at least this long (0: unknown, ask). Forgotten at each new generation's
  // header: another connection may have cut the file since (a size limit, TRUNCATE).
  uint64_t known_size_ = 0;
  std::vector<uint8_t> buffer_;  // Append's scratch
};

}  // namespace journalkv::wal

#endif  // JOURNALKV_LOG_WAL_LOG_H_
