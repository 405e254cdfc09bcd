package scan

import (
	"context"

	"scan/internal/notice"
)

// CountDue returns how many notices a pass started now would try to send:
// the open, unclaimed notices of every window group, plus the retry rows it
// may re-claim. It is one count(*) per group with the predicates of the
// pass's own queries (so it reads the same index ranges once, without
// fetching rows), and an estimate only in that rows may change while the
// pass runs and invalid rows are included. It exists to give a progress bar
// its total; it writes nothing.
func (p *Pass) CountDue(ctx context.Context) (int, error) {
	return p.src.Pending(ctx, p.db, p.sels[notice.ChannelEmail])
}
