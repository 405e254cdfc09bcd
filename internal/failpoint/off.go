//go:build !failpoint

// Package failpoint crashes the process at a pass's boundaries, for the
// crash tests: only in a binary built with -tags failpoint, where
// SCAN_FAILPOINT names the boundary (on.go). In every other build its
// hooks are empty.
package failpoint

import "scan/internal/scan"

// Hooks is empty in normal builds; see on.go.
func Hooks() scan.Hooks { return scan.Hooks{} }
