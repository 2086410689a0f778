// Helpers of the WAL roles' unit tests (testonly): a page image as the log takes it, and a
// commit appended to a log in memory, so that each role's test builds its logs the same way.
#ifndef JOURNALKV_WAL_WAL_TESTING_H_
#define JOURNALKV_WAL_WAL_TESTING_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "base/endian.h"
#include "base/status_macros.h"
#include "base/types.h"
#include "log/wal_format.h"
#include "log/wal_log.h"
#include "shm/wal_index.h"
#include "wal/checkpoint_copy.h"

namespace journalkv::wal::testing {

// Page `page`'s image of `page_size` bytes, each `fill`, ending with its checksum (as every
// image the log takes does: log/wal_format.h).
inline std::vector<uint8_t> PageImage(uint32_t page, uint8_t fill, uint32_t page_size) {
  std::vector<uint8_t> image(page_size, fill);
  base::EncodeFixed64(image.data() + page_size - 8, ImageChecksum(page, image));
  return image;
}

// Appends one commit of `pages` to `log`, log `l` of header `h`, whose words for it follow
// (mx_frame, last_checksum); page p's image is PageImage(p, fill < 0 ? p : fill). The commit
// frame records `db_size` pages. Not indexed (IndexFrames).
inline absl::Status AppendCommit(WalLog& log, shm::IndexHeader& h, int l,
                                 const std::vector<uint32_t>& pages, int fill,
                                 uint32_t db_size) {
  std::vector<std::vector<uint8_t>> images;
  std::vector<FramePage> frames;
  images.reserve(pages.size());
  for (uint32_t p : pages) {
    images.push_back(PageImage(p, static_cast<uint8_t>(fill < 0 ? p : fill), h.page_size));
    frames.push_back({PageNo(p), images.back()});
  }
  shm::LogState& s = h.logs[l];
  JKV_ASSIGN_OR_RETURN(s.last_checksum, log.Append(LogHeaderFor(h, l), s.mx_frame + 1,
                                                   s.last_checksum, frames, db_size));
  s.mx_frame += static_cast<uint32_t>(pages.size());
  return absl::OkStatus();
}

// Indexes the last `pages.size()` frames of log `l` up to `h`'s mx_frame (as AppendCommit just
// appended them), reserving their blocks first as a writer does.
inline absl::Status IndexFrames(shm::WalIndex& index, const shm::IndexHeader& h, int l,
                                const std::vector<uint32_t>& pages) {
  const uint32_t n = static_cast<uint32_t>(pages.size());
  const uint32_t first = h.logs[l].mx_frame - n + 1;
  JKV_RETURN_IF_ERROR(index.Reserve(l, first, h.logs[l].mx_frame));
  for (uint32_t i = 0; i < n; ++i) JKV_RETURN_IF_ERROR(index.Append(l, first + i, pages[i]));
  return absl::OkStatus();
}

}  // namespace journalkv::wal::testing

#endif  // JOURNALKV_WAL_WAL_TESTING_H_
