#!/usr/bin/env python3
"""Compaction against SQLite VACUUM, and a sorted load against SQLite's sorted insert.

Usage: run.py JKV_BINARY[,JKV_BINARY2] SCRATCH_DIR [ROUNDS] [compact|load|all]
  (the last argument picks the workloads, all by default; a second binary, for a before/after
  comparison, runs the journalkv workloads again in each round, named "jkv2 ...")
Workloads (bench/results-2026-12-05/NOTES.md, "Compaction"):
  compact: 300,000 random 17-byte keys with 100-byte values loaded in one transaction, every
    other key deleted in another, then `jkv x.db compact` timed as a whole process; SQLite
    3.40 from Python, the same keys in a WITHOUT ROWID table, synchronous FULL, VACUUM timed
    alone (plus wal_checkpoint(TRUNCATE) in WAL mode).
  load: 1,000,000 sorted pairs (16-byte keys, 100-byte values) by `jkv x.db load` timed as a
    whole process (text parsing included); SQLite: the same pairs inserted in key order into a
    WITHOUT ROWID table in one transaction (executemany), synchronous FULL, timed with its
    commit.
Rounds are interleaved (journalkv, SQLite, next mode, ...); medians and min-max printed.
"""
import os, random, sqlite3, statistics, subprocess, sys, time

jkvs, scratch = sys.argv[1].split(","), sys.argv[2]
jkv = jkvs[0]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
which = sys.argv[4] if len(sys.argv) > 4 else "all"
os.makedirs(scratch, exist_ok=True)
rng = random.Random(7)
keys = sorted({"".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(17))
               for _ in range(300000)})
rng.shuffle(keys)
val = "v" * 100
load_text = "".join(f"{k} {val}\n" for k in keys).encode()
del_text = ("begin\n" + "".join(f"del {k}\n" for k in keys[::2]) + "commit\n").encode()
sorted_pairs = [(f"key{i:013d}", val) for i in range(1000000)]
sorted_text = "".join(f"{k} {v}\n" for k, v in sorted_pairs).encode()


def rm(path):
    for suffix in ("", "-journal", "-wal", "-wal2", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def run(args, stdin=None):
    subprocess.run(args, input=stdin, check=True, stdout=subprocess.DEVNULL)


def jkv_compact(mode):
    db = os.path.join(scratch, "j.db")
    rm(db)
    run([jkv, f"--journal={mode}", db, "load"], load_text)
    run([jkv, db, "shell"], del_text)
    before = os.path.getsize(db)
    t = time.perf_counter()
    run([jkv, db, "compact"])
    ms = (time.perf_counter() - t) * 1000
    return ms, before, os.path.getsize(db)


def sqlite_vacuum(mode):
    db = os.path.join(scratch, "s.db")
    rm(db)
    c = sqlite3.connect(db, isolation_level=None)
    c.execute(f"PRAGMA journal_mode={mode}")
    c.execute("PRAGMA synchronous=FULL")
    c.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
    c.execute("BEGIN")
    c.executemany("INSERT INTO t VALUES(?, ?)", ((k, val) for k in keys))
    c.execute("COMMIT")
    c.execute("BEGIN")
    c.executemany("DELETE FROM t WHERE k=?", ((k,) for k in keys[::2]))
    c.execute("COMMIT")
    if mode == "wal":
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = os.path.getsize(db)
    t = time.perf_counter()
    c.execute("VACUUM")
    if mode == "wal":
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    ms = (time.perf_counter() - t) * 1000
    c.close()
    return ms, before, os.path.getsize(db)


def jkv_load(mode):
    db = os.path.join(scratch, "l.db")
    rm(db)
    t = time.perf_counter()
    run([jkv, f"--journal={mode}", db, "load"], sorted_text)
    return (time.perf_counter() - t) * 1000, 0, os.path.getsize(db)


def sqlite_load(mode):
    db = os.path.join(scratch, "sl.db")
    rm(db)
    t = time.perf_counter()
    c = sqlite3.connect(db, isolation_level=None)
    c.execute(f"PRAGMA journal_mode={mode}")
    c.execute("PRAGMA synchronous=FULL")
    c.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID")
    c.execute("BEGIN")
    c.executemany("INSERT INTO t VALUES(?, ?)", sorted_pairs)
    c.execute("COMMIT")
    c.close()
    return (time.perf_counter() - t) * 1000, 0, os.path.getsize(db)


results = {}
for r in range(rounds):
    for mode in ("delete", "wal"):
        for name, f, kind in (("jkv compact", jkv_compact, "compact"),
                              ("sqlite VACUUM", sqlite_vacuum, "compact"),
                              ("jkv load sorted 1M", jkv_load, "load"),
                              ("sqlite sorted insert 1M", sqlite_load, "load")):
            if which not in ("all", kind):
                continue
            for b, binary in enumerate(jkvs if name.startswith("jkv") else jkvs[:1]):
                jkv = binary
                label = name if b == 0 else name.replace("jkv", "jkv2", 1)
                results.setdefault((label, mode), []).append(f(mode))
for (name, mode), rs in results.items():
    ms = [x[0] for x in rs]
    print(f"{name:26s} {mode:6s} median {statistics.median(ms):7.0f} ms  "
          f"(min {min(ms):.0f}, max {max(ms):.0f})  file {rs[-1][1]/1e6:.1f} MB -> {rs[-1][2]/1e6:.1f} MB")
for mode in ("delete", "wal"):
    for a, b in (("jkv compact", "sqlite VACUUM"), ("jkv2 compact", "sqlite VACUUM")):
        if (a, mode) not in results:
            continue
        # The ratio within each round (the runs of a round are back to back), then its median.
        per = [s[0] / j[0] for j, s in zip(results[(a, mode)], results[(b, mode)])]
        print(f"{mode}: {a} speed relative to {b} per round: "
              + " ".join(f"{x:.2f}x" for x in per) + f" (median {statistics.median(per):.2f}x)")
for mode in ("delete", "wal"):
    for a, b in (("jkv compact", "sqlite VACUUM"), ("jkv load sorted 1M", "sqlite sorted insert 1M"),
                 ("jkv2 compact", "sqlite VACUUM"), ("jkv2 load sorted 1M", "sqlite sorted insert 1M")):
        if (a, mode) not in results:
            continue
        ja = statistics.median(x[0] for x in results[(a, mode)])
        sb = statistics.median(x[0] for x in results[(b, mode)])
        print(f"{mode}: {a} speed relative to {b}: {sb / ja:.2f}x")
