// The trace format's writer and reader (the spec: engine/trace.h).
#include "engine/trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/endian.h"
#include "base/hash.h"
#include "base/status_macros.h"

namespace journalkv {

namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

uint64_t Mix64(uint64_t x) {  // SplitMix64's finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string HeaderBytes(TraceValues values) {
  uint8_t h[kTraceHeaderBytes];
  std::memcpy(h, kTraceMagic, 8);
  base::EncodeFixed16(h + 8, kTraceVersion);
  base::EncodeFixed16(h + 10, values == TraceValues::kKeep ? kTraceFlagValuesKept : 0);
  base::EncodeFixed32(h + 12, static_cast<uint32_t>(base::Xxh3(h, 12, 0)));
  return std::string(reinterpret_cast<const char*>(h), sizeof h);
}

uint64_t BlockCheck(const uint8_t* length, absl::string_view payload, uint64_t offset) {
  return base::Xxh3Pair(length, 4, payload.data(), payload.size(), offset);
}

}  // namespace

absl::string_view TraceValuesName(TraceValues v) {
  return v == TraceValues::kKeep ? "keep" : "synthetic";
}

absl::StatusOr<TraceValues> ParseTraceValues(absl::string_view text) {
  if (text == "keep") return TraceValues::kKeep;
  if (text == "synthetic") return TraceValues::kSynthetic;
  return absl::InvalidArgumentError(
      absl::StrCat("record values: want keep or synthetic, got \"", text, "\""));
}

absl::string_view TraceKindName(TraceKind kind) {
  switch (kind) {
    case TraceKind::kBeginRead: return "begin_read";
    case TraceKind::kEndRead: return "end_read";
    case TraceKind::kBeginWrite: return "begin_write";
    case TraceKind::kCommit: return "commit";
    case TraceKind::kRollback: return "rollback";
    case TraceKind::kGet: return "get";
    case TraceKind::kPut: return "put";
    case TraceKind::kDelete: return "delete";
    case TraceKind::kScan: return "scan";
    case TraceKind::kCheckpoint: return "checkpoint";
    case TraceKind::kEnd: return "end";
  }
  return "unknown";
}

// T2: byte i is shifted by a keyed hash of the bytes before it, so a key's synthetic prefix of
// length i depends on its own prefix of length i alone, and for a given prefix each byte value
// maps to a distinct one: a bijection on each length.
std::string SyntheticKey(absl::string_view key, uint64_t seed) {
  std::string out(key.size(), '\0');
  uint64_t h = Mix64(seed ^ 0x6a6b7674726163ull);
  for (size_t i = 0; i < key.size(); ++i) {
    const uint8_t b = static_cast<uint8_t>(key[i]);
    out[i] = static_cast<char>(static_cast<uint8_t>(b + static_cast<uint8_t>(h >> 56)));
    h = Mix64(h ^ (uint64_t{b} + 1) * 0x9e3779b97f4a7c15ull);
  }
  return out;
}

std::string SyntheticValue(uint64_t record_index, uint64_t size) {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string out(size, '\0');
  uint64_t h = Mix64(record_index + 1);
  for (uint64_t i = 0; i < size; ++i) {
    if (i % 8 == 0) h = Mix64(h + i);
    out[i] = kAlphabet[(h >> (8 * (i % 8))) % 62];
  }
  return out;
}

std::string ReplayValue(const Trace& trace, size_t index) {
  const TraceRecord& r = trace.records[index];
  if (trace.values == TraceValues::kKeep) return r.value;
  return SyntheticValue(index, r.value_size);
}

// ---------------------------------------------------------------------------------------------
// TraceWriter

absl::StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                                 TraceValues values,
                                                                 uint64_t seed) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("trace ", path, ": cannot create: ", std::strerror(errno)));
  }
  const std::string header = HeaderBytes(values);
  if (std::fwrite(header.data(), 1, header.size(), f) != header.size()) {
    std::fclose(f);
    return absl::InternalError(absl::StrCat("trace ", path, ": writing the header failed"));
  }
  if (seed == 0) seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return std::unique_ptr<TraceWriter>(new TraceWriter(path, f, values, seed));
}

TraceWriter::TraceWriter(std::string path, std::FILE* file, TraceValues values, uint64_t seed)
    : path_(std::move(path)), values_(values), seed_(seed), start_ns_(SteadyNs()), file_(file) {}

TraceWriter::~TraceWriter() { Close().IgnoreError(); }

void TraceWriter::StartRecord(TraceKind kind) {
  const uint64_t now_us = static_cast<uint64_t>(SteadyNs() - start_ns_) / 1000;
  const uint64_t us = std::max(now_us, last_us_);
  auto [it, added] = threads_.try_emplace(std::this_thread::get_id(),
                                          static_cast<uint32_t>(threads_.size()));
  block_.push_back(static_cast<char>(kind));
  AppendVarint(&block_, it->second);
  AppendVarint(&block_, us - last_us_);
  last_us_ = us;
}

void TraceWriter::AppendKey(absl::string_view key) {
  AppendVarint(&block_, key.size());
  if (values_ == TraceValues::kKeep) {
    block_.append(key.data(), key.size());
  } else {
    block_ += SyntheticKey(key, seed_);
  }
}

void TraceWriter::EndRecord() {
  ++records_;
  if (block_.size() >= 64 * 1024) FlushBlock();
}

void TraceWriter::FlushBlock() {
  if (block_.empty() || !status_.ok()) return;
  uint8_t head[kTraceBlockHeaderBytes];
  base::EncodeFixed32(head, static_cast<uint32_t>(block_.size()));
  base::EncodeFixed64(head + 4, BlockCheck(head, block_, file_offset_));
  if (std::fwrite(head, 1, sizeof head, file_) != sizeof head ||
      std::fwrite(block_.data(), 1, block_.size(), file_) != block_.size()) {
    status_ = absl::InternalError(absl::StrCat("trace ", path_, ": write failed at offset ",
                                               file_offset_, ": ", std::strerror(errno),
                                               "; the recording stopped there"));
  }
  file_offset_ += sizeof head + block_.size();
  block_.clear();
}

void TraceWriter::Simple(TraceKind kind) {
  base::MutexLock lock(&mu_);
  if (closed_ || !status_.ok()) return;
  StartRecord(kind);
  EndRecord();
}

void TraceWriter::KeyRecord(TraceKind kind, absl::string_view key) {
  base::MutexLock lock(&mu_);
  if (closed_ || !status_.ok()) return;
  StartRecord(kind);
  AppendKey(key);
  EndRecord();
}

void TraceWriter::Put(absl::string_view key, absl::string_view value) {
  base::MutexLock lock(&mu_);
  if (closed_ || !status_.ok()) return;
  StartRecord(TraceKind::kPut);
  AppendKey(key);
  AppendVarint(&block_, value.size());
  if (values_ == TraceValues::kKeep) block_.append(value.data(), value.size());
  EndRecord();
}

void TraceWriter::Scan(absl::string_view from, uint64_t limit, uint64_t visited,
                       const std::optional<std::string>& lower,
                       const std::optional<std::string>& upper) {
  base::MutexLock lock(&mu_);
  if (closed_ || !status_.ok()) return;
  StartRecord(TraceKind::kScan);
  AppendKey(from);
  AppendVarint(&block_, limit);
  AppendVarint(&block_, visited);
  block_.push_back(static_cast<char>((lower.has_value() ? 1 : 0) | (upper.has_value() ? 2 : 0)));
  if (lower.has_value()) AppendKey(*lower);
  if (upper.has_value()) AppendKey(*upper);
  EndRecord();
}

void TraceWriter::Checkpoint(wal::CheckpointMode mode) {
  base::MutexLock lock(&mu_);
  if (closed_ || !status_.ok()) return;
  StartRecord(TraceKind::kCheckpoint);
  block_.push_back(static_cast<char>(mode));
  EndRecord();
}

absl::Status TraceWriter::status() {
  base::MutexLock lock(&mu_);
  return status_;
}

absl::Status TraceWriter::Close() {
  base::MutexLock lock(&mu_);
  if (closed_) return status_;
  closed_ = true;
  if (status_.ok()) {
    FlushBlock();
    // The end block: the trailer alone, so a trace cut at a block boundary is not whole.
    const uint64_t records = records_;
    StartRecord(TraceKind::kEnd);
    AppendVarint(&block_, records);
    FlushBlock();
  }
  if (std::fflush(file_) != 0 && status_.ok()) {
    status_ = absl::InternalError(
        absl::StrCat("trace ", path_, ": flush failed: ", std::strerror(errno)));
  }
  if (std::fclose(file_) != 0 && status_.ok()) {
    status_ = absl::InternalError(
        absl::StrCat("trace ", path_, ": close failed: ", std::strerror(errno)));
  }
  file_ = nullptr;
  return status_;
}

// ---------------------------------------------------------------------------------------------
// Reader

namespace {

// Reads the fields of one block's payload; `base` is the payload's offset in the file.
class PayloadReader {
 public:
  PayloadReader(absl::string_view payload, uint64_t base, absl::string_view name)
      : p_(payload), base_(base), name_(name) {}

  bool done() const { return pos_ == p_.size(); }
  uint64_t offset() const { return base_ + pos_; }

  absl::Status Error(absl::string_view what, uint64_t at) const {
    return absl::DataLossError(absl::StrCat("trace ", name_, ": ", what, " at offset ", at));
  }
  absl::StatusOr<uint8_t> Byte() {
    if (pos_ >= p_.size()) return Error("truncated record", offset());
    return static_cast<uint8_t>(p_[pos_++]);
  }
  absl::StatusOr<uint64_t> Varint() {
    const uint64_t at = offset();
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= p_.size()) return Error("truncated record", at);
      const uint8_t b = static_cast<uint8_t>(p_[pos_++]);
      if (shift == 63 && b > 1) break;
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Error("malformed varint", at);
  }
  absl::StatusOr<std::string> Bytes(uint64_t n) {
    if (n > p_.size() - pos_) {
      return Error("truncated record (a key or value runs past its block)", offset());
    }
    std::string s(p_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  absl::string_view p_;
  size_t pos_ = 0;
  const uint64_t base_;
  const absl::string_view name_;
};

absl::StatusOr<std::string> Key(PayloadReader& in) {
  JKV_ASSIGN_OR_RETURN(const uint64_t n, in.Varint());
  return in.Bytes(n);
}

// The fields after kind, thread and time.
absl::Status ReadFields(PayloadReader& in, bool kept, TraceRecord& r) {
  switch (r.kind) {
    case TraceKind::kGet:
    case TraceKind::kDelete: {
      JKV_ASSIGN_OR_RETURN(r.key, Key(in));
      return absl::OkStatus();
    }
    case TraceKind::kPut: {
      JKV_ASSIGN_OR_RETURN(r.key, Key(in));
      JKV_ASSIGN_OR_RETURN(r.value_size, in.Varint());
      if (kept) {
        JKV_ASSIGN_OR_RETURN(r.value, in.Bytes(r.value_size));
      }
      return absl::OkStatus();
    }
    case TraceKind::kScan: {
      JKV_ASSIGN_OR_RETURN(r.key, Key(in));
      JKV_ASSIGN_OR_RETURN(r.limit, in.Varint());
      JKV_ASSIGN_OR_RETURN(r.visited, in.Varint());
      const uint64_t at = in.offset();
      JKV_ASSIGN_OR_RETURN(const uint8_t bounds, in.Byte());
      if (bounds > 3) return in.Error("unknown scan bounds byte", at);
      if (r.visited > r.limit) return in.Error("scan visited more than its limit", at);
      if (bounds & 1) {
        JKV_ASSIGN_OR_RETURN(r.lower_bound, Key(in));
      }
      if (bounds & 2) {
        JKV_ASSIGN_OR_RETURN(r.upper_bound, Key(in));
      }
      return absl::OkStatus();
    }
    case TraceKind::kCheckpoint: {
      const uint64_t at = in.offset();
      JKV_ASSIGN_OR_RETURN(const uint8_t mode, in.Byte());
      if (mode > static_cast<uint8_t>(wal::CheckpointMode::kTruncate)) {
        return in.Error("unknown checkpoint mode", at);
      }
      r.checkpoint_mode = static_cast<wal::CheckpointMode>(mode);
      return absl::OkStatus();
    }
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<Trace> ParseTrace(absl::string_view bytes, absl::string_view name) {
  const auto error = [&](absl::string_view what, uint64_t at) {
    return absl::DataLossError(absl::StrCat("trace ", name, ": ", what, " at offset ", at));
  };
  if (bytes.size() < kTraceHeaderBytes) {
    if (bytes.substr(0, std::min<size_t>(bytes.size(), 8)) !=
        absl::string_view(kTraceMagic).substr(0, std::min<size_t>(bytes.size(), 8))) {
      return absl::InvalidArgumentError(
          absl::StrCat("trace ", name, ": not a journalkv trace (no JKVTRACE magic)"));
    }
    return error("truncated header", bytes.size());
  }
  const auto* h = reinterpret_cast<const uint8_t*>(bytes.data());
  if (std::memcmp(h, kTraceMagic, 8) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("trace ", name, ": not a journalkv trace (no JKVTRACE magic)"));
  }
  if (base::DecodeFixed32(h + 12) != static_cast<uint32_t>(base::Xxh3(h, 12, 0))) {
    return error("damaged header (checksum mismatch)", 0);
  }
  Trace trace;
  trace.version = base::DecodeFixed16(h + 8);
  if (trace.version != kTraceVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("trace ", name, ": format version ", trace.version,
                     " is not known to this build (it reads version ", kTraceVersion, ")"));
  }
  const uint16_t flags = base::DecodeFixed16(h + 10);
  if ((flags & ~kTraceFlagValuesKept) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("trace ", name, ": unknown flags 0x", absl::Hex(flags),
                     " (this build knows 0x1, values kept)"));
  }
  const bool kept = (flags & kTraceFlagValuesKept) != 0;
  trace.values = kept ? TraceValues::kKeep : TraceValues::kSynthetic;
  uint64_t off = kTraceHeaderBytes;
  uint64_t time_us = 0;
  bool ended = false;
  while (off < bytes.size()) {
    if (ended) return error("data after the end record", off);
    if (bytes.size() - off < kTraceBlockHeaderBytes) return error("truncated block header", off);
    const auto* bh = reinterpret_cast<const uint8_t*>(bytes.data() + off);
    const uint32_t length = base::DecodeFixed32(bh);
    if (length == 0 || length > kMaxTraceBlock) return error("bad block length", off);
    if (bytes.size() - off - kTraceBlockHeaderBytes < length) {
      return error("truncated block", off);
    }
    const absl::string_view payload = bytes.substr(off + kTraceBlockHeaderBytes, length);
    if (base::DecodeFixed64(bh + 4) != BlockCheck(bh, payload, off)) {
      return error("damaged block (checksum mismatch)", off);
    }
    PayloadReader in(payload, off + kTraceBlockHeaderBytes, name);
    while (!in.done()) {
      if (ended) return error("a record after the end record", in.offset());
      TraceRecord r;
      r.offset = in.offset();
      JKV_ASSIGN_OR_RETURN(const uint8_t kind, in.Byte());
      if (kind < 1 || kind > static_cast<uint8_t>(TraceKind::kEnd)) {
        return error(absl::StrCat("unknown record kind ", kind), r.offset);
      }
      r.kind = static_cast<TraceKind>(kind);
      JKV_ASSIGN_OR_RETURN(const uint64_t thread, in.Varint());
      if (thread >= (uint64_t{1} << 20)) return error("thread number too large", r.offset);
      r.thread = static_cast<uint32_t>(thread);
      JKV_ASSIGN_OR_RETURN(const uint64_t dt, in.Varint());
      time_us += dt;
      r.time_us = time_us;
      if (r.kind == TraceKind::kEnd) {
        JKV_ASSIGN_OR_RETURN(const uint64_t count, in.Varint());
        if (count != trace.records.size()) {
          return error(absl::StrCat("end record counts ", count, " records, the file has ",
                                    trace.records.size()),
                       r.offset);
        }
        ended = true;
        continue;
      }
      JKV_RETURN_IF_ERROR(ReadFields(in, kept, r));
      trace.threads = std::max(trace.threads, r.thread + 1);
      trace.records.push_back(std::move(r));
    }
    off += kTraceBlockHeaderBytes + length;
  }
  if (!ended) {
    return error("truncated trace (no end record: the recording was not closed)", off);
  }
  return trace;
}

absl::StatusOr<Trace> ReadTrace(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrCat("trace ", path, ": cannot open: ",
                                            std::strerror(errno)));
  }
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return absl::InternalError(absl::StrCat("trace ", path, ": read failed"));
  return ParseTrace(bytes, path);
}

}  // namespace journalkv
