// `jkv DBPATH inspect ...` (README, "CLI"): the raw structures of a database's files as their
// format comments define them, for reading a failing crash test's files or a user's damaged
// database:
//   page N   page N of the database file as the file holds it (not a newer version in a
//            log): page 1's header fields, or a B-tree page's header and cells, an overflow
//            page's link, a freelist trunk's entries; the trailer checksum (pager/db_format.h,
//            btree/btree_format.h, pager/freelist.h)
//   journal  the rollback journal's header, records and seal (pager/journal_format.h)
//   wal      the log's header and frames with their salts and checksum chain
//            (log/wal_format.h); `wal2` the same for x.db-wal2
//   shm      the wal-index: the header copies, checkpoint words, wake words, reader slots
//            and pins, and each hash block's fill (shm/wal_index.h)
// Nothing is opened as a database, locked or written: the files are read as they are, and a
// damaged one prints what can be read, names what is wrong ("BAD: ..."), and never crashes.
//
// Thread-safety: a function call uses only its arguments.
#ifndef JOURNALKV_TOOLS_INSPECT_H_
#define JOURNALKV_TOOLS_INSPECT_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "vfs/vfs.h"

namespace journalkv::tools {

// `what` is "page", "journal", "wal", "wal2" or "shm"; `page_no` is page's N. An error only
// when the file cannot be read at all (missing, a directory, an I/O error) or `what` is unknown.
absl::Status Inspect(vfs::FileSystem& fs, const std::string& db_path, const std::string& what,
                     uint64_t page_no, std::ostream& out);

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_INSPECT_H_
