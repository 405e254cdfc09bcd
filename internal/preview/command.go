package preview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"scan/internal/policy"
	"scan/internal/scan"
)

// Of is `scan preview --subscription ID`: for each kind asked (every
// kind due at now when none is), it writes on stderr what a pass at now
// would do with the notice (Status) and the message it would be (Write).
// source names the relation pass reads, for the error when it holds no
// such subscription. It reads and writes nothing else.
func Of(ctx context.Context, stdout, stderr io.Writer, pass *scan.Pass, pol *policy.Policy, source, id string, kinds []string, now time.Time) error {
	previews, err := pass.Preview(ctx, id, kinds)
	if errors.Is(err, scan.ErrNoSubscription) {
		return fmt.Errorf("preview: no subscription %q in %s", id, source)
	}
	if err != nil {
		return err
	}
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
