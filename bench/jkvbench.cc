// jkvbench: the journaling-mode comparison benchmark (README, "Benchmarks"). See --help, and
// bench_config.h (flags), workloads.h (what is measured and how), report.h (output fields),
// run.h (running the cases), reproduce.h (--reproduce: the founding experiments' report).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/bench_config.h"
#include "bench/reproduce.h"
#include "bench/run.h"

int main(int argc, char** argv) {
  // Under `bazel run`, resolve --out and --dir against the directory the user ran it from.
  if (const char* wd = std::getenv("BUILD_WORKING_DIRECTORY"); wd != nullptr) {
    if (chdir(wd) != 0) std::perror("jkvbench: chdir to BUILD_WORKING_DIRECTORY");
  }
  const std::vector<std::string> args(argv + 1, argv + argc);
  absl::StatusOr<journalkv::bench::BenchConfig> config = journalkv::bench::ParseFlags(args);
  if (!config.ok()) {
    std::fprintf(stderr, "jkvbench: %s (see --help)\n",
                 std::string(config.status().message()).c_str());
    return journalkv::bench::kExitUsage;
  }
  if (config->help) {
    std::fputs(journalkv::bench::HelpText().c_str(), stdout);
    return 0;
  }
  if (!config->reproduce.empty()) return journalkv::bench::Reproduce(*config, args);
  return journalkv::bench::Run(*config, args);
}
