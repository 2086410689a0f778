// The YCSB core workloads A-F (Cooper et al., "Benchmarking Cloud Serving Systems with YCSB",
// SoCC 2010) as jkvbench workloads ycsb-a .. ycsb-f, selected with --ycsb=A,B,... (or by name
// in --workloads). Each loads --records records (not measured), then runs --operations
// operations, each its own transaction as in YCSB, from one client thread:
//
//   workload  mix                                   which record
//   ycsb-a    50% read, 50% update                  zipfian
//   ycsb-b    95% read, 5% update                   zipfian
//   ycsb-c    100% read                             zipfian
//   ycsb-d    95% read, 5% insert                   latest (the newest records most popular)
//   ycsb-e    95% scan, 5% insert                   zipfian start; length uniform in [1, 100]
//   ycsb-f    50% read, 50% read-modify-write       zipfian
//
//   read    a point read (an autocommit read transaction)
//   update  one autocommit put of the record with a whole new value
//   insert  one autocommit put of the next new record (record numbers count on from --records)
//   scan    a read transaction visiting that many pairs from the record's key in key order
//   rmw     one write transaction: read the record, write it back with one field changed
//
// zipfian is zipfian.h's ScrambledZipfianGenerator with YCSB's constant 0.99. As in YCSB, when
// a workload inserts, its zipfian covers the loaded records plus twice the expected inserts,
// and a draw of a record not inserted yet is drawn again. Records are YCSB's 10 fields of 100
// bytes: a value of 1000 bytes unless --value-size is given (then --value-size, a field being
// a tenth of it). Keys are BenchKey(seed, record number), so record order is not key order
// (YCSB's hashed insert order).
//
// Besides the case's histogram of every operation, each operation kind has its own
// (CaseResult::op_latency, keyed by the names above; the records' <op>_ops, <op>_p50_us and
// <op>_p99_us fields).
#ifndef JOURNALKV_BENCH_YCSB_H_
#define JOURNALKV_BENCH_YCSB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace journalkv::bench {

// The YCSB operation kinds, in the order the records list them.
const std::vector<std::string>& YcsbOps();

// "ycsb-a" for 'A' or 'a', ... "ycsb-f"; empty for any other letter.
std::string YcsbWorkloadName(absl::string_view letter);
bool IsYcsbWorkload(absl::string_view workload);

// YCSB's record: 10 fields of 100 bytes.
inline constexpr uint32_t kYcsbDefaultValueSize = 1000;

}  // namespace journalkv::bench

#endif  // JOURNALKV_BENCH_YCSB_H_
