//go:build noproof

package ledger

// keepMessages is false in a binary built with -tags noproof: the bench's
// baseline without proof of notice (message_keep.go). Never shipped.
const keepMessages = false
