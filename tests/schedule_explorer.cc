#include "tests/schedule_explorer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string_view>
#include <thread>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "wal/checkpoint_copy.h"
#include "wal/wal_connection.h"
#include "shm/wal_index.h"

namespace journalkv::testing {
namespace {

std::atomic<Schedule*> current{nullptr};
thread_local int thread_id = -1;         // the thread's index in Run; -1: not scheduled
thread_local bool in_step_check = false;  // the step check's own index reads pass freely

}  // namespace

Schedule::Schedule(const ScheduleOptions& options) : options_(options) {
  Schedule* none = nullptr;
  if (!current.compare_exchange_strong(none, this)) {
    std::fprintf(stderr, "schedule explorer: two schedules at once\n");
    std::abort();
  }
  wal::SetWalHookForTesting(&HookPoint);
  wal::SetCheckpointHookForTesting(&HookPoint);
  shm::SetIndexHookForTesting(&HookPoint);
}

Schedule::~Schedule() {
  wal::SetWalHookForTesting(nullptr);
  wal::SetCheckpointHookForTesting(nullptr);
  shm::SetIndexHookForTesting(nullptr);
  current.store(nullptr);
}

void Schedule::HookPoint(const char* point) {
  if (in_step_check) return;
  Schedule* s = current.load();
  if (s == nullptr) return;
  if (thread_id < 0 && s->options_.adopt_threads) thread_id = s->Adopt();
  if (thread_id >= 0) s->Point(thread_id, point);
}

int Schedule::Adopt() {
  std::lock_guard<std::mutex> lock(mu_);
  // Not before the first turn is given (Run waits for its own threads to line up first).
  if (!started_ || released_) return -1;
  const int id = static_cast<int>(states_.size());
  // It enters as if it had been running (it was, outside the schedule) and waits at this
  // point for its turn, with a priority among the high ones, drawn in step order.
  states_.push_back(State::kRunning);
  yielding_.push_back(false);
  idle_.push_back(false);
  countdown_.push_back(0);
  held_until_.emplace_back();
  last_point_.push_back("");
  arriving_.push_back(false);
  tids_.push_back(static_cast<int>(::gettid()));
  if (adoption_expected_) {
    adoption_expected_ = false;
    --arrivals_;
    cv_.notify_all();
  }
  last_step_.push_back(steps_);
  priorities_.push_back(bodies_ + static_cast<int>(rng_() % (bodies_ + 1)));
  ++adopted_;
  return id;
}

bool Schedule::IsLoad(const char* point) {
  static constexpr std::string_view kLoads[] = {
      "shm:read_header", "shm:read_header:a_read", "shm:generation_is", "shm:lookup",
      "shm:backfill",    "shm:ckpt_target",        "shm:copied_through", "shm:written_through",
      "wait",
      // Lock attempts too: a thread waiting for a lock retries them many times; the protocol
      // step after a lock is taken has a point of its own.
      "shm:lock",        "shm:unlock", "idle", "wake", "wait:poll"};
  return std::find(std::begin(kLoads), std::end(kLoads), std::string_view(point)) !=
         std::end(kLoads);
}

const std::vector<std::string>& Schedule::DropCandidates() {
  static const std::vector<std::string> names = {
      "begin_read:header", "begin_read:pinned", "begin_read:done", "begin_write:locked",
      "commit:appended",   "read:frame",        "read:db",         "restart",
      "restart:midway",    "copy",              "copy:page",       "copied",
      "synced",            "shm:write_header",  "shm:write_header:b_written",
      "shm:set_pin",       "shm:set_backfill",  "shm:set_ckpt_target",
      "shm:set_copied_through", "shm:set_written_through", "shm:append", "shm:truncate"};
  return names;
}

std::string Schedule::DropNames() const {
  std::string out;
  for (const std::string& name : drop_names_) absl::StrAppend(&out, out.empty() ? "" : " ", name);
  for (const auto& [at, until] : hold_names_) {
    absl::StrAppend(&out, out.empty() ? "" : " ", at, ">", until);
  }
  return out;
}

bool Schedule::IsDecision(const char* point) const {
  if (IsLoad(point)) return false;
  return options_.every_store_decides || std::string_view(point).substr(0, 4) != "shm:";
}

void Schedule::RecordLocked(int id, const char* point) {
  ++steps_;
  ++progress_;
  last_step_[id] = steps_;
  if (auto it = visits_.find(std::string_view(point)); it != visits_.end()) {
    ++it->second;
  } else {
    visits_.emplace(point, 1);
  }
  if (steps_ > options_.max_steps) {
    std::fprintf(stderr, "schedule explorer: livelock: %llu steps (seed %llu); the last ones:\n%s",
                 static_cast<unsigned long long>(steps_ - 1),
                 static_cast<unsigned long long>(options_.seed), Trace().c_str());
    std::abort();
  }
  if (trace_.size() < options_.trace_size) {
    trace_.emplace_back(id, point);
  } else {
    trace_[(steps_ - 1) % options_.trace_size] = {id, point};
  }
}

uint64_t Schedule::visits(std::string_view name) const {
  auto it = visits_.find(name);
  return it == visits_.end() ? 0 : it->second;
}

std::string Schedule::Trace() const {
  std::string out;
  const uint64_t n = trace_.size();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t step = steps_ - n + i + 1;
    const auto& [id, point] = trace_[(step - 1) % options_.trace_size];
    absl::StrAppend(&out, "  ", step, " t", id, " ", point, "\n");
  }
  return out;
}

int Schedule::PickLocked() {
  int eligible = -1;
  for (int i = 0; i < static_cast<int>(states_.size()); ++i) {
    if (states_[i] != State::kWaiting) continue;
    if (!yielding_[i] && (eligible < 0 || priorities_[i] > priorities_[eligible])) eligible = i;
  }
  if (eligible >= 0) return eligible;
  // Every waiting thread sits out a wait (each waits for another, say the readers for a
  // commit and the writer for them): the one that stepped least recently goes, so that each
  // gets its turn and the one whose wait is over gets past it.
  int oldest = -1;
  for (int i = 0; i < static_cast<int>(states_.size()); ++i) {
    if (states_[i] == State::kWaiting && (oldest < 0 || last_step_[i] < last_step_[oldest])) {
      oldest = i;
    }
  }
  return oldest;
}

bool Schedule::Sleeping(int tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512];
  const size_t got = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[got] = '\0';
  // "tid (comm) S ...": the state follows the last ')' (comm may hold one).
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr || close[1] == '\0') return false;
  const char state = close[2];
  return state == 'S' || state == 'D';
}

void Schedule::Enter(int id) {
  std::unique_lock<std::mutex> lock(mu_);
  tids_[id] = static_cast<int>(::gettid());
  states_[id] = State::kWaiting;
  cv_.notify_all();
  cv_.wait(lock, [&] { return token_ == id; });
  states_[id] = State::kRunning;
}

void Schedule::Exit(int id) {
  std::unique_lock<std::mutex> lock(mu_);
  RecordLocked(id, "<end>");
  states_[id] = State::kDone;
  if (token_ == id || token_ < 0) token_ = PickLocked();
  cv_.notify_all();
  monitor_cv_.notify_all();
}

void Schedule::Point(int id, const char* point) {
  std::unique_lock<std::mutex> lock(mu_);
  // After Run: an adopted thread passes freely and leaves the counts alone (the caller reads
  // them without the lock once Run has returned).
  if (released_) return;
  idle_[id] = false;  // it is awake (woken by a "wake" or by anything else)
  if (arriving_[id]) {
    arriving_[id] = false;
    --arrivals_;
    cv_.notify_all();
  }
  RecordLocked(id, point);
  if (step_check_ && step_failure_.empty()) {
    in_step_check = true;
    std::string problem = step_check_(point);
    in_step_check = false;
    if (!problem.empty()) step_failure_ = absl::StrCat("after step ", steps_, ": ", problem);
  }
  if (IsDecision(point) && change_steps_.contains(++decisions_)) priorities_[id] = next_low_--;
  // "prev/point": the step at `point` of a thread whose previous step was at `prev`.
  std::string after;
  if (pair_names_) after = absl::StrCat(last_point_[id], "/", point);
  last_point_[id] = point;
  const auto named = [&](const auto& names) {
    return names.contains(std::string_view(point)) || (pair_names_ && names.contains(after));
  };
  if (!drop_names_.empty() && named(drop_names_) && (rng_() & 1)) {
    priorities_[id] = next_low_--;
  }
  auto hold = hold_names_.end();
  if (pair_names_) hold = hold_names_.find(after);
  if (hold == hold_names_.end()) hold = hold_names_.find(std::string_view(point));
  const bool held = hold != hold_names_.end() && (rng_() & 1);
  // A thread at "wait" sits out until another thread takes a step (of its own, not a wait):
  // two waiters passing the turn to each other would keep a low-priority lock holder from
  // ever running.
  // "wait:poll" sits out for a number of other threads' steps drawn here (a thread that
  // polls at random times: another process's checkpointer).
  if (std::string_view(point) == "wait") {
    yielding_[id] = true;
    countdown_[id] = 0;
    held_until_[id].clear();
  } else if (std::string_view(point) == "wait:poll") {
    yielding_[id] = true;
    countdown_[id] = 1 + static_cast<int>(rng_() % kPollSteps);
  } else {
    countdown_[id] = 0;  // picked before its count ran out (every other thread sat out)
    held_until_[id].clear();
    for (int i = 0; i < static_cast<int>(yielding_.size()); ++i) {
      if (i == id) continue;
      if (!held_until_[i].empty()) {
        if (held_until_[i] != point) continue;
        held_until_[i].clear();
      }
      if (countdown_[i] > 0 && --countdown_[i] > 0) continue;
      yielding_[i] = false;
    }
    if (held) {
      yielding_[id] = true;
      held_until_[id] = hold->second;
    }
  }
  if (std::string_view(point) == "wake") AwaitWokenLocked(lock);
  if (std::string_view(point) == "idle") {
    // An adopted background thread about to sleep until it is woken: it blocks outside the
    // schedule from here, so it passes the turn now instead of being found stalled later.
    states_[id] = State::kStalled;
    idle_[id] = true;
    if (token_ == id || token_ < 0) {
      token_ = PickLocked();
      cv_.notify_all();
    }
    return;
  }
  states_[id] = State::kWaiting;
  if (token_ == id || token_ < 0) {
    token_ = PickLocked();
    cv_.notify_all();
  }
  cv_.wait(lock, [&] { return token_ == id || released_; });
  states_[id] = State::kRunning;
}

void Schedule::AwaitWokenLocked(std::unique_lock<std::mutex>& lock) {
  if (!options_.adopt_threads) return;
  bool any_adopted = false;
  for (int i = bodies_; i < static_cast<int>(states_.size()); ++i) {
    any_adopted = true;
    if (idle_[i]) {
      idle_[i] = false;
      arriving_[i] = true;
      ++arrivals_;
    }
  }
  // Not adopted yet: the thread this wake started, or one asleep since before the schedule.
  if (!any_adopted && !adoption_expected_) {
    adoption_expected_ = true;
    ++arrivals_;
  }
  // A woken thread reaches its next point within microseconds; the bound only keeps a wake
  // that starts nothing (the thread was stopping) from holding the schedule.
  if (!cv_.wait_for(lock, std::chrono::seconds(2), [&] { return arrivals_ == 0; })) {
    ++late_arrivals_;
    arrivals_ = 0;
    adoption_expected_ = false;
    std::fill(arriving_.begin(), arriving_.end(), false);
  }
}

void Schedule::Run(std::vector<std::function<void()>> bodies) {
  const int n = static_cast<int>(bodies.size());
  std::mt19937_64 rng(options_.seed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    bodies_ = n;
    states_.assign(n, State::kStarting);
    yielding_.assign(n, false);
    idle_.assign(n, false);
    countdown_.assign(n, 0);
    held_until_.assign(n, "");
    last_point_.assign(n, "");
    arriving_.assign(n, false);
    tids_.assign(n, 0);
    last_step_.assign(n, 0);
    priorities_.resize(n);
    std::iota(priorities_.begin(), priorities_.end(), n);  // n .. 2n-1, above every low one
    std::shuffle(priorities_.begin(), priorities_.end(), rng);
    next_low_ = n - 1;
    change_steps_.clear();
    for (int i = 0; i < options_.change_points; ++i) {
      change_steps_.insert(1 + rng() % std::max<uint64_t>(options_.expected_decisions, 1));
    }
    drop_names_.clear();
    std::vector<std::string> names = DropCandidates();
    std::shuffle(names.begin(), names.end(), rng);
    const size_t drops = std::min<size_t>(std::max(options_.drop_points, 0), names.size());
    drop_names_.insert(names.begin(), names.begin() + drops);
    if (!options_.drop_names.empty()) {
      drop_names_.clear();
      for (const std::string& name : options_.drop_names) {
        if (const size_t gt = name.find('>'); gt != std::string::npos) {
          hold_names_.emplace(name.substr(0, gt), name.substr(gt + 1));
        } else {
          drop_names_.insert(name);
        }
      }
    }
    pair_names_ = false;
    for (const std::string& name : options_.drop_names) {
      pair_names_ = pair_names_ || name.substr(0, name.find('>')).find('/') != std::string::npos;
    }
    rng_.seed(rng());
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([this, i, body = std::move(bodies[i])] {
      thread_id = i;
      Enter(i);
      body();
      Exit(i);
      thread_id = -1;
    });
  }
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] {
    return std::all_of(states_.begin(), states_.begin() + n,
                       [](State s) { return s == State::kWaiting; });
  });
  token_ = PickLocked();
  started_ = true;
  cv_.notify_all();
  absl::Duration stuck;
  constexpr absl::Duration kLook = absl::Milliseconds(1);
  auto bodies_done = [&] {
    return std::all_of(states_.begin(), states_.begin() + n,
                       [](State s) { return s == State::kDone; });
  };
  uint64_t seen = progress_;
  absl::Duration still;  // how long the same step has been the last
  int asleep = 0;        // looks in a row that found the running thread asleep
  while (!bodies_done()) {
    monitor_cv_.wait_for(lock, absl::ToChronoMicroseconds(kLook));
    if (progress_ != seen) {
      seen = progress_;
      still = stuck = absl::ZeroDuration();
      asleep = 0;
      continue;
    }
    still += kLook;
    if (arrivals_ > 0) continue;  // a waker waits for the thread it woke (AwaitWokenLocked)
    if (token_ >= 0 && states_[token_] == State::kRunning) {
      // Ask the kernel without the lock: the thread may be about to take it.
      const int tid = tids_[token_], holder = token_;
      lock.unlock();
      const bool sleeping = Sleeping(tid);
      lock.lock();
      if (progress_ != seen || token_ != holder || states_[holder] != State::kRunning) continue;
      asleep = sleeping ? asleep + 1 : 0;
      if (asleep < 3 && still < options_.stall) continue;
      asleep = 0;
      still = absl::ZeroDuration();
      // The running thread is blocked outside the schedule: someone else runs meanwhile.
      states_[token_] = State::kStalled;
      ++stalls_;
      token_ = PickLocked();
      cv_.notify_all();
      continue;
    }
    if (token_ < 0) {
      token_ = PickLocked();
      if (token_ >= 0) {
        cv_.notify_all();
        continue;
      }
    }
    stuck += kLook;
    if (stuck >= options_.deadlock) {
      std::fprintf(stderr,
                   "schedule explorer: deadlock: every thread blocked outside the schedule for "
                   "%s (seed %llu); the last steps:\n%s",
                   absl::FormatDuration(stuck).c_str(),
                   static_cast<unsigned long long>(options_.seed), Trace().c_str());
      std::abort();
    }
  }
  released_ = true;  // adopted threads go on freely (a database close stops them)
  cv_.notify_all();
  lock.unlock();
  for (std::thread& t : threads) t.join();
}

}  // namespace journalkv::testing
