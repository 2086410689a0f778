#include "log/wal_log.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace journalkv::wal {
namespace {

// The scan reads at least this many frames per Read call, and more for small pages (up to
// about kScanChunkBytes), so that a log of a million frames costs thousands of reads, not a
// million.
constexpr uint64_t kScanChunkFrames = 64;
constexpr uint64_t kScanChunkBytes = uint64_t{1} << 20;
// Preallocation writes zeros in pieces of at most this size. The kernel's page cache may hold a
// file in large folios, sized by the write that created them, and Linux 6.x's ext4 walks every
// block of a folio on each buffered write into it: a frame rewritten in place (W11) in a log
// zeroed by 1 MiB writes cost 3.8 us, by 256 or 64 KiB writes 2.8 us, by 8 MiB writes 12 us.
// So the zeros go in small pieces, a few more system calls per growth.
constexpr uint64_t kZeroChunkBytes = uint64_t{1} << 18;

constexpr uint64_t RoundUp(uint64_t n, uint64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

// Walks the frames of a log whose header checked out, keeping the valid prefix up to its last
// commit frame. Frames are fed in file order, one chunk at a time.
class FrameScanner {
 public:
  explicit FrameScanner(ScanResult& result)
      : result_(result), chain_(result.header.checksum) {}

  // Checks the frames of `chunk` (whole frames, the first one numbered `first_frame`): the
  // header first (salts and chain, cheap), then the image's own checksum.
  // False once a frame fails: the valid prefix ended there.
  bool Feed(uint32_t first_frame, absl::Span<const uint8_t> chunk) {
    const uint32_t page_size = result_.header.page_size;
    const uint64_t frame_size = FrameSize(page_size);
    uint32_t frame = first_frame;
    for (uint64_t at = 0; at + frame_size <= chunk.size(); at += frame_size, ++frame) {
      const FrameHeader header = DecodeFrameHeader(chunk.subspan(at, kFrameHeaderSize));
      const auto image = chunk.subspan(at + kFrameHeaderSize, page_size);
      if (!FrameValid(header, result_.header, chain_, image)) return false;
      Accept(frame, header);
    }
    return true;
  }

  // Drops the frames after the last commit frame: an uncommitted or torn transaction.
  void Finish() {
    pages_.resize(result_.mx_frame);
    result_.pages = std::move(pages_);
  }

 private:
  void Accept(uint32_t frame, const FrameHeader& header) {
    chain_ = header.checksum;
    pages_.push_back(header.page_no);
    if (header.db_size == 0) return;
    result_.mx_frame = frame;
    result_.db_size = header.db_size;
    result_.last_checksum = chain_;
  }

  ScanResult& result_;
  uint64_t chain_;               // the checksum of the last accepted frame
  std::vector<uint32_t> pages_;  // every accepted frame, committed or not
};

// Reads the frames of `file` (`size` bytes) in big chunks and keeps the valid prefix in
// `result`, whose header checked out.
absl::Status ScanFrames(vfs::File& file, uint64_t size, uint32_t max_frames, ScanResult& result) {
  const uint32_t page_size = result.header.page_size;
  const uint32_t frames = std::min(FramesInFile(size, page_size), max_frames);
  const uint64_t frame_size = FrameSize(page_size);
  const uint64_t per_chunk = std::max(kScanChunkFrames, kScanChunkBytes / frame_size);
  FrameScanner scanner(result);
  std::vector<uint8_t> chunk;
  for (uint64_t frame = 1; frame <= frames;) {
    const uint64_t n = std::min<uint64_t>(per_chunk, frames - frame + 1);
    chunk.resize(n * frame_size);
    const auto first = static_cast<uint32_t>(frame);
    const absl::Status s = file.Read(FrameHeaderOffset(first, page_size), absl::MakeSpan(chunk));
    if (absl::IsOutOfRange(s)) break;  // the file was cut since Size(): the log ends here
    JKV_RETURN_IF_ERROR(s);
    if (!scanner.Feed(first, chunk)) break;
    frame += n;
  }
  scanner.Finish();
  return absl::OkStatus();
}

// Whether a log of version 1 (wal_format.h), whose header checked out, holds a valid commit
// frame: such a log is refused, not emptied.
absl::StatusOr<bool> V1HoldsACommit(vfs::File& file, uint64_t size, const WalHeader& header) {
  const uint64_t frame_size = kV1FrameHeaderSize + uint64_t{header.page_size};
  const uint64_t frames = size < kWalHeaderSize ? 0 : (size - kWalHeaderSize) / frame_size;
  const uint64_t per_chunk = std::max<uint64_t>(1, kScanChunkBytes / frame_size);
  uint64_t chain = header.checksum;
  std::vector<uint8_t> chunk;
  for (uint64_t frame = 1; frame <= frames;) {
    const uint64_t n = std::min(per_chunk, frames - frame + 1);
    chunk.resize(n * frame_size);
    const absl::Status s =
        file.Read(V1FrameOffset(static_cast<uint32_t>(frame), header.page_size),
                  absl::MakeSpan(chunk));
    if (absl::IsOutOfRange(s)) return false;
    JKV_RETURN_IF_ERROR(s);
    for (uint64_t at = 0; at < chunk.size(); at += frame_size) {
      uint32_t db_size = 0;
      if (!V1FrameValid(absl::MakeConstSpan(chunk).subspan(at, frame_size), header, chain, &chain,
                        &db_size)) {
        return false;
      }
      if (db_size != 0) return true;
    }
    frame += n;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WalLog>> WalLog::Open(vfs::FileSystem* fs,
                                                     const std::string& path, bool read_only,
                                                     uint64_t grow_bytes, uint64_t map_bytes) {
  JKV_DCHECK(ValidGrowBytes(grow_bytes));
  const vfs::OpenMode mode = read_only ? vfs::OpenMode::kReadOnly : vfs::OpenMode::kCreate;
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> file,
                       fs->Open(path, {mode, vfs::FileKind::kWal}));
  // Q1, Q4: before the File is shared. No map (the in-memory file system, no address space
  // left) leaves the reads preads: the same bytes, the same checks.
  if (map_bytes > 0) (void)file->EnableCopyMap(map_bytes);
  return std::unique_ptr<WalLog>(new WalLog(std::move(file), grow_bytes));
}

absl::StatusOr<ScanResult> WalLog::Scan(uint32_t page_size, uint32_t max_frames) {
  ScanResult result;
  // The size bounds the reads, so that the last chunk holds only whole frames that exist (a
  // short Read returns no bytes at all).
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file_->Size());
  std::array<uint8_t, kWalHeaderSize> raw;
  if (size < raw.size()) return result;
  const absl::Status read = file_->Read(0, absl::MakeSpan(raw));
  if (absl::IsOutOfRange(read)) return result;  // cut since Size(): as short
  JKV_RETURN_IF_ERROR(read);

  absl::StatusOr<WalHeader> header = DecodeWalHeader(raw);
  // A newer log is refused, not taken as empty: treating it as empty would let the caller
  // restart it and overwrite frames a newer writer committed.
  if (absl::IsFailedPrecondition(header.status())) {
    return absl::FailedPreconditionError(absl::StrCat(path(), ": ", header.status().message()));
  }
  if (!header.ok() || header->page_size != page_size) return result;
  if (header->version == 1) {
    // An earlier build's layout: taken as empty unless it holds a commit, which this build
    // cannot recover and must not overwrite.
    JKV_ASSIGN_OR_RETURN(const bool committed, V1HoldsACommit(*file_, size, *header));
    if (!committed) return result;
    return absl::FailedPreconditionError(absl::StrCat(
        path(), ": the log is of format version 1, written by an earlier journalkv build, and "
        "holds committed transactions this build cannot recover (it writes version ", kWalVersion,
        "); open the database once with the build that wrote it (its checkpoint copies them "
        "into the database), then with this one"));
  }
  result.header_valid = true;
  result.header = *header;
  result.last_checksum = header->checksum;

  JKV_RETURN_IF_ERROR(ScanFrames(*file_, size, max_frames, result));
  return result;
}

absl::StatusOr<uint64_t> WalLog::WriteHeader(const WalHeader& header) {
  std::array<uint8_t, kWalHeaderSize> raw;
  const uint64_t checksum = EncodeWalHeader(header, absl::MakeSpan(raw));
  // Refuse to write a header no reader would accept (e.g. a bad page size).
  JKV_RETURN_IF_ERROR(DecodeWalHeader(raw).status());
  JKV_RETURN_IF_ERROR(file_->Write(0, raw));
  known_size_ = 0;  // a new generation: the file may have been cut since this log grew it
  return checksum;
}

absl::Status WalLog::CheckFrames(uint32_t first_frame, uint32_t page_size,
                                 absl::Span<const FramePage> pages) const {
  if (first_frame == 0 || pages.empty() ||
      pages.size() - 1 > std::numeric_limits<uint32_t>::max() - first_frame) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": cannot append ", pages.size(),
                                                   " frames at frame ", first_frame));
  }
  for (const FramePage& page : pages) {
    if (page.page_no.value() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(path(), ": cannot append page 0"));
    }
    if (page.image.size() != page_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(path(), ": image of page ", page.page_no.value(), " has ",
                       page.image.size(), " bytes, page size ", page_size));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> WalLog::Append(const WalHeader& header, uint32_t first_frame,
                                        uint64_t prev, absl::Span<const FramePage> pages,
                                        uint32_t commit_db_size) {
  const uint32_t page_size = header.page_size;
  JKV_RETURN_IF_ERROR(CheckFrames(first_frame, page_size, pages));
  const auto last = static_cast<uint32_t>(first_frame + (pages.size() - 1));
  JKV_RETURN_IF_ERROR(EnsureSize(LogEnd(last, page_size)));
  // The frames in one write: each image copied in, then its header encoded, which takes the
  // image's trailer from the copy just made (a big spill sealed its pages long before, and
  // reading a trailer there first was a cache miss per frame).
  const uint64_t frame_size = FrameSize(page_size);
  buffer_.resize(pages.size() * frame_size);
  uint8_t* p = buffer_.data();
  for (size_t i = 0; i < pages.size(); ++i, p += frame_size) {
    const FramePage& page = pages[i];
    std::memcpy(p + kFrameHeaderSize, page.image.data(), page_size);
    const bool commit = i + 1 == pages.size();
    FrameHeader h{page.page_no.value(), commit ? commit_db_size : 0, header.salt1, header.salt2};
    EncodeFrameHeader(h, prev, absl::MakeConstSpan(p + kFrameHeaderSize, page_size),
                      absl::MakeSpan(p, kFrameHeaderSize));
    prev = h.checksum;
  }
  JKV_RETURN_IF_ERROR(file_->Write(FrameHeaderOffset(first_frame, page_size), buffer_));
  return prev;
}

absl::Status WalLog::RewriteFrames(const WalHeader& header, uint32_t first_frame,
                                   absl::Span<const FramePage> pages) {
  // The checksums written here are placeholders (chained from 0): Rechain replaces them before
  // any commit frame can vouch for these frames. The headers' image_sum fields are the new
  // images' own, which Rechain chains as they are.
  return Append(header, first_frame, /*prev=*/0, pages, /*commit_db_size=*/0).status();
}

absl::StatusOr<uint64_t> WalLog::Rechain(const WalHeader& header, uint32_t first_frame,
                                         uint32_t last_frame, uint64_t prev) {
  const uint32_t page_size = header.page_size;
  // Frame headers only: each carries its image's checksum, so no image is read or written.
  std::array<uint8_t, kFrameHeaderSize> raw;
  for (uint64_t frame = first_frame; frame <= last_frame; ++frame) {
    const auto f = static_cast<uint32_t>(frame);
    const uint64_t offset = FrameHeaderOffset(f, page_size);
    const absl::Status s = file_->Read(offset, absl::MakeSpan(raw));
    if (absl::IsOutOfRange(s)) {
      return absl::DataLossError(absl::StrCat(path(), ": frames ", f, "..", last_frame,
                                              " to rechain are missing: ", s.message()));
    }
    JKV_RETURN_IF_ERROR(s);
    FrameHeader h = DecodeFrameHeader(raw);
    RechainFrameHeader(h, prev, absl::MakeSpan(raw));
    prev = h.checksum;
    JKV_RETURN_IF_ERROR(file_->Write(offset, raw));
  }
  return prev;
}

absl::Status WalLog::WriteAgain(const WalHeader& header, uint32_t first_frame,
                                uint32_t last_frame, uint64_t last_checksum) {
  if (first_frame == 0 || first_frame > last_frame) return absl::OkStatus();
  const auto lost = [&](uint32_t frame) {
    return absl::DataLossError(absl::StrCat(
        path(), ": frame ", frame, " was lost by a failed sync of the log (it is not the frame "
        "published); closing every connection to the database recovers the log's durable "
        "prefix"));
  };
  const uint32_t page_size = header.page_size;
  uint64_t prev = 0;
  if (first_frame == 1) {
    std::array<uint8_t, kWalHeaderSize> raw;
    prev = EncodeWalHeader(header, absl::MakeSpan(raw));
    JKV_RETURN_IF_ERROR(file_->Write(0, raw));  // not WriteHeader: known_size_ is the writer's
  } else {
    JKV_ASSIGN_OR_RETURN(const FrameHeader before, ReadFrameHeader(first_frame - 1, page_size));
    prev = before.checksum;
  }
  const uint64_t frame_size = FrameSize(page_size);
  const uint64_t per_chunk = std::max(kScanChunkFrames, kScanChunkBytes / frame_size);
  std::vector<uint8_t> chunk;
  for (uint64_t frame = first_frame; frame <= last_frame;) {
    const uint64_t n = std::min<uint64_t>(per_chunk, last_frame - frame + 1);
    const auto first = static_cast<uint32_t>(frame);
    chunk.resize(n * frame_size);
    JKV_RETURN_IF_ERROR(
        ReadInFrame(first, FrameHeaderOffset(first, page_size), absl::MakeSpan(chunk)));
    for (uint64_t i = 0; i < n; ++i) {
      const auto bytes = absl::MakeConstSpan(chunk).subspan(i * frame_size, frame_size);
      const FrameHeader h = DecodeFrameHeader(bytes.first(kFrameHeaderSize));
      if (!FrameValid(h, header, prev, bytes.subspan(kFrameHeaderSize))) return lost(first + i);
      prev = h.checksum;
    }
    if (frame + n > last_frame && prev != last_checksum) return lost(last_frame);
    JKV_RETURN_IF_ERROR(file_->Write(FrameHeaderOffset(first, page_size), chunk));
    frame += n;
  }
  return absl::OkStatus();
}

absl::Status WalLog::BreakChainAt(uint32_t frame, uint32_t page_size) {
  if (frame == 0) return absl::InvalidArgumentError(absl::StrCat(path(), ": frame 0"));
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file_->Size());
  const uint64_t offset = FrameHeaderOffset(frame, page_size);
  if (size < offset + kFrameHeaderSize) return absl::OkStatus();  // no such frame: no prefix past
  const std::array<uint8_t, kFrameHeaderSize> zeros{};
  return file_->Write(offset, zeros);
}

absl::Status WalLog::ReadInFrame(uint32_t frame, uint64_t offset, absl::Span<uint8_t> out) {
  if (frame == 0) return absl::InvalidArgumentError(absl::StrCat(path(), ": frame 0"));
  const absl::Status s = file_->Read(offset, out);
  // The frame was indexed, so it existed: a log cut short under it is damage.
  if (absl::IsOutOfRange(s)) {
    return absl::DataLossError(absl::StrCat(path(), ": wal frame ", frame, " is missing: ",
                                            s.message()));
  }
  return s;
}

absl::Status WalLog::ReadPage(uint32_t frame, uint32_t page_size, absl::Span<uint8_t> out) {
  if (out.size() != page_size) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": cannot read frame ", frame,
                                                   " into ", out.size(), " bytes"));
  }
  return ReadInFrame(frame, FrameImageOffset(frame, page_size), out);
}

absl::StatusOr<FrameHeader> WalLog::ReadFrame(uint32_t frame, uint32_t page_size,
                                              absl::Span<uint8_t> out) {
  if (out.size() != page_size) {
    return absl::InvalidArgumentError(absl::StrCat(path(), ": cannot read frame ", frame,
                                                   " into ", out.size(), " bytes"));
  }
  // Header and image in one read: a per-thread scratch buffer (ReadFrame runs concurrently).
  thread_local std::vector<uint8_t> scratch;
  scratch.resize(FrameSize(page_size));
  JKV_RETURN_IF_ERROR(
      ReadInFrame(frame, FrameHeaderOffset(frame, page_size), absl::MakeSpan(scratch)));
  std::memcpy(out.data(), scratch.data() + kFrameHeaderSize, page_size);
  return DecodeFrameHeader(absl::MakeConstSpan(scratch).first(kFrameHeaderSize));
}

absl::StatusOr<FrameHeader> WalLog::ReadFrameHeader(uint32_t frame, uint32_t page_size) {
  std::array<uint8_t, kFrameHeaderSize> bytes;
  JKV_RETURN_IF_ERROR(
      ReadInFrame(frame, FrameHeaderOffset(frame, page_size), absl::MakeSpan(bytes)));
  return DecodeFrameHeader(bytes);
}

absl::Status WalLog::Truncate(uint64_t size) {
  JKV_RETURN_IF_ERROR(file_->Truncate(size));
  known_size_ = size;
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> WalLog::Size() { return file_->Size(); }

absl::Status WalLog::EnsureSize(uint64_t end) {
  if (end <= known_size_) return absl::OkStatus();
  // known_size_ may be stale (0 after Open, or the file was cut by another connection).
  JKV_ASSIGN_OR_RETURN(const uint64_t size, file_->Size());
  known_size_ = size;
  if (end <= size) return absl::OkStatus();
  // Grow in big steps (from grow_bytes_, doubling, up to kMaxGrowBytes), so that a log in steady state is never
  // extended and a data-only sync is enough to make an append durable, while no one commit
  // writes more than a few MiB of zeros.
  const uint64_t step = std::clamp(size, grow_bytes_, kMaxGrowBytes);
  const uint64_t new_size = RoundUp(std::max(end, size + step), grow_bytes_);
  const std::vector<uint8_t> zeros(std::min(kZeroChunkBytes, new_size - size), 0);
  for (uint64_t at = size; at < new_size;) {
    const uint64_t n = std::min<uint64_t>(zeros.size(), new_size - at);
    absl::Status s = file_->Write(at, absl::MakeConstSpan(zeros.data(), n));
    if (absl::IsResourceExhausted(s)) {
      // The disk cannot take the step: give back the zeros written (they would keep the
      // database file from growing at the next checkpoint), and let the append write its
      // frames past the end itself, growing the file by exactly what it needs (its sync then
      // carries the size too). Only a commit whose own frames do not fit fails. The file may
      // have grown even when no chunk went through whole (pwrite writes what fits, then
      // fails), so it is cut back whatever `at` says.
      JKV_RETURN_IF_ERROR(file_->Truncate(size));
      known_size_ = size;
      return absl::OkStatus();
    }
    JKV_RETURN_IF_ERROR(s);
    zero_bytes_.fetch_add(n, std::memory_order_relaxed);
    at += n;
    known_size_ = at;
  }
  return absl::OkStatus();
}

}  // namespace journalkv::wal
