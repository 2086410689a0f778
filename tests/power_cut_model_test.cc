// The power-loss model against the real kernel (issue 21): every crash sweep trusts vfs/'s
// model of what a file system keeps after a power cut (vfs/power_loss_model.h,
// FaultInjectingFileSystem). Here the same probe of file operations runs twice: on ext4 and
// xfs under real power cuts (tests/cut_disk.h), and through FaultInjectingFileSystem with a
// simulated power loss after every one of its mutations, many seeds each, for the disk models
// the sweeps use. Each outcome is reduced to a signature (which files exist, their sizes, and
// whose bytes each 512-byte sector holds), and:
//   - every state the kernel produced must be one the model can produce at the same point of
//     the probe (the child publishes how far it got before and after each cut): a state the
//     model calls impossible is a hole in every sweep;
//   - the model's states the kernel never produced are printed, with how often the kernel
//     produced each of its own, so the note can say where the model is more pessimistic than
//     this kernel and disk (and why that stays).
// A round of the probe (files a<r>, b<r>, c<r> in one directory):
//    1. create a, write 8 KiB (X), fsync, fsync the directory     (durable base)
//    2. create c, write 4 KiB (V), fsync, fsync the directory     (durable base)
//    3. overwrite a's first 4 KiB (Y)                              (unsynced overwrite)
//    4. append 4 KiB to a at 8 KiB (Z)                             (unsynced append)
//    5. create b, write 4 KiB (W)                                  (unsynced create and data)
//    6. write 512 bytes inside a's second block (S)                (sub-block write)
//    7. delete c                                                   (unsynced delete)
//    8. fdatasync a
//    9. truncate a to 4 KiB                                        (unsynced truncate)
//   10. fsync b, fsync the directory
//   11. fsync a
// with a random pause of up to 3 ms after each step, so that cuts land everywhere.
//
// Skips with one line as power_cut_test does. The default tier takes 30 cuts per file system,
// the long tier 400.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/status_matchers.h"
#include "base/test_scale.h"
#include "gtest/gtest.h"
#include "tests/cut_disk.h"
#include "vfs/fault_injecting_fs.h"
#include "vfs/mem_fs.h"
#include "vfs/posix_fs.h"

namespace journalkv {
namespace {

constexpr uint64_t kBlock = 4096;
constexpr uint64_t kSector = 512;
constexpr int kSteps = 11;

// The byte pattern `tag` puts at file offset `offset` in round `round`: each 8-byte word is a
// hash of (round, tag, word), so two tags' sectors never agree (a per-sector value taken
// modulo 255, as first written, made one sector in 255 of two tags identical, and the
// kernel looked as if it had lost a synced write).
uint8_t PatternByte(int round, char tag, uint64_t offset) {
  uint64_t h = (uint64_t(round) << 40) ^ (uint64_t(uint8_t(tag)) << 32) ^ (offset / 8);
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return static_cast<uint8_t>(h >> (8 * (offset % 8)));
}
std::vector<uint8_t> Pattern(int round, char tag, uint64_t offset, uint64_t size) {
  std::vector<uint8_t> out(size);
  for (uint64_t i = 0; i < size; ++i) out[i] = PatternByte(round, tag, offset + i);
  return out;
}

std::string PathOf(const std::string& dir, char file, int round) {
  return absl::StrCat(dir, "/", std::string(1, file), round);
}

// One round of the probe through `fs` (see the top). `after_step(k)` runs after step k.
absl::Status RunRound(vfs::FileSystem* fs, const std::string& dir, int r,
                      const std::function<void(int)>& after_step) {
  const vfs::OpenOptions create{vfs::OpenMode::kCreate, vfs::FileKind::kOther};
  auto write = [&](vfs::File& f, char tag, uint64_t offset, uint64_t size) {
    return f.Write(offset, Pattern(r, tag, offset, size));
  };
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> a, fs->Open(PathOf(dir, 'a', r), create));
  JKV_RETURN_IF_ERROR(write(*a, 'X', 0, 2 * kBlock));
  JKV_RETURN_IF_ERROR(a->Sync(vfs::SyncKind::kAll));
  JKV_RETURN_IF_ERROR(fs->SyncDirectory(dir));
  after_step(1);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> c, fs->Open(PathOf(dir, 'c', r), create));
  JKV_RETURN_IF_ERROR(write(*c, 'V', 0, kBlock));
  JKV_RETURN_IF_ERROR(c->Sync(vfs::SyncKind::kAll));
  JKV_RETURN_IF_ERROR(fs->SyncDirectory(dir));
  c.reset();
  after_step(2);
  JKV_RETURN_IF_ERROR(write(*a, 'Y', 0, kBlock));
  after_step(3);
  JKV_RETURN_IF_ERROR(write(*a, 'Z', 2 * kBlock, kBlock));
  after_step(4);
  JKV_ASSIGN_OR_RETURN(std::unique_ptr<vfs::File> b, fs->Open(PathOf(dir, 'b', r), create));
  JKV_RETURN_IF_ERROR(write(*b, 'W', 0, kBlock));
  after_step(5);
  JKV_RETURN_IF_ERROR(write(*a, 'S', kBlock + kSector, kSector));
  after_step(6);
  JKV_RETURN_IF_ERROR(fs->Delete(PathOf(dir, 'c', r)));
  after_step(7);
  JKV_RETURN_IF_ERROR(a->Sync(vfs::SyncKind::kData));
  after_step(8);
  JKV_RETURN_IF_ERROR(a->Truncate(kBlock));
  after_step(9);
  JKV_RETURN_IF_ERROR(b->Sync(vfs::SyncKind::kAll));
  JKV_RETURN_IF_ERROR(fs->SyncDirectory(dir));
  after_step(10);
  JKV_RETURN_IF_ERROR(a->Sync(vfs::SyncKind::kAll));
  after_step(11);
  return absl::OkStatus();
}

// A file's signature: "-" when missing, else its size and, per 512-byte sector, the tag whose
// bytes it holds (one of `tags`), '0' for zeros or '?' for anything else. (A test that the
// tags' sectors all differ: PatternsOfTwoTagsNeverShareASector.)
std::string FileSignature(const std::optional<std::string>& bytes, int r, const char* tags) {
  if (!bytes.has_value()) return "-";
  std::string sig = absl::StrCat(bytes->size(), ":");
  for (uint64_t at = 0; at < bytes->size(); at += kSector) {
    const uint64_t n = std::min<uint64_t>(kSector, bytes->size() - at);
    const auto* p = reinterpret_cast<const uint8_t*>(bytes->data()) + at;
    char c = '?';
    if (std::all_of(p, p + n, [](uint8_t b) { return b == 0; })) c = '0';
    for (const char* t = tags; *t != '\0' && c == '?'; ++t) {
      bool match = true;
      for (uint64_t i = 0; i < n && match; ++i) match = p[i] == PatternByte(r, *t, at + i);
      if (match) c = *t;
    }
    sig += c;
  }
  return sig;
}

using ReadFile = std::function<std::optional<std::string>(const std::string& path)>;

std::string RoundSignature(const ReadFile& read, const std::string& dir, int r) {
  return absl::StrCat("a=", FileSignature(read(PathOf(dir, 'a', r)), r, "XYZS"),
                      " b=", FileSignature(read(PathOf(dir, 'b', r)), r, "W"),
                      " c=", FileSignature(read(PathOf(dir, 'c', r)), r, "V"));
}

// --- the model
struct ModelVariant {
  const char* name;
  vfs::FaultInjectingFileSystem::DiskModel disk;
};
std::vector<ModelVariant> Variants() {
  vfs::FaultInjectingFileSystem::DiskModel both;
  both.unsynced_entries_may_survive = true;
  both.size_without_data = true;
  vfs::FaultInjectingFileSystem::DiskModel sector4k;
  sector4k.sector_size = 4096;
  return {{"default", {}}, {"entries+size", both}, {"4k-sectors", sector4k}};
}

struct Model {
  // mutations[k]: the model's mutation count once k steps are done (mutations[0] = 0).
  std::vector<uint64_t> mutations;
  // states[n]: every signature a power loss after n mutations produced, with the variants
  // that produced it and how many draws did.
  struct Drawn {
    std::set<std::string> variants;
    int draws = 0;
  };
  std::vector<std::map<std::string, Drawn>> states;
  int draws_per_point = 0;
};

std::optional<std::string> ReadMem(vfs::MemFileSystem& mem, const std::string& path) {
  absl::StatusOr<std::unique_ptr<vfs::File>> f =
      mem.Open(path, {vfs::OpenMode::kReadOnly, vfs::FileKind::kOther});
  if (!f.ok()) return std::nullopt;
  const uint64_t size = *(*f)->Size();
  std::string bytes(size, '\0');
  if (size > 0) {
    EXPECT_THAT((*f)->Read(0, absl::MakeSpan(reinterpret_cast<uint8_t*>(bytes.data()), size)),
                testing::IsOk());
  }
  return bytes;
}

Model BuildModel(int seeds) {
  Model m;
  {
    vfs::MemFileSystem mem;
    vfs::FaultInjectingFileSystem fi(&mem);
    m.mutations.push_back(0);
    EXPECT_THAT(RunRound(&fi, "/d", 0, [&](int) { m.mutations.push_back(fi.mutation_count()); }),
                testing::IsOk());
  }
  const uint64_t total = m.mutations.back();
  m.states.resize(total + 1);
  for (const ModelVariant& v : Variants()) {
    for (uint64_t n = 0; n <= total; ++n) {
      for (int seed = 0; seed < seeds; ++seed) {
        vfs::MemFileSystem mem;
        vfs::FaultInjectingFileSystem fi(&mem);
        fi.SetDiskModel(v.disk);
        fi.CrashAfterMutations(n);
        (void)RunRound(&fi, "/d", 0, [](int) {});  // fails at the crash point
        EXPECT_THAT(fi.SimulatePowerLoss(uint64_t(seed) * 7919 + n), testing::IsOk());
        Model::Drawn& d = m.states[n][RoundSignature(
            [&](const std::string& p) { return ReadMem(mem, p); }, "/d", 0)];
        d.variants.insert(v.name);
        ++d.draws;
      }
    }
  }
  m.draws_per_point = seeds * static_cast<int>(Variants().size());
  return m;
}

// --- the kernel
std::optional<std::string> ReadPosix(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// How far the child got: round * (kSteps + 1) + steps done in it.
struct Progress {
  std::atomic<int64_t> at{0};
};
int RoundOf(int64_t p) { return static_cast<int>(p / (kSteps + 1)); }
int StepOf(int64_t p) { return static_cast<int>(p % (kSteps + 1)); }

TEST(PowerCutModelProbeTest, PatternsOfTwoTagsNeverShareASector) {
  const std::string tags = "XYZSWV";
  for (int r = 0; r < 2000; ++r) {
    for (uint64_t at = 0; at < 3 * kBlock; at += kSector) {
      std::set<std::vector<uint8_t>> sectors;
      for (char t : tags) sectors.insert(Pattern(r, t, at, kSector));
      ASSERT_EQ(sectors.size(), tags.size()) << "round " << r << " offset " << at;
      ASSERT_FALSE(sectors.count(std::vector<uint8_t>(kSector, 0)));
    }
  }
}

class PowerCutModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PowerCutModelTest, EveryStateTheKernelKeepsIsOneTheModelAllows) {
  const std::string guest_fs = GetParam();
  std::unique_ptr<CutDisk> disk;
  if (std::string why = CutDisk::Make(guest_fs, &disk); !why.empty()) GTEST_SKIP() << why;
  // The model's states are a sample: enough seeds per point and disk model (thousands) that
  // a state it reaches in one draw of a few hundred is all but certain to be in it. With 24
  // seeds, a state the kernel kept often (truncate and b's data lost, b's create kept) was
  // missed in one run of five.
  const int seeds = testing::TierScaled(2000, 1000, 4000);
  const auto model_start = std::chrono::steady_clock::now();
  const Model model = BuildModel(seeds);
  std::printf("model: %d seeds per point and disk model, %.1f s\n", seeds,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - model_start)
                  .count());
  const std::string dir = disk->guest() + "/probe";
  ASSERT_TRUE(Shell(absl::StrCat("mkdir -p ", dir, " && sync")));

  auto* progress = static_cast<Progress*>(::mmap(nullptr, sizeof(Progress),
                                                 PROT_READ | PROT_WRITE,
                                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(progress, MAP_FAILED);
  new (progress) Progress();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    vfs::PosixFileSystem fs;
    std::mt19937 rng(::getpid());
    for (int r = 0;; ++r) {
      const absl::Status s = RunRound(&fs, dir, r, [&](int k) {
        progress->at.store(int64_t{r} * (kSteps + 1) + k, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
      });
      if (!s.ok()) {
        std::fprintf(stderr, "probe: %s\n", s.ToString().c_str());
        ::_exit(1);
      }
      progress->at.store(int64_t{r + 1} * (kSteps + 1), std::memory_order_release);
    }
  }
  struct Cut {
    int64_t before, after;
  };
  std::vector<Cut> cuts;
  const int n = testing::TierScaled(30, 30, 400);
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
    Cut c;
    c.before = progress->at.load(std::memory_order_acquire);
    ASSERT_TRUE(disk->Cut(absl::StrCat("cut", i)));
    c.after = progress->at.load(std::memory_order_acquire);
    cuts.push_back(c);
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the probe failed on the real file system";

  std::map<std::string, int> kernel_states;  // in-flight rounds' signatures, with their count
  std::set<std::string> seen_model_states;
  int default_misses = 0, rounds_checked = 0, disallowed = 0;
  double rarest = 1;  // the smallest share of the model's draws that made a state the kernel kept
  for (int i = 0; i < n; ++i) {
    const Cut& c = cuts[i];
    const std::string name = absl::StrCat("cut", i);
    ASSERT_TRUE(disk->MountCut(name)) << name;
    const std::string cut_dir = disk->cut() + "/probe";
    const int first = RoundOf(c.before), last = RoundOf(c.after);
    // Two finished rounds before the first one in flight, the rounds in flight, and the next
    // one (never begun: none of its files may exist).
    for (int r = std::max(0, first - 2); r <= last + 1; ++r) {
      const int lo = r < first ? kSteps : r == first ? StepOf(c.before) : 0;
      const int hi = r < last ? kSteps : r == last ? StepOf(c.after) : -1;
      const std::string sig = RoundSignature(ReadPosix, cut_dir, r);
      ++rounds_checked;
      if (hi < 0) {
        EXPECT_EQ(sig, "a=- b=- c=-") << name << ": round " << r << " had not begun";
        continue;
      }
      // The model's states from lo steps done through step hi + 1 in flight.
      const uint64_t from = model.mutations[lo];
      const uint64_t to = model.mutations[std::min(hi + 1, kSteps)];
      std::set<std::string> variants;
      int draws = 0;
      for (uint64_t m = from; m <= to; ++m) {
        auto it = model.states[m].find(sig);
        if (it == model.states[m].end()) continue;
        variants.insert(it->second.variants.begin(), it->second.variants.end());
        draws += it->second.draws;
      }
      if (draws > 0) {
        rarest = std::min(rarest, double(draws) / (model.draws_per_point * double(to - from + 1)));
      }
      if (variants.empty()) ++disallowed;
      EXPECT_FALSE(variants.empty())
          << name << " (" << guest_fs << "), round " << r << " with steps " << lo << ".." << hi
          << " done: the kernel kept " << sig << ", which no disk model allows";
      if (!variants.empty() && !variants.count("default")) ++default_misses;
      if (lo < kSteps) {
        ++kernel_states[absl::StrCat("steps ", lo, "..", hi, ": ", sig)];
        seen_model_states.insert(sig);
      }
    }
    disk->UnmountCut(name);
  }
  int model_total = 0, model_unseen = 0;
  std::vector<std::string> unseen_examples;
  std::set<std::string> all_model;
  for (const auto& at : model.states) {
    for (const auto& [sig, v] : at) all_model.insert(sig);
  }
  for (const std::string& sig : all_model) {
    ++model_total;
    if (!seen_model_states.count(sig)) {
      ++model_unseen;
      if (unseen_examples.size() < 6) unseen_examples.push_back(sig);
    }
  }
  std::printf("%s: %d cuts, %d rounds checked; the kernel kept %zu distinct in-flight states; "
              "%d rounds in a state no disk model allows, %d in one only a non-default disk "
              "model allows; the rarest of the kernel's states was %.4f of the model's draws at "
              "its points; the model allows %d states, %d of them never seen here, e.g.\n"
              "  %s\n",
              guest_fs.c_str(), n, rounds_checked, kernel_states.size(), disallowed,
              default_misses, rarest, model_total, model_unseen,
              absl::StrJoin(unseen_examples, "\n  ").c_str());
  for (const auto& [state, count] : kernel_states) {
    std::printf("  kernel %3d x %s\n", count, state.c_str());
  }
  ::munmap(progress, sizeof(Progress));
}

INSTANTIATE_TEST_SUITE_P(FileSystems, PowerCutModelTest, ::testing::Values("ext4", "xfs"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

}  // namespace
}  // namespace journalkv
