// Package memory sets the Go runtime's soft memory limit from the
// container's (SetLimit), which main does before anything allocates.
package memory

import (
	"github.com/KimMachineGun/automemlimit/memlimit"
)

// binaryReserve is what a container's memory limit keeps outside the Go
// runtime's soft limit: the pages of the scan binary itself, which the
// kernel charges to the container but GOMEMLIMIT does not count (17-19
// MiB as the image ships, measured by `bench -only latency-api`), and a
// few MiB of margin.
const binaryReserve = 24 << 20

// SetLimit sets the Go runtime's soft memory limit from the
// container's cgroup memory limit (v1 or v2), less binaryReserve but never
// under half the limit, unless GOMEMLIMIT is set (it wins) or
// AUTOMEMLIMIT=off. Near that limit the collector works harder instead of
// the kernel killing the pass between a claim and its outcome, which
// would leave claims in quarantine. Without a container limit it changes
// nothing. It returns the limit in force.
func SetLimit() (int64, error) {
	return memlimit.Set(memlimit.WithRatio(1), memlimit.WithProvider(lessReserve(memlimit.FromCgroup)))
}

// lessReserve returns the limit p reports less binaryReserve, and at least
// half of it.
func lessReserve(p memlimit.Provider) memlimit.Provider {
	return func() (uint64, error) {
		limit, err := p()
		if err != nil {
			return 0, err
		}
		if limit/2 > binaryReserve {
			return limit - binaryReserve, nil
		}
		return limit - limit/2, nil
	}
}
