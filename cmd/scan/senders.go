package main

import (
	"fmt"
	"slices"
	"strings"

	"scan/internal/provider/registry"
)

// senderList reads SCAN_SENDER (--sender): one sender's name, or an
// ordered list of them, comma-separated ("ses,smtp"), that the pass fails
// over along (send.Failover, issue 36). Each name is one of senders and
// appears once. In a list, a sender that is itself an email provider
// (ses) must be the policy's provider: the renderer writes that
// provider's correlation headers into every message, whichever sender
// takes it, so the events of a sender needing another provider's would
// not name their notice. A single name is taken as it always was.
func senderList(raw, policyProvider string) ([]string, error) {
	names := strings.Split(raw, ",")
	for i, name := range names {
		name = strings.TrimSpace(name)
		names[i] = name
		switch {
		case !slices.Contains(senders, name):
			return nil, fmt.Errorf("%q is not one of %s", name, strings.Join(senders, ", "))
		case slices.Index(names, name) < i:
			return nil, fmt.Errorf("%q is listed twice in %q", name, raw)
		}
	}
	if len(names) == 1 {
		return names, nil
	}
	for _, name := range names {
		if p, ok := registry.Lookup(name); ok && p.Correlation != nil && name != policyProvider {
			return nil, fmt.Errorf("%s in the list %q needs its own correlation headers, but the policy's provider is %q: set provider: %s, or leave %s out of the list",
				name, raw, policyProvider, name, name)
		}
	}
	return names, nil
}
