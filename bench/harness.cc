#include "bench/harness.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/match.h"
#include "vfs/scratch_fs.h"

namespace journalkv::bench {
namespace {

// Log-size samples outside writelat: one every this many commits (and one at the end).
constexpr uint64_t kLogSampleEvery = 64;

}  // namespace

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool IsBusy(const absl::Status& s) {
  return absl::IsUnavailable(s) && absl::StartsWith(s.message(), "busy");
}

ValueSource::ValueSource(uint64_t seed, uint32_t size) : size_(size) {
  Rng rng(seed ^ 0x76616c7565ULL);
  buffer_.resize(std::max<size_t>(size_t{1} << 20, size_t{size} * 4));
  for (char& c : buffer_) c = static_cast<char>('!' + rng.Uniform(94));
}

absl::string_view ValueSource::Next(Rng& rng) const {
  const size_t offset = rng.Uniform(buffer_.size() - size_ + 1);
  return absl::string_view(buffer_).substr(offset, size_);
}

// Flushes the file system of `dir` (all of its dirty data and its journal) and returns its
// device's bytes written so far; 0 when unknown.
uint64_t FlushedDeviceBytes(const Ctx& c) {
  if (c.device_stat.empty()) return 0;
  const int fd = ::open(c.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::syncfs(fd);
    ::close(fd);
  }
  absl::StatusOr<uint64_t> bytes = vfs::DeviceBytesWritten(c.device_stat);
  return bytes.ok() ? *bytes : 0;
}

void StartPhase(Ctx& c, uint64_t total) {
  c.total = total;
  c.done = 0;
  c.excluded_ns = 0;
  c.device_start = FlushedDeviceBytes(c);  // the load phase's writeback is not the phase's
  c.counters_start = c.engine.Counters();
  c.io_start = SyscallSnapshot();
  c.phase_start_ns = NowNs();
}

void SampleLog(Ctx& c) {
  const uint64_t t0 = NowNs();
  c.result.log_max_bytes = std::max(c.result.log_max_bytes, c.engine.LogBytes());
  c.excluded_ns += NowNs() - t0;
}

void EndPhase(Ctx& c) {
  const uint64_t end = NowNs();
  c.result.io = SyscallSnapshot() - c.io_start;
  c.result.counters = c.engine.Counters().Since(c.counters_start);
  c.result.seconds = static_cast<double>(end - c.phase_start_ns - c.excluded_ns) / 1e9;
  SampleLog(c);
  if (!c.device_stat.empty()) {
    c.result.device_bytes = static_cast<int64_t>(FlushedDeviceBytes(c) - c.device_start);
  }
}

void RecordOp(Ctx& c, uint64_t ns) {
  c.result.latency.Record(ns);
  ++c.result.ops;
  if ((++c.done & 15) == 0 || c.done == c.total) c.progress(c.done, c.total);
}

void AfterCommit(Ctx& c) {
  if (++c.result.commits % kLogSampleEvery == 0) SampleLog(c);
}

absl::StatusOr<uint64_t> TimedPutCommit(Session& s, absl::string_view key,
                                        absl::string_view value) {
  return TimedWrite(s, [&](Session& t) { return t.Put(key, value); });
}

absl::Status Load(Ctx& c, uint64_t n) {
  Rng rng(c.params.seed ^ 0x6c6f6164ULL);
  for (uint64_t i = 0; i < n; i += kLoadBatch) {
    JKV_RETURN_IF_ERROR(TimedWrite(c.session, [&](Session& s) {
                          for (uint64_t j = i; j < std::min(n, i + kLoadBatch); ++j) {
                            JKV_RETURN_IF_ERROR(s.Put(c.Key(j), c.values.Next(rng)));
                          }
                          return absl::OkStatus();
                        }).status());
  }
  return absl::OkStatus();
}

}  // namespace journalkv::bench
