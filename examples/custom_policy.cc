// A checkpoint policy of your own: copy the log in the background when no reader is active
// (so the copy never competes with readers for the disk), or when it has waited a second;
// block writers only at a hard cap. journalkv calls AfterCommit after every commit in WAL mode
// and does what it answers, exactly as for the built-in policies.
//
// Usage: custom_policy DIR   (creates DIR/custom-policy.db, removes it at the end)
#include <cstdio>
#include <memory>
#include <string>

#include "engine/db.h"

namespace {

class QuietTimePolicy final : public journalkv::CheckpointPolicy {
 public:
  QuietTimePolicy(uint32_t wake_frames, uint32_t cap_frames)
      : wake_frames_(wake_frames), cap_frames_(cap_frames) {}

  journalkv::PolicyDecision AfterCommit(const journalkv::LogSnapshot& log) override {
    using journalkv::PolicyDecision;
    if (log.live_frames >= cap_frames_) return PolicyDecision::BlockUnder(cap_frames_);
    if (log.uncopied == 0) return PolicyDecision::None();
    const bool quiet = log.active_readers == 0 && log.uncopied >= wake_frames_;
    const bool overdue = log.since_last_checkpoint > absl::Seconds(1);
    if (quiet || overdue) return PolicyDecision::WakeBackground();
    return PolicyDecision::None();
  }
  std::string Name() const override { return "quiet-time"; }

 private:
  const uint32_t wake_frames_;
  const uint32_t cap_frames_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: custom_policy DIR\n");
    return 2;
  }
  const std::string path = std::string(argv[1]) + "/custom-policy.db";
  journalkv::Options options;
  options.journal_mode = journalkv::JournalMode::kWal;
  options.custom_checkpoint_policy = std::make_shared<QuietTimePolicy>(50, 400);
  auto db = journalkv::Db::Open(path, options);
  if (!db.ok()) {
    std::fprintf(stderr, "open: %s\n", db.status().ToString().c_str());
    return 1;
  }
  // 2,000 commits; a reader is open during every other hundred of them.
  std::unique_ptr<journalkv::ReadTransaction> reader;
  for (int i = 0; i < 2000; ++i) {
    if (i % 100 == 0) {
      reader.reset();
      if ((i / 100) % 2 == 0) {
        auto r = (*db)->BeginRead();
        if (!r.ok()) return 1;
        reader = std::move(*r);
      }
    }
    if (absl::Status s = (*db)->Put("key" + std::to_string(i % 300), std::to_string(i)); !s.ok()) {
      std::fprintf(stderr, "put: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  reader.reset();
  const journalkv::DbStats stats = (*db)->Stats();
  std::printf("policy %s\n", stats.checkpoint_policy.c_str());
  std::printf("commits %llu\n", static_cast<unsigned long long>(stats.commits));
  std::printf("background checkpoints ran: %s\n", stats.background_checkpoints > 0 ? "yes" : "no");
  std::printf("log stayed under the cap plus one commit: %s\n",
              stats.max_log_frames <= 400 + 4 ? "yes" : "no");
  std::printf("background errors %llu\n",
              static_cast<unsigned long long>(stats.background_errors));
  if (!(*db)->Close().ok()) return 1;
  std::remove(path.c_str());
  return 0;
}
