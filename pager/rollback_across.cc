// PLACEHOLDER while the rollback family's protocol is built: each participant in turn.
#include "pager/across.h"

namespace journalkv::pager {

absl::Status AcrossCommit::Rollback(absl::Span<WriteTxn* const> txns) { return EachInTurn(txns); }

}  // namespace journalkv::pager
