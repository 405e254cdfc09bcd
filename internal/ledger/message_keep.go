//go:build !noproof

package ledger

// keepMessages says whether RecordOutcomes keeps each outcome's message
// (proof of notice). Always, except in a binary built with -tags noproof,
// which only tools/bench builds: the first pass without the storage, to
// measure what it costs.
const keepMessages = true
