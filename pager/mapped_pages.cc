#include "pager/mapped_pages.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pager/db_format.h"

namespace journalkv::pager {
namespace {

// 2^21 pages: 8 GiB of 4 KiB pages, a 16 MiB table at most (allocated lazily by the kernel).
constexpr uint64_t kMaxStamps = uint64_t{1} << 21;

}  // namespace

MappedPages::MappedPages(vfs::ReadMap* map, uint32_t page_size, std::string path)
    : map_(map),
      page_size_(page_size),
      path_(std::move(path)),
      stamp_count_(std::min(map->length() / page_size + 1, kMaxStamps)),
      stamps_(static_cast<uint64_t*>(std::calloc(stamp_count_, sizeof(uint64_t))), &std::free),
      repaired_damage_(map->damage()) {}

MappedPages::ReadStart MappedPages::BeginRead(uint32_t db_epoch) {
  const uint64_t damage = map_->damage();
  if (damage != repaired_damage_) {  // O3
    map_->Repair();
    repaired_damage_ = damage;
  }
  ReadStart start;
  start.damage = map_->damage();
  if ((db_epoch & 1) == 0) {  // O5: an odd epoch trusts nothing
    start.key = ((map_->repairs() << 32) | db_epoch) + 1;  // odd, never 0
  }
  return start;
}

const uint8_t* MappedPages::Page(PageNo page_no, uint64_t key) {
  const uint64_t p = page_no.value();
  const uint8_t* bytes = map_->Bytes((p - 1) * page_size_, page_size_);
  if (bytes == nullptr) return nullptr;  // O7: past the map or the size last seen
  const bool tabled = stamps_ != nullptr && p < stamp_count_;
  // Relaxed: a stamp vouches for bytes that no write changes while its key lasts (O6), so it
  // orders nothing; it only saves the check.
  if (key != 0 && tabled &&
      std::atomic_ref<uint64_t>(stamps_.get()[p]).load(std::memory_order_relaxed) == key) {
    return bytes;  // O6
  }
  checks_.fetch_add(1, std::memory_order_relaxed);
  if (!PageChecksumOk(page_no, absl::MakeConstSpan(bytes, page_size_))) return nullptr;  // O7
  if (key != 0 && tabled) {
    std::atomic_ref<uint64_t>(stamps_.get()[p]).store(key, std::memory_order_relaxed);
  }
  return bytes;
}

absl::Status MappedPages::DamageError() const {
  return absl::DataLossError(absl::StrCat(
      path_, ": a page of the memory-mapped database file could not be read (the file was cut "
             "short by another process, or the disk failed to read it), and this read "
             "transaction may have seen zeros in its place (vfs/read_map.h O2): end it and "
             "retry"));
}

}  // namespace journalkv::pager
