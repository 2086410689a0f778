// jkv: the journalkv command-line tool. `jkv --help` documents it; commands.h implements it.
#include <iostream>
#include <string>
#include <vector>

#include "tools/commands.h"

int main(int argc, char** argv) {
  // The streams are flushed explicitly (after every shell answer); unsynced they are faster.
  std::ios::sync_with_stdio(false);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const journalkv::tools::CommandIo io{&std::cin, &std::cout, &std::cerr};
  return static_cast<int>(journalkv::tools::RunJkv(args, io));
}
