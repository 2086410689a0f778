#include "tools/help.h"

namespace journalkv::tools {

absl::string_view UsageText() {
  return "usage: jkv [OPTIONS] DBPATH COMMAND [ARGS]\n"
         "       jkv [OPTIONS] DBPATH shell [OTHER_DBPATH ...]\n"
         "       jkv --help    (options, commands, tokens, exit status, shell protocol)\n";
}

absl::string_view HelpText() {
  return R"(usage: jkv [OPTIONS] DBPATH COMMAND [ARGS]
       jkv [OPTIONS] DBPATH shell [OTHER_DBPATH ...]

jkv reads and writes the journalkv database DBPATH. put, load and shell create it
when it does not exist (unless --read-only); every other command on a missing
path (or an empty file) is an error naming it. A database the user may read but not write (no write
permission on it, its folder, its -wal or -shm, or a read-only file system) is
opened read-only without --read-only: reads work, writes fail saying why.

Options (before DBPATH; "--" ends them):
  --journal=MODE        wal, wal2, delete, truncate, persist, memory, off or
                        atomic (no journal, no log: each commit is one atomic
                        write of the file system; needs XFS with exchange-range
                        on Linux 6.10+, or F2FS);
                        without it a new database is created in wal and an
                        existing one keeps its family (wal, wal2, or delete for
                        a rollback journal); wal2 is wal with two logs,
                        DBPATH-wal and DBPATH-wal2, that the writer alternates
                        between so that one can be checkpointed while the other
                        grows. Only put, del, load and shell switch an existing
                        database to a MODE of another family (refused while
                        other connections have it open); the other commands
                        open it in its own family and say so on stderr
  --atomic-fallback=MODE
                        atomic: where the file system has no atomic writes, run
                        in MODE instead (saying so in info and stats) rather
                        than fail
  --sync=LEVEL          off, normal, full (default) or extra
  --page-size=N         page size of a new database: a power of two from 512 to
                        65536 (default 4096); an existing database keeps its own
  --cache-pages=N       pages kept in memory (default 2000)
  --busy-timeout-ms=N   how long to wait for a lock another process holds
                        (default 5000)
  --checkpoint=POLICY   wal and wal2: when the log is copied back into the
                        database file: threshold:N (on the committing thread
                        once the log holds N frames; default threshold:1000),
                        async:N/B with N < B (a background thread woken at N
                        frames; a commit leaving B frames waits for it) or
                        manual (only the checkpoint command)
  --wal2-switch-pages=N wal2: the writer moves to the other log once the current
                        one holds N frames and the other is fully checkpointed
                        (N at least 1; default 1000)
  --reader-slots=N      wal and wal2: the -shm reader slots this connection may
                        claim, 0 to 512 (default 512); beyond them it reads
                        under shared overflow pins
  --read-only           open without write access; writes are errors
  --auto-vacuum         a commit that leaves free pages at the end of the file
                        gives them back (the file is cut; compact frees the rest)
  --record=FILE         write every operation on DBPATH to the trace FILE
                        (replaced), with its time and thread, for jkvbench
                        --trace=FILE (docs/trace.md); not OTHER_DBPATHs
  --record-values=keep|synthetic
                        what the trace keeps of keys and values: the bytes
                        (keep) or same-length stand-ins (synthetic, default:
                        a trace that can be shared)
  -h, --help            print this help and exit

Commands:
  put K V         set key K to value V; put K - reads the value, raw, from all of
                  stdin (values too large for the command line; the value "-"
                  itself is \x2d)
  get [--raw] K   print the value of K; if K is missing print nothing, exit 1;
                  --raw prints the value's bytes as stored, unescaped, no newline
  del K           delete K; exit 1 if K was missing
  scan [FROM [TO]] [--limit=N]
                  print "K V" lines, in key order, for the keys with
                  FROM <= key < TO: FROM is inclusive, TO is exclusive; no FROM
                  starts at the first key, no TO (or an empty one) runs to the
                  last; at most N pairs
  count           print the number of keys
  check           verify every page checksum, the freelist and the B+tree; print
                  a summary line; on problems print one "error: ..." line each
                  and exit 2
  info [--json]   print "name value" lines (--json: one JSON object): path,
                  page_size, page_count,
                  free_pages, file_size, reclaimable_bytes (what compact would
                  give back, estimated: free pages, and the leaves' live cells
                  packed full), journal_mode, sync, read_only, keys
                  (journal_mode is the mode in use, sync this invocation's); in
                  wal and wal2 also the log's state and checkpoint_policy (this
                  invocation's --checkpoint), and background_errors and
                  background_last_error if a background checkpoint failed; in
                  atomic atomic_write_kind (the file system's mechanism:
                  xfs-exchange-range, f2fs-atomic-write or emulated); after
                  --atomic-fallback was taken, atomic_fallback (why); in
                  wal2 the log_ lines count both logs, and current_log (0: -wal,
                  1: -wal2), wal2_log_frames, wal2_log_frames_not_checkpointed,
                  wal2_log_bytes (the -wal2 log's share), log_switches and
                  wal2_switch_pages (this invocation's) follow
  checkpoint [passive|full|restart|truncate]
                  wal and wal2: copy the log back (default passive); prints
                  "log_frames N copied N backfilled N blocked yes|no"; an error
                  in the rollback modes
  dump            print every pair as a "K V" line (scan of everything)
  load            read "K V" lines from stdin and put them all in one
                  transaction; on a malformed line nothing is written and the
                  error names the line; empty lines are skipped; prints
                  "loaded N"
  shell [OTHER_DBPATH ...]
                  the line protocol below, for people and programs; with
                  OTHER_DBPATHs, over several databases (opened with the same
                  options, created when missing; one file named twice is an
                  error): see "Several databases" below
  stats [--json]  print this handle's counters as "name value" lines (--json:
                  one JSON object): cache hits and misses, commits, and per file
                  kind (database, journal, wal, shm) reads, writes, bytes, syncs
                  and truncates; in atomic atomic_write_kind, atomic_commits and
                  durable_atomic_commits; in wal and wal2 the log's state and the
                  checkpoint, group-commit and policy counters. One invocation is
                  one short-lived handle: the shell's "stats" shows a session's
                  counters
  inspect page N|journal|wal|wal2|shm
                  print a file's raw structures as its format defines them: page
                  N of the database file (page 1's header, a B+tree page's
                  cells, an overflow link, a freelist trunk) with its checksum;
                  the journal's header, records and seal; the log's header and
                  frames with salts and checksum chain; the -shm's header copies,
                  checkpoint words, reader slots and pins, hash blocks' fill.
                  Opens no database and takes no lock, so it reads damaged
                  files too: what is wrong is marked BAD
  backup [--compact] DEST
                  copy one snapshot to the new file DEST while writers go on
                  (rollback modes: their commits wait for the copy); DEST is
                  built as DEST.jkv-backup and renamed when whole and durable;
                  never overwrites; --compact rewrites the keys into a file with
                  no free pages; prints "backup DEST: N pages, N bytes"
  compact         rewrite the database in place with no free pages, in one
                  write transaction (writers wait; WAL readers go on), and cut
                  the file; needs free space for the journal (or the log) of
                  the pages it rewrites; prints
                  "compact: N -> N pages, N -> N bytes"

Tokens: keys and values are written as tokens. Bytes 0x21..0x7e except "\"
stand for themselves; every other byte is written \xHH in lower-case hex (a
space is \x20, "\" is \x5c, a newline \x0a). Input also takes upper-case hex
and \xHH for any byte (\x2dk for the key "-k", which would read as an option).
Anything else after "\" (\q, \x4, a final "\") and raw bytes that must be
escaped are errors. The empty token is the empty string ("" on a command line).

Exit status: 0 success; 1 get or del of a missing key; 2 any error, with
"error: MESSAGE" on stderr: bad usage, option or token, unknown command, a
DBPATH that is a directory or not a journalkv database, I/O or data errors,
problems found by check.

Shell: one command per line on stdin, each answered by exactly one line on
stdout (scan: "pairs N" and then N lines "K V"), flushed at once, so another
program can drive jkv through pipes. Fields are separated by single spaces;
two spaces in a row enclose an empty token. Empty lines are skipped (no answer).
  begin            start a write transaction                -> ok
  begin read       start a read transaction (one snapshot)  -> ok
  commit           end it (a failed commit has rolled back) -> ok
  rollback         end it, discarding its writes            -> ok
  put K V          -> ok
  del K            -> ok | missing (K was not there; not an error)
  get K            -> value V | missing
  scan [FROM [TO]] [LIMIT]
                   -> pairs N, then N lines "K V" (LIMIT is a number; with
                      empty FROM and TO, "scan   10" gives the first 10 pairs)
  count            -> count N
  checkpoint [MODE] -> log_frames N copied N backfilled N blocked yes|no (as
                      the command; wal and wal2, an error in the rollback modes)
  stats            -> stats {JSON}: this shell's handle's counters, as
                      "jkv DB stats --json" names them, on one line
  help             -> one line naming the commands
  quit, exit       -> ok, and the shell ends (so does the end of stdin)
Outside begin..commit each put and del commits on its own. Inside "begin read"
put and del are errors. A begin that answers an error opens no transaction, and
the put and del lines meant for it are errors too (reads go on) until rollback
(-> ok) or commit (-> an error: nothing was committed); begin may be sent again.
Any error answers "error: MESSAGE" and the shell goes on; the shell itself exits
0. A transaction still open when the shell ends is rolled back.

Several databases: "jkv DBPATH shell OTHER_DBPATH ..." numbers DBPATH @0 and the
others @1, @2, ... in the order given. A first field @N names the database a
line's command works on ("@1 put k v", "@0 get k"); without it, @0. An @N past
the last database, or a malformed one (@x), is an error and runs nothing.
  begin            one write transaction across every database: put, del, get,
                   scan and count work on the named database's part; commit
                   commits it in all of them at once, with the guarantee of
                   their journal family (wal and wal2: atomic per database
                   only, and a failed commit names the databases that
                   committed); rollback discards it in all
  begin read       a read transaction on each database (each its own snapshot)
  @N stats, @N checkpoint [MODE]
                   the named database's counters, or its checkpoint
begin, commit, rollback, help and quit take no @N (they work on every database).
A begin that the databases refuse (journal families that cannot commit together,
such as wal beside delete, or memory and off, which keep no journal; the error
says which) is a failed begin, as above. Outside begin..commit each put and del
commits on the named database alone. With one database @0 is accepted and
nothing else changes.

Examples:
  jkv x.db put user:1 alice
  jkv x.db get user:1                    # alice
  jkv x.db put 'greeting' 'hello\x20world'
  jkv x.db scan user: 'user;' --limit=10 # the keys that start with user:
  printf 'begin\nput a 1\nput b 2\ncommit\nscan\n' | jkv x.db shell
  printf 'begin\nput a 1\n@1 put b 2\ncommit\n' | jkv x.db shell y.db  # both
  jkv x.db dump > pairs.txt && jkv y.db load < pairs.txt
)";
}

}  // namespace journalkv::tools
