// The transactions of the pager, as every journaling mode shares them: ReadTxn (a snapshot),
// WriteTxn (dirty pages, the freelist, the checks of their callers, and the hooks each
// strategy implements for where clean pages come from, the spill, the commit and the undo) and
// CommitRecord (what a commit wrote). The strategies (journal_strategy.h) subclass them; the
// B+tree and the engine use them through pager.h. Kept apart from the Pager facade so that a
// strategy includes this header and not the facade that owns it.
//
// Thread-safety: each transaction object is used by one thread at a time.
#ifndef JOURNALKV_PAGER_TXN_H_
#define JOURNALKV_PAGER_TXN_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "base/types.h"
#include "pager/db_format.h"
#include "pager/journal_mode.h"
#include "pager/page_access.h"

namespace journalkv::pager {

class PagerCore;

// A read transaction: one snapshot of the database for its whole life. Made by the
// journaling strategy, whose subclass holds the snapshot and reads the pages.
class ReadTxn : public PageReader {
 public:
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

  uint32_t page_count() const override { return header_.page_count; }
  uint32_t usable_size() const override { return UsableSize(header_.page_size); }
  uint32_t meta(int slot) const override { return header_.meta[slot]; }

  // Every page on the freelist (trunks and leaves). DataLoss when the freelist is damaged.
  absl::StatusOr<std::vector<PageNo>> FreelistPages();
  // Reads every page of the database from the file and checks its checksum and the freelist;
  // returns one line per problem found (empty: all good). Stops after kMaxPageProblems
  // unreadable pages, with a last line saying so: a damaged header or commit frame can claim
  // billions of pages that are not there, and listing each would take hours.
  static constexpr size_t kMaxPageProblems = 100;
  absl::StatusOr<std::vector<std::string>> CheckPages();
  const DbHeader& header() const { return header_; }

 protected:
  ReadTxn(PagerCore* core, const DbHeader& header) : core_(core), header_(header) {}
  // InvalidArgument unless 2 <= page_no <= page_count (page 1 is the header's).
  absl::Status CheckPageNo(PageNo page_no) const;
  // The page as this snapshot sees it, read and checked without the cache (CheckPages).
  virtual absl::StatusOr<std::shared_ptr<const PageBuffer>> LoadUncached(PageNo page_no) = 0;

  PagerCore* const core_;
  const std::thread::id thread_ = std::this_thread::get_id();  // the thread that began it
  const DbHeader header_;
};

// What a write transaction's successful commit wrote (WriteTxn::commit_record).
// The modes that write a log (WAL, WAL2) say where in it the commit went.
struct LogCommit {
  int log = 0;                // the log it went to: 0 -wal, 1 -wal2
  uint32_t generation = 0;    // that log's generation (wal/wal_connection.h)
  uint32_t first_frame = 0;   // the transaction's frames: first_frame..last_frame, the
  uint32_t last_frame = 0;    // last its commit frame
  uint64_t log_bytes = 0;     // the log's bytes through the commit frame
};

struct CommitRecord {
  uint32_t pages = 0;           // distinct pages the transaction wrote, page 1 included
  uint64_t change_counter = 0;  // the header's after the commit (WAL: advanced only when the
                                // commit logged page 1)
  std::optional<LogCommit> log;  // set by the strategies that write a log; none otherwise
};

class CommitPromise;  // commit_pipeline.h

// The write transaction. Destroying it without Commit rolls back. Made by the journaling
// strategy, whose subclass implements the hooks below (where a clean page comes from, the
// spill, the commit, the undo) and holds its per-transaction state.
class WriteTxn : public PageWriter {
 public:
  ~WriteTxn() override;
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;

  absl::StatusOr<PageRef> Get(PageNo page_no) override;
  uint32_t page_count() const override { return header_.page_count; }
  uint32_t usable_size() const override { return UsableSize(header_.page_size); }
  uint32_t meta(int slot) const override { return header_.meta[slot]; }

  absl::StatusOr<absl::Span<uint8_t>> GetMutable(PageNo page_no) override;
  absl::StatusOr<MutablePage> Allocate() override;
  absl::Status Free(PageNo page_no) override;
  void set_meta(int slot, uint32_t value) override { header_.meta[slot] = value; }
  // L10.
  void HoldForCommit(PageNo page_no) override { held_.insert(page_no.value()); }

  // Makes the transaction durable (as the sync level promises) and visible. On error the
  // transaction has been rolled back (or, when the database file was already touched, the pager
  // is in its sticky error state), except for one: a busy error (Unavailable) from waiting for
  // the readers of other connections to finish before anything was written (the rollback
  // journal's EXCLUSIVE lock). Then the transaction stays open, whole (finished() is false):
  // Commit again to retry, or Rollback. FailedPrecondition after Commit or Rollback.
  absl::Status Commit();
  // Commit, pipelined (commit_pipeline.h): ends the transaction once its commit is appended
  // and returns the promise of its outcome, so that the writer can begin its next transaction
  // while this one's flush is in flight (WAL and WAL2 at FULL and EXTRA). Every other mode and
  // level completes the commit first and returns a settled promise. `on_durable` runs once the
  // commit is durable and visible, before the promise settles OK (on this thread when the
  // commit completed here, else on the connection's flusher thread, in commit order: N2).
  // Errors before the append are returned as Commit's (the transaction rolled back, or still
  // open after a retryable busy error); a flush's failure is the promise's (N3).
  absl::StatusOr<std::shared_ptr<CommitPromise>> CommitAsync(
      std::function<void(const CommitRecord&)> on_durable);
  // Whether the transaction has ended (committed or rolled back).
  bool finished() const { return finished_; }
  // Discards every change. Idempotent.
  absl::Status Rollback();

  // When the transaction holds more dirty pages than the cache capacity, writes them out (the
  // rollback journal: to the database file, journaling their originals first, under the
  // EXCLUSIVE lock until the transaction ends; WAL: to the log, unpublished) and drops them
  // from memory, so that a transaction larger than the cache still works. Every span returned
  // by GetMutable or Allocate before this call is invalid after it: call it only between
  // operations (the engine does, after each Put and Delete).
  absl::Status SpillIfNeeded();

  absl::StatusOr<std::vector<PageNo>> FreelistPages();
  const DbHeader& header() const { return header_; }
  size_t dirty_pages() const { return dirty_.size(); }

  // Compaction (Db::Compact) replaces the whole database in one transaction. StartRewrite(n),
  // before the transaction has written any page, empties the freelist and makes the database
  // n pages long (1 <= n <= page_count; 1: no page but the header's, an empty tree); the
  // caller then fills every page 2..n whole through
  // RewritePage (the returned span is the page's usable bytes, contents unspecified) and sets
  // the meta slots, so that nothing refers to a page past n. The pages past n are gone once
  // the transaction commits: the rollback modes cut the file after its sync (I11), WAL and
  // WAL2 when a checkpoint has copied the commit (wal/checkpoint_copy.h, C7). A rollback restores
  // the database as it was. FailedPrecondition once a page was written; InvalidArgument for n
  // out of range.
  absl::Status StartRewrite(uint32_t page_count);
  absl::StatusOr<absl::Span<uint8_t>> RewritePage(PageNo page_no);

  // A rebuild (Db::Compact since it builds straight into its transaction): the database
  // written anew from page 2 up while the pages it replaces are still being read. Like
  // StartRewrite it must come before the transaction writes any page, empties the freelist and
  // makes the commit cut the file (I11, C7); unlike it the database starts at one page (the
  // header's) and grows by Allocate, which then hands out pages 2, 3, ... in order. The meta
  // slots stay as they were: the caller sets them. What it keeps (cited at their code):
  //   L7. A page a rebuild's Allocate hands out that was in use when the transaction began
  //       keeps its original as any first write of a page does (the rollback journal has the
  //       original, durable at sync != OFF, before the page is overwritten in the file: I1);
  //       a page that was a free leaf then, and a page past the start's end, is handed out
  //       blank with nothing journaled (freelist.h). The pages are handed out once each, in
  //       order, and nothing else is written: a crash before the commit leaves a hot journal
  //       with the original of every page the file holds of the rebuild (or, WAL and ATOMIC,
  //       frames or a batch that were never committed) and every page past them as it was,
  //       so recovery gives the old database back; the commit is an ordinary one, and the
  //       file is cut only after its pages are durable (I11; WAL and WAL2 by the checkpoint
  //       that copies the whole log, C7).
  //   L8. GetAtStart(p) is page p as the transaction's start had it, whatever the transaction
  //       wrote to p since: the original kept in memory when the page is dirty, else the
  //       strategy's StartImage (the rollback journal: the original read back from the
  //       journal, or the in-memory journal, for a page spilled over it; WAL and WAL2: the
  //       page at the writer's start snapshot, never its own frames; ATOMIC: the file, which
  //       the batch leaves alone until the commit), else the committed image. So the old tree
  //       can be read whole, in key order, while the new one overwrites its pages, with no
  //       second copy of the database (the image Compact wrote before). (A page that was a
  //       free leaf at the start kept no original, L7, and had no content worth one: no tree
  //       page refers to it, and GetAtStart gives whatever it holds now.)
  //   L9. AtStart's reader holds images, never spans into the transaction's dirty pages: a
  //       spill in between (SpillIfNeeded) drops the transaction's buffers but not the images
  //       the reader's PageRefs own, so a cursor over it stays valid across spills.
  //   L10. A page held for the commit (HoldForCommit: the builder's root, written at its first
  //       pair and again at its end) stays dirty in memory across every spill, its original
  //       with it, and reaches the disk only with the commit's pages: the rollback journal
  //       then journals its original in the commit's flush, durable before the page is
  //       written (I1, as for any page first written at commit); WAL appends it once, so no
  //       spilled frame of the transaction is written over (W11) and the commit does not
  //       rechain the log from the transaction's first frame (reading and rewriting every
  //       frame header: what a compaction of 4,700 pages spent 8,000 calls on). A spill is
  //       the strategy's as before, of every other dirty page.
  //   L11. A rebuild reads the originals its Allocate keeps (L7) ahead, in page order, a run
  //       at a time (ReadAheadOriginals; the rollback journal: one read of up to 32 pages,
  //       at most a quarter of the cache, into the page cache). What the read-ahead caches is
  //       only what CleanPage would have read alone: a page of the start (2..its page count)
  //       the transaction has neither journaled nor dirtied, so the file still holds it as the
  //       start had it (I1: only journaled pages are written before the commit), and whose
  //       checksum holds; a page that fails it is left out, for CleanPage's own read to
  //       report. Nothing is written and nothing journaled by it; a failed read leaves every
  //       page to be read alone, as before.
  // FailedPrecondition once a page was written.
  absl::Status StartRebuild();
  // L8. InvalidArgument for a page outside [2, the start's page count].
  absl::StatusOr<PageRef> GetAtStart(PageNo page_no);
  // The transaction's start as a read-only PageReader (its page count and meta slots, pages
  // through GetAtStart), for a cursor over the old tree during a rebuild. It must not outlive
  // the transaction.
  std::unique_ptr<PageReader> AtStart();

  // What a successful Commit wrote (the engine's commit and WAL hooks report it); zeros
  // before, and after a commit that wrote nothing.
  const CommitRecord& commit_record() const { return commit_record_; }
  // Records `family` in page 1 at commit (the pager's switch between journal families).
  void set_journal_family(JournalFamily family) { header_.journal_family = family; }

  // The journal family this transaction commits in (the strategy's), and the connection's
  // journal mode: what a commit across databases (across.h) checks of its participants.
  virtual JournalFamily family() const = 0;
  JournalMode journal_mode() const;
  // The database file's path (messages).
  const std::string& path() const;

 protected:
  struct DirtyPage {
    std::shared_ptr<PageBuffer> buffer;
    std::shared_ptr<const PageBuffer> original;  // null: nothing to journal for this page
  };
  using DirtyMap = absl::flat_hash_map<uint32_t, DirtyPage>;

  WriteTxn(PagerCore* core, const DbHeader& header)
      : core_(core), start_header_(header), header_(header) {}

  // --- The strategy's hooks.
  // The committed image of a page this transaction has not dirtied (WAL: a frame it spilled).
  virtual absl::StatusOr<std::shared_ptr<const PageBuffer>> CleanPage(PageNo page_no) = 0;
  // Whether MakeDirty keeps the committed image of `page_no` as the page's original (the
  // rollback journal saves originals; the WAL never needs them).
  virtual bool KeepsOriginal(PageNo page_no) const = 0;
  // True once the transaction has written anything outside memory (spilled pages).
  virtual bool HasWritten() const = 0;
  // Writes out every dirty page and clears dirty_ (SpillIfNeeded).
  virtual absl::Status SpillPages() = 0;
  // Makes the transaction durable and visible and ends it (End); Commit undoes it on error.
  virtual absl::Status CommitPages() = 0;
  // CommitPages, pipelined: on OK, *promise is the commit's (settled, or queued on the
  // connection's flusher with `on_durable`, N1). The default completes the commit here
  // (CommitPages, then on_durable) and returns a settled promise.
  virtual absl::Status CommitPagesAsync(std::function<void(const CommitRecord&)> on_durable,
                                        std::shared_ptr<CommitPromise>* promise);
  // Undoes what the transaction wrote outside memory; *clear_cache is set when the page cache
  // may hold pages it wrote. A failure here is the handle's sticky error (set by the caller).
  virtual absl::Status UndoWrites(bool* clear_cache) = 0;
  // L8: the committed image of a page at the transaction's start, for a page the transaction
  // may have written since and which has no original in dirty_ (spilled, or dirtied again
  // after a spill).
  virtual absl::StatusOr<std::shared_ptr<const PageBuffer>> StartImage(PageNo page_no) = 0;
  // L11: a rebuild's Allocate is about to keep the originals of pages first..first+count-1
  // (all within the start), in that order. A strategy that keeps originals may read those it
  // lacks in one go; the default does nothing.
  virtual void ReadAheadOriginals(PageNo /*first*/, uint32_t /*count*/) {}
  // Gives up the writer role (the locks, WAL: the WRITE lock), after dirty_ is cleared.
  virtual void EndWrite(bool clear_cache) = 0;
  // The database now ends at `page_count` (ReleaseFreeTail): forget what was spilled of the
  // pages past it, which are no part of the commit.
  virtual void DropPagesPast(uint32_t /*page_count*/) {}

  absl::Status CheckUsable() const;
  // Commit's steps around the strategy's CommitPages, which a commit across databases
  // (across.h) runs too. StartCommit: false when the transaction has ended with nothing to
  // commit (an unchanged transaction), an error when it cannot commit (then rolled back, as
  // Commit's); true to go on. FinishCommit(s): after CommitPages returned `s`, undoes a failed
  // commit (unless it failed busy and retryable) and makes a failed sync sticky (I7).
  absl::StatusOr<bool> StartCommit();
  absl::Status FinishCommit(absl::Status s);
  friend absl::Status CommitAcross(absl::Span<WriteTxn* const> txns);
  friend class AcrossCommit;  // across.h: the families' commits across databases

  // Ends the transaction: finished, dirty pages dropped, the writer role given up.
  void End(bool clear_cache);
  // PagerOptions::auto_vacuum, at commit: the free pages at the end of the database leave the
  // freelist (rebuilt from the pages kept) and page_count ends before them.
  absl::Status ReleaseFreeTail();

  // The database ends before where it ended when the transaction began, or before pages the
  // transaction spilled (StartRewrite, ReleaseFreeTail): the commit cuts the file (I11, C7).
  bool shrunk_ = false;

  PagerCore* const core_;
  const DbHeader start_header_;
  DbHeader header_;
  absl::Status failed_;  // a failure that forces rollback
  // Set by a strategy's CommitPages that failed busy before writing anything outside memory
  // and left the transaction whole (its locks, its pages): Commit keeps it open.
  bool commit_retryable_ = false;
  DirtyMap dirty_;
  CommitRecord commit_record_;  // set by a strategy's successful CommitPages

 private:
  absl::Status CheckPageNo(PageNo page_no) const;
  absl::StatusOr<DirtyPage*> MakeDirty(PageNo page_no);
  DirtyPage* AddBlankPage(PageNo page_no);

  bool finished_ = false;
  absl::flat_hash_set<uint32_t> freed_;  // freed by this transaction
  // StartRewrite: the freelist's leaves when the transaction began (nothing to keep of them).
  absl::flat_hash_set<uint32_t> rewrite_blank_;
  bool rebuilding_ = false;  // StartRebuild: Allocate hands out pages in order (L7)
  uint32_t read_ahead_end_ = 0;  // L11: the originals before this page were read ahead
  absl::flat_hash_set<uint32_t> held_;  // HoldForCommit (L10)
  // StartRewrite's and StartRebuild's common part: the free leaves noted, the freelist emptied,
  // the database `page_count` pages long.
  absl::Status BeginRewrite(uint32_t page_count);
};

}  // namespace journalkv::pager

#endif  // JOURNALKV_PAGER_TXN_H_
