#!/usr/bin/env python3
"""Checks a jkvbench --out directory: results.jsonl and results.csv parse, hold the same
records with every documented field, and the numbers are sane.
Usage: DIR [--plot] [--workloads=W1,W2,...] [--engines=E1,E2,...] [--value-size=N]
(the workloads and engines that must all be present, default the --quick workloads and all
three engines; --value-size: the YCSB records' value size, default 1000)"""
import csv
import json
import os
import sys

FIELDS = ["engine", "mode", "sync", "checkpoint", "workload", "ops", "seconds", "ops_per_sec",
          "p50_us", "p99_us", "p999_us", "max_us", "fsyncs_per_op", "bytes_written_per_op",
          "log_max_bytes", "reader_ops", "writer_ops", "blocked_writer_ms", "num", "value_size",
          "seed", "threads", "workers", "repeats", "ops_per_sec_min", "ops_per_sec_max",
          "ops_per_sec_stddev",
          "busy_errors", "commits", "writers", "writer_ops_per_sec", "writer_ops_each",
          "writer_ops_min", "writer_ops_max", "writer_busy_errors", "checkpoints",
          "frames_copied", "checkpoint_ms", "checkpoint_lock_wait_ms", "blocked_commits",
          "blocked_timeouts", "max_log_frames", "db_writes_per_commit", "write_lock_wait_ms",
          "write_work_ms", "log_zero_bytes_per_op", "checkpoint_calls", "checkpoint_incomplete", "commits_per_sec",
          "floor_per_s", "floor_ratio", "reader_ops_per_sec", "writer_keys", "commit", "commit_window", "handles", "settle", "records",
          "operations", "mean_us", "fsyncs_per_commit", "reader_max_us", "items", "fsync_calls",
          "fdatasync_calls", "msync_calls", "write_calls", "bytes_written", "reader_p50_us",
          "reader_p99_us", "fs", "device_bytes_per_op", "device_bytes_per_commit",
          "databases", "puts_per_db", "burst", "gap", "bursts", "write_ms_total",
          "idle_ms_total"]
# Figures as data (report.h RangedFigures): each with its --repeat rounds' lowest and highest,
# and `spread`, the figures whose rounds lie more than SPREAD_LIMIT apart (max / min).
RANGED = ["commits_per_sec", "reader_ops_per_sec", "writer_ops_per_sec", "seconds", "p50_us",
          "p99_us", "p999_us", "max_us", "mean_us", "bytes_written_per_op",
          "device_bytes_per_commit"]
SPREAD_LIMIT = 1.5
FIELDS += [f"{f}_{end}" for f in RANGED for end in ("min", "max")] + ["spread"]
YCSB_OPS = ["read", "update", "insert", "scan", "rmw"]
FIELDS += [f"{op}{suffix}" for op in YCSB_OPS for suffix in ("_ops", "_p50_us", "_p99_us")]
# Trace replays (trace:<stem>): the pace, the recorded threads and each record kind's count.
TRACE_KINDS = ["begin_read", "end_read", "begin_write", "commit", "rollback", "get", "put",
               "delete", "scan", "checkpoint"]
FIELDS += ["pace", "trace_threads"] + [f"trace_{k}" for k in TRACE_KINDS]
# Each YCSB workload's operation mix (ycsb.h): the share of each kind it draws.
YCSB_MIX = {
    "ycsb-a": {"read": 0.5, "update": 0.5},
    "ycsb-b": {"read": 0.95, "update": 0.05},
    "ycsb-c": {"read": 1.0},
    "ycsb-d": {"read": 0.95, "insert": 0.05},
    "ycsb-e": {"scan": 0.95, "insert": 0.05},
    "ycsb-f": {"read": 0.5, "rmw": 0.5},
}
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
TEXT = {"engine", "mode", "sync", "checkpoint", "workload", "workers", "writer_keys", "commit", "handles", "settle", "fs",
        "spread", "pace", "gap"}
LISTS = {"writer_ops_each"}  # a JSON array of counts; in CSV the counts joined by ';'


def csv_list(cell):
    return [int(x) for x in cell.split(";")] if cell else []
SETTLING_WORKLOADS = {"readrandom", "scan"}  # --settle (bench/README.md, "The read phase")
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
    """The engine's own counters: journalkv's only, checkpoints only in WAL mode. Past FIELDS,
    every column is a row of journalkv's counter table (base/counters.h: its tickers and marks,
    so a new row is a new column): numbers, never negative, 0 for the other engines."""
    table = [f for f in r if f not in FIELDS]
    for f in ENGINE_COUNTERS + table:
        if not isinstance(r[f], (int, float)) or r[f] < 0:
            fail(f"{where}: {f}={r[f]} is not a count")
    if r["engine"] != "journalkv":
        for f in ENGINE_COUNTERS + table:
            if r[f] != 0:
                fail(f"{where}: {r['engine']} reports {f}={r[f]} (only journalkv counts)")
        return
    for f in ("cache_hits", "cache_misses", "write_txns", "flush_wait_ms", "log_restarts"):
        if f not in table:
            fail(f"{where}: counter table column {f} missing")
    if r["mode"] in WAL_MODES and r["commits"] > 0 and r["write_txns"] < r["commits"]:
        fail(f"{where}: {r['commits']} commits but write_txns={r['write_txns']}")
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


def close(a, b):
    return abs(a - b) <= 1e-4 * max(abs(a), abs(b)) + 1e-9


def check_ranges(r, where):
    """Each ranged figure lies within its rounds' range (the record is the median round by
    ops/s, so its own figures are one round's); `spread` names exactly the figures whose
    rounds' max / min exceeds SPREAD_LIMIT."""
    spread = set(filter(None, r["spread"].split(";")))
    want = set()
    for f in ["ops_per_sec"] + RANGED:
        lo, hi = r[f + "_min"], r[f + "_max"]
        if not lo - 1e-6 * abs(lo) <= r[f] <= hi + 1e-6 * abs(hi):
            fail(f"{where}: {f}={r[f]} outside [{f}_min, {f}_max] = [{lo}, {hi}]")
        if r["repeats"] == 1 and not close(lo, hi):
            fail(f"{where}: {f}_min != {f}_max with one round")
        if lo > 0 and hi / lo > SPREAD_LIMIT * (1 + 1e-9):
            want.add(f)
    # A ratio within rounding of the limit may go either way.
    borderline = {f for f in ["ops_per_sec"] + RANGED
                  if r[f + "_min"] > 0 and close(r[f + "_max"] / r[f + "_min"], SPREAD_LIMIT)}
    if (spread ^ want) - borderline:
        fail(f"{where}: spread={r['spread']!r}, the rounds spread in {sorted(want)}")


def check_rates(r, where):
    """Per-second figures and the flush floor (flush_floor.h): the ratio only at a durable
    sync level, for a case that committed, when the floor was measured."""
    if not close(r["commits_per_sec"], r["commits"] / r["seconds"]):
        fail(f"{where}: commits_per_sec != commits / seconds")
    if not close(r["reader_ops_per_sec"], r["reader_ops"] / r["seconds"]):
        fail(f"{where}: reader_ops_per_sec != reader_ops / seconds")
    if r["floor_per_s"] < 0:
        fail(f"{where}: floor_per_s < 0")
    durable = r["sync"] in ("full", "extra")
    if durable and r["commits"] > 0 and r["floor_per_s"] > 0:
        if not close(r["floor_ratio"], r["commits_per_sec"] / r["floor_per_s"]):
            fail(f"{where}: floor_ratio != commits_per_sec / floor_per_s")
    elif r["floor_ratio"] != 0:
        fail(f"{where}: floor_ratio {r['floor_ratio']} where there is no ratio")
    if r["writer_keys"] not in ("hot", "own"):
        fail(f"{where}: writer_keys {r['writer_keys']!r}")
    if r["handles"] not in ("shared", "own"):
        fail(f"{where}: handles {r['handles']!r}")
    if r["commit"] not in ("sync", "async"):
        fail(f"{where}: commit {r['commit']!r}")
    if (r["commit"] == "async") != (r["commit_window"] > 0):
        fail(f"{where}: commit_window {r['commit_window']} with commit {r['commit']}")
    # --settle: only the read workloads bring the database to rest after their load.
    if r["settle"] not in ("checkpoint", "none"):
        fail(f"{where}: settle {r['settle']!r}")
    if r["settle"] == "checkpoint" and r["workload"] not in SETTLING_WORKLOADS:
        fail(f"{where}: settle checkpoint in {r['workload']}, which does not settle")


def check_trace(r, where):
    """A trace replay: its record kinds add up to ops, its commits are its commit records, its
    transactions begin and end in pairs; the other workloads have no trace fields."""
    counts = {k: r[f"trace_{k}"] for k in TRACE_KINDS}
    if not r["workload"].startswith("trace:"):
        if any(counts.values()) or r["trace_threads"] != 0 or r["pace"] != "":
            fail(f"{where}: trace fields outside a trace replay")
        return
    if r["pace"] not in ("fast", "recorded") or r["trace_threads"] < 1:
        fail(f"{where}: pace={r['pace']!r} trace_threads={r['trace_threads']}")
    if sum(counts.values()) != r["ops"]:
        fail(f"{where}: trace record kinds {counts} do not add up to ops={r['ops']}")
    if counts["commit"] != r["commits"]:
        fail(f"{where}: commits={r['commits']} but {counts['commit']} commit records replayed")
    if counts["begin_write"] < counts["commit"] + counts["rollback"] or \
            counts["begin_read"] < counts["end_read"]:
        fail(f"{where}: more transaction ends than begins: {counts}")


def check_ycsb(r, where, value_size):
    """A YCSB record: its operations split by kind as its mix says, commits and scanned pairs
    agreeing with them; the other workloads have no operation kinds."""
    mix = YCSB_MIX.get(r["workload"])
    counts = {op: r[f"{op}_ops"] for op in YCSB_OPS}
    if mix is None:
        for op in YCSB_OPS:
            for f in (f"{op}_ops", f"{op}_p50_us", f"{op}_p99_us"):
                if r[f] != 0:
                    fail(f"{where}: {f}={r[f]} outside YCSB")
        return
    if r["ops"] != r["operations"] or sum(counts.values()) != r["ops"]:
        fail(f"{where}: operation kinds {counts} do not add up to operations={r['operations']}")
    if r["value_size"] != value_size:
        fail(f"{where}: value_size {r['value_size']}, want {value_size}")
    for op, n in counts.items():
        share = mix.get(op, 0)
        if share == 0 and n != 0:
            fail(f"{where}: {n} {op} operations, which {r['workload']} never makes")
        if 0 < share < 1:  # within 5 standard deviations of the mix (a binomial count)
            sigma = (r["ops"] * share * (1 - share)) ** 0.5
            if abs(n - r["ops"] * share) > 5 * sigma + 1:
                fail(f"{where}: {n} {op} of {r['ops']}, want about {share:.0%}")
        if share == 1 and n != r["ops"]:
            fail(f"{where}: {n} {op} of {r['ops']}")
        p50, p99 = r[f"{op}_p50_us"], r[f"{op}_p99_us"]
        if n > 0 and not 0 < p50 <= p99 <= r["max_us"] * 1.0001:
            fail(f"{where}: {op} percentiles {p50}, {p99} out of order")
        if n == 0 and (p50, p99) != (0, 0):
            fail(f"{where}: {op} percentiles without {op} operations")
    if r["commits"] != counts["update"] + counts["insert"] + counts["rmw"]:
        fail(f"{where}: commits {r['commits']} != updates + inserts + read-modify-writes")
    if not counts["scan"] <= r["items"] <= 100 * counts["scan"]:
        fail(f"{where}: {r['items']} pairs scanned by {counts['scan']} scans of 1-100")
    # Every write is durable at full: at least one flush per commit (journalkv and SQLite;
    # LMDB's second flush is an O_DSYNC write, not counted).
    if r["sync"] == "full" and r["commits"] > 0 and r["fsyncs_per_commit"] < 1:
        fail(f"{where}: {r['fsyncs_per_commit']} flushes per commit at sync full")


def check_bursty(r, where):
    """bursty (bursty.cc): one commit per operation in bursts of `burst`, seconds = the write
    time = the sum of the commit latencies, idle time at least the fixed gaps asked for; the
    fields are 0 and "" elsewhere."""
    if r["workload"] != "bursty":
        for f in ("burst", "bursts", "write_ms_total", "idle_ms_total"):
            if r[f] != 0:
                fail(f"{where}: {f}={r[f]} outside bursty")
        if r["gap"] != "":
            fail(f"{where}: gap {r['gap']!r} outside bursty")
        return
    if r["commits"] != r["ops"] or r["burst"] < 1:
        fail(f"{where}: {r['commits']} commits for {r['ops']} ops, burst {r['burst']}")
    if r["bursts"] != -(-r["ops"] // r["burst"]):
        fail(f"{where}: {r['bursts']} bursts of {r['burst']} for {r['ops']} commits")
    if not close(r["write_ms_total"], r["seconds"] * 1000) and \
            abs(r["write_ms_total"] - r["seconds"] * 1000) > 1e-3:
        fail(f"{where}: write_ms_total {r['write_ms_total']} != seconds * 1000")
    if abs(r["mean_us"] * r["ops"] / 1000 - r["write_ms_total"]) > 1e-3 * r["write_ms_total"] + 1e-3:
        fail(f"{where}: mean_us * ops != write_ms_total")
    if not r["p50_us"] * r["ops"] / 1000 <= r["write_ms_total"] * 2.05 + 1e-3:
        fail(f"{where}: write_ms_total {r['write_ms_total']} below half the commits at p50")
    gap = r["gap"]
    if gap.startswith("fixed:"):
        want = float(gap.split(":", 1)[1]) * (r["bursts"] - 1)
        if r["idle_ms_total"] < want * 0.999:
            fail(f"{where}: idle {r['idle_ms_total']} ms, less than {r['bursts'] - 1} gaps of {gap}")
    elif not gap.startswith(("exp:", "uniform:")):
        fail(f"{where}: gap {gap!r}")
    if r["bursts"] == 1 and r["idle_ms_total"] != 0:
        fail(f"{where}: one burst but idle time")


def check_same_operations(records):
    """The same seed gives every engine the same operations on the same data: per YCSB
    workload, the same count of each kind and the same number of pairs scanned."""
    by_workload = {}
    for r in records:
        if r["workload"] in YCSB_MIX:
            key = tuple(r[f"{op}_ops"] for op in YCSB_OPS) + (r["items"], r["commits"])
            by_workload.setdefault(r["workload"], set()).add(key)
    for w, keys in by_workload.items():
        if len(keys) != 1:
            fail(f"{w}: engines drew different operations: {sorted(keys)}")


def series_file(r):
    """report.cc's SeriesFileName: the policy is in the name unless it is the default."""
    name = f"writelat_{r['engine']}_{r['mode']}_{r['sync']}"
    if r["checkpoint"] not in ("none", "default"):
        name += "_" + r["checkpoint"].replace(":", "-").replace("/", "-")
    return name + ".csv"


def check_record(r, where, value_size):
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
    check_rates(r, where)
    check_ranges(r, where)
    check_ycsb(r, where, value_size)
    check_trace(r, where)
    check_bursty(r, where)
    if r["ops"] <= 0 or r["ops_per_sec"] <= 0 or r["seconds"] <= 0:
        fail(f"{where}: ops, ops_per_sec and seconds must be > 0")
    if not 0 < r["ops_per_sec_min"] <= r["ops_per_sec"] <= r["ops_per_sec_max"]:
        fail(f"{where}: ops_per_sec outside [ops_per_sec_min, ops_per_sec_max]")
    if r["repeats"] < 1:
        fail(f"{where}: repeats < 1")
    # The device's bytes: -1 where the databases are not on a block device, else a count.
    for f in ("device_bytes_per_op", "device_bytes_per_commit"):
        if r[f] != -1 and r[f] < 0:
            fail(f"{where}: {f}={r[f]} (-1 or a count)")
    if r["ops_per_sec_stddev"] < 0 or (r["repeats"] == 1 and r["ops_per_sec_stddev"] != 0):
        fail(f"{where}: ops_per_sec_stddev must be 0 for one round and >= 0 otherwise")
    if r["ops_per_sec_stddev"] > r["ops_per_sec_max"] - r["ops_per_sec_min"] + 1e-9:
        fail(f"{where}: ops_per_sec_stddev larger than the rounds' range")
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


def check_run_info(out, records):
    """run.json: what the run was measured on, every field present and plausible."""
    with open(os.path.join(out, "run.json")) as f:
        info = json.load(f)
    for k in ("date_utc", "host", "kernel", "machine", "cpu", "cpus", "db_dir", "db_fs", "args",
              "sqlite_version", "lmdb_version", "floor_per_s"):
        if k not in info:
            fail(f"run.json lacks {k}")
    if not (isinstance(info["cpus"], int) and info["cpus"] >= 1):
        fail(f"run.json: cpus {info['cpus']!r}")
    if not info["sqlite_version"].startswith("3.") or "LMDB" not in info["lmdb_version"]:
        fail(f"run.json: versions {info['sqlite_version']!r} {info['lmdb_version']!r}")
    if not isinstance(info["args"], list):
        fail("run.json: args is not a list")
    floor = records[0]["floor_per_s"] if records else 0
    if abs(info["floor_per_s"] - floor) > 1 + 1e-5 * floor:
        fail(f"run.json floor {info['floor_per_s']} but records {records[0]['floor_per_s']}")


def main():
    out = sys.argv[1]
    plot = "--plot" in sys.argv[2:]
    workloads = QUICK_WORKLOADS
    want_engines = ALL_ENGINES
    value_size = 1000
    for arg in sys.argv[2:]:
        if arg.startswith("--value-size="):
            value_size = int(arg.split("=", 1)[1])
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
        check_record(r, where, value_size)
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
    check_same_operations(records)
    engines = {r["engine"] for r in records}
    if engines != set(want_engines.split(",")):
        fail(f"engines {engines}, want {want_engines}")
    if {r["workload"] for r in records} != set(workloads.split(",")):
        fail(f"workloads {sorted({r['workload'] for r in records})}, want {workloads}")
    for r in records:
        durable_commits = r["engine"] == "journalkv" and r["workload"] == "smalltxn"
        if durable_commits and r["sync"] == "off" and r["fsyncs_per_op"] != 0:
            fail(f"journalkv/{r['mode']}/off smalltxn synced: {r['fsyncs_per_op']}")
        # atomic's commits are durable by the exchange itself (XFS_IOC_EXCHANGE_RANGE with
        # DSYNC, a log force), with no fsync call.
        if (durable_commits and r["sync"] == "full" and r["mode"] != "atomic"
                and not r["fsyncs_per_op"] > 0):
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
        workloads_run = {r["workload"] for r in records}
        names = [f"{kind}_{w.replace(':', '-')}.png" for w in sorted(workloads_run)
                 for kind in ("throughput", "latency", "percentiles")]
        if "writelat" in workloads_run:
            names += ["writelat_latency_full.png", "writelat_logsize_off.png"]
        if "smalltxn" in workloads_run:
            names.append("fsyncs_smalltxn.png")
        if "bursty" in workloads_run:
            names.append("write_time_bursty.png")
        for name in names:
            path = os.path.join(out, name)
            with open(path, "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(f"{name} is not a PNG")
    check_run_info(out, records)
    print(f"ok: {len(records)} records, {len(FIELDS)} documented fields each")


if __name__ == "__main__":
    main()
