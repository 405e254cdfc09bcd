package scan

// Result is one per-notice tally of a pass: Name is its key in the JSON
// summary and its value of the result label of the scan_pass_notices
// metric; Of reads it from a Summary.
type Result struct {
	Name string
	Of   func(Summary) int
}

// Results are the pass's per-notice tallies, in the order of its JSON
// summary. The metric's label values and help text and the counts it is
// set from are derived from this list (ResultNames, Summary.Counts): a new
// tally is a Summary field and its line here, and a test fails when a
// Summary count is missing from the list.
var Results = []Result{
	{"eligible", func(s Summary) int { return s.Eligible }},
	{"invalid", func(s Summary) int { return s.Invalid }},
	{"minted", func(s Summary) int { return s.Minted }},
	{"retried", func(s Summary) int { return s.Retried }},
	{"suppressed", func(s Summary) int { return s.Suppressed }},
	{"sent", func(s Summary) int { return s.Sent }},
	{"retry", func(s Summary) int { return s.Retry }},
	{"failed", func(s Summary) int { return s.Failed }},
	{"ambiguous", func(s Summary) int { return s.Ambiguous }},
	{"missed", func(s Summary) int { return s.Missed }},
	{"cancelled", func(s Summary) int { return s.Cancelled }},
	{"suppressed_address", func(s Summary) int { return s.SuppressedAddress }},
	{"no_usable_address", func(s Summary) int { return s.NoUsableAddress }},
	{"sms", func(s Summary) int { return s.SMS }},
	{"witnessed", func(s Summary) int { return s.Witnessed }},
	{"deferred", func(s Summary) int { return s.Deferred }},
	{"deferred_quiet_hours", func(s Summary) int { return s.DeferredQuietHours }},
	{"fallback", func(s Summary) int { return s.Fallback }},
	{"failover", func(s Summary) int { return s.Failover }},
}

// ResultNames returns the names of Results, in order.
func ResultNames() []string {
	names := make([]string, len(Results))
	for i, r := range Results {
		names[i] = r.Name
	}
	return names
}

// Counts returns s's per-notice tallies by result name (every name of
// Results, zeros included).
func (s Summary) Counts() map[string]int {
	out := make(map[string]int, len(Results))
	for _, r := range Results {
		out[r.Name] = r.Of(s)
	}
	return out
}
