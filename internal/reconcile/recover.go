package reconcile

import (
	"io"

	"scan/internal/ledger"
)

// ReadClassified reads the events in r as Apply does (ReadFormat, in any
// of Formats), completes each with its kind and calls fn with it: what
// `scan recover --events` applies with ledger.Recover instead of
// ledger.Settle.
func ReadClassified(r io.Reader, format string, fn func(ledger.Settlement) error) (Stats, error) {
	return ReadFormat(r, format, func(s ledger.Settlement) error {
		classify(&s)
		return fn(s)
	})
}
