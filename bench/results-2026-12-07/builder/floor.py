#!/usr/bin/env python3
"""The floor of a compaction without the engine: the file I/O `jkv compact` cannot avoid.

Usage: floor.py SOURCE_DB RESULT_PAGES SCRATCH_DIR [ROUNDS]
  SOURCE_DB: the database before compaction (run.py's workload, copied aside);
  RESULT_PAGES: the compacted page count (jkv compact prints it).
What is timed (4 KiB pages; medians of ROUNDS, each on a fresh copy of SOURCE_DB):
  read:    every page of the source read once with a 4 KiB pread, in a shuffled order (the
           old tree's leaves lie all over the file; no engine work on them);
  delete:  read + the rollback journal's floor: the originals of pages 2..N written to a
           journal in one write and fdatasync'd, pages 2..N written in 256 KiB writes,
           fdatasync, the file cut to N pages, the journal unlinked;
  wal:     read + the WAL's floor: pages 2..N appended to a log in 256 KiB writes and
           fdatasync'd, read back and written to the database in 256 KiB writes, fdatasync,
           the file cut, the log truncated to 0.
"""
import os, random, shutil, statistics, sys, time

src, pages, scratch = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
P = 4096
CHUNK = 64 * P
os.makedirs(scratch, exist_ok=True)
db = os.path.join(scratch, "floor.db")
size = os.path.getsize(src)
order = list(range(size // P))
random.Random(7).shuffle(order)
payload = os.urandom(CHUNK)


def read_all(fd):
    for n in order:
        os.pread(fd, P, n * P)


def write_pages(fd, count, at=P):
    done = 0
    while done < count * P:
        k = min(CHUNK, count * P - done)
        os.pwrite(fd, payload[:k], at + done)
        done += k


def run(mode):
    shutil.copyfile(src, db)
    fd = os.open(db, os.O_RDWR)
    t = time.perf_counter()
    read_all(fd)
    if mode == "delete":
        j = os.open(db + "-journal", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        originals = os.pread(fd, (pages - 1) * P, P)
        os.pwrite(j, originals, 512)
        os.fdatasync(j)
        write_pages(fd, pages - 1)
        os.fdatasync(fd)
        os.ftruncate(fd, pages * P)
        os.close(j)
        os.unlink(db + "-journal")
    elif mode == "wal":
        w = os.open(db + "-wal", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        write_pages(w, pages - 1, 0)
        os.fdatasync(w)
        done = 0
        while done < (pages - 1) * P:
            k = min(CHUNK, (pages - 1) * P - done)
            os.pwrite(fd, os.pread(w, k, done), P + done)
            done += k
        os.fdatasync(fd)
        os.ftruncate(fd, pages * P)
        os.ftruncate(w, 0)
        os.close(w)
        os.unlink(db + "-wal")
    ms = (time.perf_counter() - t) * 1000
    os.close(fd)
    return ms


results = {}
for _ in range(rounds):
    for mode in ("read", "delete", "wal"):
        results.setdefault(mode, []).append(run(mode))
for mode, ms in results.items():
    print(f"floor {mode:6s} median {statistics.median(ms):6.0f} ms (min {min(ms):.0f}, max {max(ms):.0f})")
