// The texts jkv prints for --help and for a call without arguments (commands.cc). The help
// text is the user-facing specification of the tool: keep it in step with the code.
//
// Thread-safety: constant data.
#ifndef JOURNALKV_TOOLS_HELP_H_
#define JOURNALKV_TOOLS_HELP_H_

#include "absl/strings/string_view.h"

namespace journalkv::tools {

// The full manual (jkv --help, on stdout).
absl::string_view HelpText();

// Two usage lines (on stderr when jkv is called without arguments).
absl::string_view UsageText();

}  // namespace journalkv::tools

#endif  // JOURNALKV_TOOLS_HELP_H_
