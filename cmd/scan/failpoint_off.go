//go:build !failpoint

package main

import "scan/internal/scan"

// failpointHooks is empty in normal builds; see failpoint_on.go.
func failpointHooks() scan.Hooks { return scan.Hooks{} }
