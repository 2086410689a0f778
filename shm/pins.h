// The arithmetic of the wal-index's generation and pin words (wal_index.h's layout stores them;
// the WAL protocol, wal/wal_connection.h, and the checkpointer, wal/checkpoint_copy.h, read
// and write them through these functions only).
//
// A log generation (ckpt_seq) is a 31-bit serial number: it wraps, so "later" is serial order
// (SeqAfter), never numeric order. A pin is the snapshot a reader still needs of one log: its
// generation and the last frame it reads (bit 63 set, so 0 stays "no pin"). A checkpoint
// target (and copied_through, written_through) is a generation and a frame, unflagged.
#ifndef JOURNALKV_SHM_PINS_H_
#define JOURNALKV_SHM_PINS_H_

#include <cstdint>

namespace journalkv::shm {

inline uint64_t EncodePin(uint32_t ckpt_seq, uint32_t mx_frame) {
  return (uint64_t{1} << 63) | (uint64_t{ckpt_seq & 0x7fffffffu} << 32) | mx_frame;
}
inline uint32_t PinSeq(uint64_t pin) { return static_cast<uint32_t>(pin >> 32) & 0x7fffffffu; }
inline uint32_t PinFrame(uint64_t pin) { return static_cast<uint32_t>(pin); }
inline uint64_t EncodeTarget(uint32_t ckpt_seq, uint32_t frame) {
  return (uint64_t{ckpt_seq} << 32) | frame;
}

// synced_through (wal_index.h, wal/wal_connection.h D2): a generation and the last frame of it
// known durable, with kSyncFailedBit once a sync of that generation failed (W13).
inline constexpr uint64_t kSyncFailedBit = uint64_t{1} << 63;
inline uint64_t EncodeSynced(uint32_t ckpt_seq, uint32_t frame, bool failed) {
  return (failed ? kSyncFailedBit : 0) | (uint64_t{ckpt_seq & 0x7fffffffu} << 32) | frame;
}
inline uint32_t SyncedSeq(uint64_t word) { return static_cast<uint32_t>(word >> 32) & 0x7fffffffu; }
inline uint32_t SyncedFrame(uint64_t word) { return static_cast<uint32_t>(word); }
inline bool SyncFailed(uint64_t word) { return (word & kSyncFailedBit) != 0; }

// True when generation `a` is later than generation `b` (31-bit serial order).
inline bool SeqAfter(uint32_t a, uint32_t b) {
  const uint32_t d = (a - b) & 0x7fffffffu;
  return d != 0 && d < 0x40000000u;
}

// Pins in snapshot order: by generation (serial, SeqAfter), then by frame; "no pin" (0) only
// equals itself. A consistent order for pins less than 2^30 generations apart, which every set
// of pins alive at once is (a pin of an older generation keeps the next one from being copied,
// so from restarting).
inline bool PinBefore(uint64_t a, uint64_t b) {
  if (PinSeq(a) != PinSeq(b)) return SeqAfter(PinSeq(b), PinSeq(a));
  return PinFrame(a) < PinFrame(b);
}

}  // namespace journalkv::shm

#endif  // JOURNALKV_SHM_PINS_H_
