// Strong identifier types that must not mix with each other or with byte offsets.
// Page numbers are 1-based: page 1 holds the database header; PageNo 0 never names a page.
#ifndef JOURNALKV_BASE_TYPES_H_
#define JOURNALKV_BASE_TYPES_H_

#include <compare>
#include <cstdint>
#include <functional>

namespace journalkv {

template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;
  constexpr explicit StrongId(uint32_t v) : v_(v) {}
  constexpr uint32_t value() const { return v_; }
  constexpr auto operator<=>(const StrongId&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, StrongId id) {
    return H::combine(std::move(h), id.v_);
  }

 private:
  uint32_t v_ = 0;
};

struct PageNoTag {};
struct FrameNoTag {};
using PageNo = StrongId<PageNoTag>;    // 1-based page number in the database file
using FrameNo = StrongId<FrameNoTag>;  // 1-based frame number in a write-ahead log

}  // namespace journalkv

template <typename Tag>
struct std::hash<journalkv::StrongId<Tag>> {
  size_t operator()(journalkv::StrongId<Tag> id) const { return std::hash<uint32_t>()(id.value()); }
};

#endif  // JOURNALKV_BASE_TYPES_H_
