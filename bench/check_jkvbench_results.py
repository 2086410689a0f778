#!/usr/bin/env python3
"""Checks a jkvbench --out directory: results.jsonl and results.csv parse, hold the same
records with every documented field, and the numbers are sane.
Usage: DIR [--plot] [--workloads=W1,W2,...] [--engines=E1,E2,...] (the workloads and engines
that must all be present; default the --quick workloads and all three engines)"""
import csv
import json
import os
import sys

FIELDS = ["engine", "mode", "sync", "checkpoint", "workload", "ops", "seconds", "ops_per_sec",
          "p50_us", "p99_us", "p999_us", "max_us", "fsyncs_per_op", "bytes_written_per_op",
          "log_max_bytes", "reader_ops", "writer_ops", "blocked_writer_ms", "num", "value_size",
          "seed", "threads", "workers", "repeats", "ops_per_sec_min", "ops_per_sec_max",
          "busy_errors", "commits", "writers", "writer_ops_per_sec", "writer_ops_each",
          "writer_ops_min", "writer_ops_max", "writer_busy_errors", "checkpoints",
          "frames_copied", "checkpoint_ms", "checkpoint_lock_wait_ms", "blocked_commits",
          "blocked_timeouts", "max_log_frames", "db_writes_per_commit", "write_lock_wait_ms",
          "write_work_ms", "checkpoint_calls", "checkpoint_incomplete"]
# The engine's own counters (EngineAdapter::Counters): only journalkv reports them, and the
# checkpoint ones only in WAL mode (so far it times write transactions in WAL mode only too).
ENGINE_COUNTERS = ["blocked_writer_ms", "checkpoints", "frames_copied", "checkpoint_ms",
                   "checkpoint_lock_wait_ms", "blocked_commits", "blocked_timeouts",
                   "max_log_frames", "db_writes_per_commit", "write_lock_wait_ms",
                   "write_work_ms"]
CHECKPOINT_COUNTERS = ["blocked_writer_ms", "checkpoints", "frames_copied", "checkpoint_ms",
                       "checkpoint_lock_wait_ms", "blocked_commits", "blocked_timeouts",
                       "max_log_frames"]
WAL_MODES = {"wal", "wal2"}
TEXT = {"engine", "mode", "sync", "checkpoint", "workload", "workers"}
LISTS = {"writer_ops_each"}  # a JSON array of counts; in CSV the counts joined by ';'


def csv_list(cell):
    return [int(x) for x in cell.split(";")] if cell else []
QUICK_WORKLOADS = "smalltxn,bulkload,readrandom,scan,overwrite,contention,writelat"
ALL_ENGINES = "journalkv,sqlite,lmdb"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_writers(r, where):
    """contention's writer fields: one count per writer, summing to the total."""
    each = r["writer_ops_each"]
    if r["workload"] != "contention":
        if each != [] or r["writer_ops_per_sec"] != 0:
            fail(f"{where}: writer fields outside contention")
        return
    if r["writers"] < 1 or len(each) != r["writers"]:
        fail(f"{where}: writer_ops_each {each} for writers={r['writers']}")
    if sum(each) != r["writer_ops"] or r["writer_ops"] != r["commits"]:
        fail(f"{where}: writer_ops_each {each} does not sum to writer_ops = commits")
    if (r["writer_ops_min"], r["writer_ops_max"]) != (min(each), max(each)):
        fail(f"{where}: writer_ops_min/max differ from writer_ops_each {each}")
    if not 0 <= r["writer_busy_errors"] <= r["busy_errors"]:
        fail(f"{where}: writer_busy_errors outside [0, busy_errors]")
    if r["writer_ops"] > 0 and not r["writer_ops_per_sec"] > 0:
        fail(f"{where}: writer commits but no writer_ops_per_sec")
    # journalkv lets a waiting writer in (README, "Concurrency"); SQLite's rollback modes may
    # starve it behind busy readers on a loaded machine (seen: truncate/full, 0 commits in the
    # long test tier's run beside the crash sweeps), which is a result, not a broken record.
    sqlite_rollback = r["engine"] == "sqlite" and r["mode"] not in ("wal", "wal2")
    if r["writer_ops"] <= 0 and not sqlite_rollback:
        fail(f"{where}: contention needs writer iterations")


def check_counters(r, where):
    """The engine's own counters: journalkv's only, checkpoints only in WAL mode."""
    for f in ENGINE_COUNTERS:
        if r[f] < 0:
            fail(f"{where}: {f} < 0")
    if r["engine"] != "journalkv":
        for f in ENGINE_COUNTERS:
            if r[f] != 0:
                fail(f"{where}: {r['engine']} reports {f}={r[f]} (only journalkv counts)")
        return
    if r["mode"] not in WAL_MODES:
        for f in CHECKPOINT_COUNTERS:
            if r[f] != 0:
                fail(f"{where}: rollback mode {r['mode']} reports {f}={r[f]}")
    elif r["commits"] > 0 and r["max_log_frames"] <= 0:
        fail(f"{where}: WAL commits but max_log_frames is 0")
    elif r["commits"] > 0 and not r["write_work_ms"] > 0:  # journalkv times WAL writers only
        fail(f"{where}: WAL commits but no write_work_ms")
    if r["frames_copied"] > 0 and r["checkpoints"] <= 0:
        fail(f"{where}: frames copied without a checkpoint")
    if r["blocked_timeouts"] > r["blocked_commits"]:
        fail(f"{where}: more blocked_timeouts than blocked_commits")
    if r["mode"] not in WAL_MODES and r["commits"] > 0 and not r["db_writes_per_commit"] > 0:
        fail(f"{where}: rollback-mode commits wrote no database page")


def series_file(r):
    """report.cc's SeriesFileName: the policy is in the name unless it is the default."""
    name = f"writelat_{r['engine']}_{r['mode']}_{r['sync']}"
    if r["checkpoint"] not in ("none", "default"):
        name += "_" + r["checkpoint"].replace(":", "-").replace("/", "-")
    return name + ".csv"


def check_record(r, where):
    for f in FIELDS:
        if f not in r:
            fail(f"{where}: field {f} missing")
        if f in LISTS:
            if not isinstance(r[f], list) or not all(isinstance(x, int) for x in r[f]):
                fail(f"{where}: field {f} is not a list of counts: {r[f]!r}")
        elif f not in TEXT and not isinstance(r[f], (int, float)):
            fail(f"{where}: field {f} is not a number: {r[f]!r}")
    check_writers(r, where)
    check_counters(r, where)
    if r["ops"] <= 0 or r["ops_per_sec"] <= 0 or r["seconds"] <= 0:
        fail(f"{where}: ops, ops_per_sec and seconds must be > 0")
    if not 0 < r["ops_per_sec_min"] <= r["ops_per_sec"] <= r["ops_per_sec_max"]:
        fail(f"{where}: ops_per_sec outside [ops_per_sec_min, ops_per_sec_max]")
    if r["repeats"] < 1:
        fail(f"{where}: repeats < 1")
    if not 0 < r["p50_us"] <= r["p99_us"] <= r["p999_us"] <= r["max_us"]:
        fail(f"{where}: percentiles out of order")
    for f in ("fsyncs_per_op", "bytes_written_per_op", "log_max_bytes", "blocked_writer_ms"):
        if r[f] < 0:
            fail(f"{where}: {f} < 0")
    if r["workload"] == "contention":
        # Readers of SQLite's rollback modes may starve behind a busy writer (its busy handler
        # sleeps up to 100 ms per retry), so only the writers must get through (check_writers).
        if r["reader_ops"] + r["writer_ops"] != r["ops"]:
            fail(f"{where}: reader_ops + writer_ops != ops")


def main():
    out = sys.argv[1]
    plot = "--plot" in sys.argv[2:]
    workloads = QUICK_WORKLOADS
    want_engines = ALL_ENGINES
    for arg in sys.argv[2:]:
        if arg.startswith("--workloads="):
            workloads = arg.split("=", 1)[1]
        if arg.startswith("--engines="):
            want_engines = arg.split("=", 1)[1]
    with open(os.path.join(out, "results.jsonl")) as f:
        records = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(out, "results.csv"), newline="") as f:
        rows = list(csv.DictReader(f))
    if not records:
        fail("results.jsonl is empty")
    if len(rows) != len(records):
        fail(f"{len(rows)} csv rows but {len(records)} json records")
    for i, (r, row) in enumerate(zip(records, rows)):
        case = "/".join(str(r.get(k)) for k in ("engine", "mode", "sync", "workload"))
        where = f"record {i} ({case})"
        check_record(r, where)
        if list(row.keys()) != list(r.keys()):
            fail(f"{where}: csv columns differ from json fields")
        for f in FIELDS:
            if f in LISTS:
                same = csv_list(row[f]) == r[f]
            elif f in TEXT:
                same = row[f] == r[f]
            else:
                same = abs(float(row[f]) - r[f]) <= 1e-9 * abs(r[f])
            if not same:
                fail(f"{where}: csv {f}={row[f]} but json {r[f]}")
    engines = {r["engine"] for r in records}
    if engines != set(want_engines.split(",")):
        fail(f"engines {engines}, want {want_engines}")
    if {r["workload"] for r in records} != set(workloads.split(",")):
        fail(f"workloads {sorted({r['workload'] for r in records})}, want {workloads}")
    for r in records:
        durable_commits = r["engine"] == "journalkv" and r["workload"] == "smalltxn"
        if durable_commits and r["sync"] == "off" and r["fsyncs_per_op"] != 0:
            fail(f"journalkv/{r['mode']}/off smalltxn synced: {r['fsyncs_per_op']}")
        if durable_commits and r["sync"] == "full" and not r["fsyncs_per_op"] > 0:
            fail(f"journalkv/{r['mode']}/full smalltxn did not sync")
    for r in records:
        if r["workload"] == "writelat":
            name = series_file(r)
            with open(os.path.join(out, name), newline="") as f:
                series = list(csv.DictReader(f))
            if len(series) != r["ops"] or list(series[0].keys()) != ["op", "latency_us",
                                                                     "log_bytes"]:
                fail(f"{name}: {len(series)} rows for {r['ops']} commits")
    if plot:
        for name in ("throughput_smalltxn.png", "latency_smalltxn.png", "fsyncs_smalltxn.png",
                     "latency_contention.png", "writelat_latency_full.png",
                     "writelat_logsize_off.png"):
            path = os.path.join(out, name)
            with open(path, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(f"{name} is not a PNG")
    print(f"ok: {len(records)} records, {len(FIELDS)} documented fields each")


if __name__ == "__main__":
    main()
