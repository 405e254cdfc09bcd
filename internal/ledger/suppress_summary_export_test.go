package ledger

// ClearBits empties the summary's copy and moves its snapshot to since
// (an xid8): the state of a summary that never saw the entries already
// listed, for the tests that show a miss is not probed. Without moving
// it, a refresh re-reads every chunk written since the last read's xmin,
// which another session's open transaction (a parallel test's) can hold
// back before the entries were written.
func (s *SuppressionSummary) ClearBits(since string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.bits)
	s.since = since
}
