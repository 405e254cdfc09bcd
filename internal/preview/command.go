package preview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"scan/internal/policy"
)

// Print is `scan preview --subscription ID`'s output: for each preview
// of subscription id (each kind asked, or due at now), what a pass at now
// would do with the notice (Status) on stderr and the message it would be
// (Write); with none, a note on stderr naming the policy's kinds.
func Print(stdout, stderr io.Writer, pol *policy.Policy, id string, previews []Preview, now time.Time) error {
	if len(previews) == 0 {
		fmt.Fprintf(stderr, "scan: no notice is due now for subscription %q; name a kind with --kind (%s) to see what it would say\n", id, KindNames(pol))
		return nil
	}
	for i, p := range previews {
		fmt.Fprintf(stderr, "scan: %s: %s\n", p.Kind, Status(p, now))
		if err := Write(stdout, stderr, pol, p, i > 0); err != nil {
			return err
		}
	}
	return nil
}

// KindNames lists the policy's kinds, comma-separated, for a message.
func KindNames(pol *policy.Policy) string {
	names := make([]string, len(pol.Notices))
	for i, k := range pol.Notices {
		names[i] = k.Kind
	}
	return strings.Join(names, ", ")
}

// orDefaults fills what s leaves empty: every kind of the policy, its
// default locale.
func (s Samples) orDefaults(pol *policy.Policy) Samples {
	if len(s.Kinds) == 0 {
		s.Kinds = strings.Split(KindNames(pol), ", ")
	}
	if len(s.Locales) == 0 {
		s.Locales = []string{pol.DefaultLocale}
	}
	return s
}
