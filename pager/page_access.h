// The page-level view of a transaction that the B+tree works through.
//
// PageReader is one consistent snapshot of the database's pages; PageWriter adds the changes of
// a write transaction. The pager's ReadTxn and WriteTxn implement them; tests of the layers
// above may implement them over plain memory.
//
// Pages are seen without their 8-byte checksum trailer: every span is UsableSize(page_size)
// bytes. Page 1 is the pager's header page and is never handed out; the layers above keep
// their few global values in the header's meta slots.
//
// Thread-safety: a transaction is used by one thread at a time.
#ifndef JOURNALKV_PAGER_PAGE_ACCESS_H_
#define JOURNALKV_PAGER_PAGE_ACCESS_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"

namespace journalkv::pager {

// What a layer above derives from a page image and keeps with it, built at most once per image
// (the B+tree's search hints, btree/key_hints.h). Only one layer decorates pages, so it knows
// the type of every decoration it finds.
class PageDecoration {
 public:
  virtual ~PageDecoration() = default;
};

// A whole page image (page_size bytes, trailer included). Shared between the cache, readers and
// the writer; immutable once published to the cache. The bytes start uninitialized: every
// creator fills the whole page (a read, a copy, or an explicit zero fill).
//
// Decorations (K1-K3, cited at their uses):
//   K1. A decoration is attached only to an image whose bytes never change again (a PageRef
//       that is fixed()): a write transaction's own dirty page is never decorated, so no
//       decoration describes bytes that a later GetMutable changes.
//   K2. `decoration` goes from null to its one value once, by compare-exchange (release); a
//       reader loads it with acquire and so sees the decoration whole. Two threads that both
//       build one keep the first; the second deletes its own.
//   K3. The image owns it: it lives until the last PageRef and the cache let go of the image.
struct PageBuffer {
  explicit PageBuffer(uint32_t size) : bytes(new uint8_t[size]), size(size) {}
  ~PageBuffer() { delete decoration.load(std::memory_order_acquire); }  // K3
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  std::unique_ptr<uint8_t[]> bytes;
  uint32_t size;
  mutable std::atomic<const PageDecoration*> decoration{nullptr};  // K2
};

// A pinned, read-only page. Cheap to copy; keeps the page image alive while it exists, or,
// borrowed, while the read transaction that handed it out is open (whose table of pages keeps
// the image: pager/hot_pages.h). No PageRef outlives its transaction. The bytes do not change
// for the life of the PageRef unless the same transaction modifies that page through
// PageWriter::GetMutable (then the PageRef sees the change, and it is not fixed()).
class PageRef {
 public:
  // Whether the bytes can change while the image lives.
  enum class Bytes { kFixed, kChanging };

  PageRef() = default;
  PageRef(PageNo page_no, std::shared_ptr<const PageBuffer> buffer, uint32_t usable_size,
          Bytes bytes)
      : page_no_(page_no),
        bytes_(buffer->bytes.get()),
        image_(buffer.get()),
        owner_(std::move(buffer)),
        usable_size_(usable_size),
        fixed_(bytes == Bytes::kFixed) {}
  // A fixed image that something else keeps alive for as long as the PageRef is used (its
  // transaction's table of pages): no reference count is taken, and nothing of the image but
  // `bytes` is read until the decoration is asked for (a point read's leaf: its reference count
  // was a cache miss of its own before the page's).
  static PageRef Borrowed(PageNo page_no, const PageBuffer* image, const uint8_t* bytes,
                          uint32_t usable_size) {
    PageRef ref;
    ref.page_no_ = page_no;
    ref.bytes_ = bytes;
    ref.image_ = image;
    ref.usable_size_ = usable_size;
    ref.fixed_ = true;
    return ref;
  }

  // A fixed page read in place in the database file's memory map (pager/mapped_pages.h): no
  // image, so no decoration (Decorate keeps none) and no owner; the map outlives every
  // transaction (vfs/read_map.h E3).
  static PageRef Mapped(PageNo page_no, const uint8_t* bytes, uint32_t usable_size) {
    PageRef ref;
    ref.page_no_ = page_no;
    ref.bytes_ = bytes;
    ref.usable_size_ = usable_size;
    ref.fixed_ = true;
    return ref;
  }

  PageNo page_no() const { return page_no_; }
  absl::Span<const uint8_t> data() const { return absl::Span<const uint8_t>(bytes_, usable_size_); }
  bool valid() const { return bytes_ != nullptr; }
  // Whether the bytes are the memory map's (Mapped), not an image's.
  bool mapped() const { return image_ == nullptr && bytes_ != nullptr; }
  // The image's owning pointer; null for a borrowed PageRef.
  const std::shared_ptr<const PageBuffer>& owner() const { return owner_; }

  // True for a clean image (cached or read for the transaction), false for a write
  // transaction's own dirty page. Only a fixed image carries a decoration (K1).
  bool fixed() const { return fixed_; }
  // The image's decoration, or nullptr (K2; always for a mapped page). REQUIRES: valid().
  const PageDecoration* decoration() const {
    return image_ == nullptr ? nullptr : image_->decoration.load(std::memory_order_acquire);
  }
  // Attaches `decoration` unless the image has one already, and returns the one it keeps (K2);
  // a mapped page keeps none (nullptr). REQUIRES: fixed() (K1).
  const PageDecoration* Decorate(std::unique_ptr<PageDecoration> decoration) const {
    if (image_ == nullptr) return nullptr;
    const PageDecoration* expected = nullptr;
    if (image_->decoration.compare_exchange_strong(expected, decoration.get(),
                                                   std::memory_order_acq_rel,
                                                   std::memory_order_acquire)) {
      return decoration.release();
    }
    return expected;  // another thread's came first; ours is deleted
  }

 private:
  PageNo page_no_;
  const uint8_t* bytes_ = nullptr;      // image_->bytes
  const PageBuffer* image_ = nullptr;
  std::shared_ptr<const PageBuffer> owner_;  // null when borrowed
  uint32_t usable_size_ = 0;
  bool fixed_ = false;
};

struct MutablePage {
  PageNo page_no;
  absl::Span<uint8_t> data;  // UsableSize bytes, valid until the transaction ends
};

class PageReader {
 public:
  virtual ~PageReader() = default;

  // The page as of this transaction. InvalidArgument for page 1, page 0 or a page past
  // page_count(); DataLoss ("x.db page 7: checksum mismatch") when the stored page is damaged.
  virtual absl::StatusOr<PageRef> Get(PageNo page_no) = 0;

  virtual uint32_t page_count() const = 0;
  virtual uint32_t usable_size() const = 0;
  virtual uint32_t meta(int slot) const = 0;  // header meta slot, 0..kNumMetaSlots-1

  // A hint from the layer above: `page`, just read through Get, is an interior page of the
  // tree, which most reads of this snapshot pass through. A reader may keep it at hand for the
  // transactions of the same snapshot (WAL: pager/hot_pages.h); the default ignores it.
  virtual void NoteInterior(const PageRef& page) { (void)page; }
  // The same for a leaf page just read through Get (WAL: a leaf read in place in the memory
  // map enters the hot-page table, pager/mapped_pages.h O8); the default ignores it.
  virtual void NoteLeaf(const PageRef& page) { (void)page; }

  // The page's bytes when this transaction has them at hand without a read or a lock, else
  // nullptr: for a hint only (a prefetch of the page a scan goes to next), since nothing keeps
  // the bytes alive past the call. The default has nothing at hand.
  virtual const uint8_t* BytesAtHand(PageNo page_no) {
    (void)page_no;
    return nullptr;
  }

  // Whether every page this transaction handed out so far read as it was stored: an error when
  // a page read in place in the memory map may have read zeros for a fault (vfs/read_map.h
  // O2). The engine calls it before a read operation returns what it read from the pages.
  virtual absl::Status CheckReads() const { return absl::OkStatus(); }
};

class PageWriter : public PageReader {
 public:
  // The page made writable for this transaction; the span stays valid, and keeps its contents,
  // until the transaction ends. Same errors as Get.
  virtual absl::StatusOr<absl::Span<uint8_t>> GetMutable(PageNo page_no) = 0;

  // A new page, zero-filled and writable: from the freelist when it has one, else past the end.
  virtual absl::StatusOr<MutablePage> Allocate() = 0;

  // Gives the page back to the freelist. Its content is not kept. REQUIRES: the page is in use
  // by the caller (freeing a free page is detected by the structure check, not here).
  virtual absl::Status Free(PageNo page_no) = 0;

  virtual void set_meta(int slot, uint32_t value) = 0;

  // A hint: `page_no`, written in this transaction, will be written again before it ends (the
  // bottom-up builder's root, written first and last: btree/builder.h L6). A transaction that
  // spills may keep the page in memory until its commit instead of writing it out twice
  // (pager/txn.h L10). The default ignores it.
  virtual void HoldForCommit(PageNo page_no) { (void)page_no; }

  // Changes made to the tree in this transaction, counted by the layer above so that its
  // cursors notice a change under them. Not stored: a transaction that changes only pages
  // leaves the header (page 1) alone, which in WAL mode saves a frame per commit.
  uint64_t write_count() const { return write_count_; }
  void CountWrite() { ++write_count_; }

 private:
  uint64_t write_count_ = 0;
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_PAGE_ACCESS_H_
