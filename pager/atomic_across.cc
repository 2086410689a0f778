// PLACEHOLDER while the atomic family's protocol is built: each participant in turn.
#include "pager/across.h"

namespace journalkv::pager {

absl::Status AcrossCommit::Atomic(absl::Span<WriteTxn* const> txns) { return EachInTurn(txns); }

}  // namespace journalkv::pager
