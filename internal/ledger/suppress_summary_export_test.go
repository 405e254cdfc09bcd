package ledger

// ClearBits empties the summary's copy without moving its snapshot: the
// state of a summary that never saw the entries already listed, for the
// tests that show a miss is not probed.
func (s *SuppressionSummary) ClearBits() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.bits)
}
