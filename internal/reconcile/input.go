package reconcile

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"scan/internal/provider"
	"scan/internal/usage"
)

// FieldError is an operator's input that a use case of this package
// refuses before it reads or writes anything: Field names the flag,
// argument or setting to fix. `scan` maps it to exit 2.
type FieldError = usage.Error

// Validate checks r as `scan recover`'s command line gave it, without
// I/O: Events or Ask name the provider's record (one of them), in Format,
// since Since (required); or NoneLost with Reason and By alone. A
// recovery from a record with no By is recorded as by "recover".
func (r *Recovery) Validate() error {
	if r.NoneLost {
		switch {
		case r.Events != "" || r.Ask != "":
			return usage.Errorf("--none-lost", "takes no --events or --ask: it records that nothing was lost")
		case strings.TrimSpace(r.Reason) == "":
			return usage.Errorf("--reason", "required with --none-lost")
		case strings.TrimSpace(r.By) == "":
			return usage.Errorf("--by", "required with --none-lost when $USER is not set")
		}
		return nil
	}
	switch {
	case r.Since.IsZero():
		return usage.Errorf("--since", "required: the restore point, or the last pass the ledger knows of")
	case (r.Events == "") == (r.Ask == ""):
		return usage.Errorf("--events", "give the provider's record with --events FILE|- or --ask PROVIDER (one of them)")
	case !slices.Contains(Formats, r.Format):
		return usage.Errorf("--format", "%q is not one of %s", r.Format, strings.Join(Formats, ", "))
	}
	if r.By == "" {
		r.By = "recover"
	}
	return nil
}

// Sources is where one `scan reconcile` takes its evidence from: exactly
// one of Events (a file, - for stdin), SQS (a queue's URL) and Ask (a
// provider's API).
type Sources struct {
	Events, SQS, Ask string
	// Format is the events' format; FormatSet says the operator gave it
	// (with SQS the default is SES's, else jsonl).
	Format    string
	FormatSet bool
	// Budget is how long SQS is received from; BudgetFlag is the flag
	// the operator typed it with, "" when not given.
	Budget       time.Duration
	BudgetFlag   string
	OlderThanSet bool // --older-than given (it filters Ask's claims)
}

// Validate refuses a command line that names more than one source, or
// none, a flag of one source with another, or a format the source cannot
// carry; it sets Format to SES's for SQS when none was given.
func (s *Sources) Validate() error {
	n := 0
	for _, v := range []string{s.Events, s.SQS, s.Ask} {
		if v != "" {
			n++
		}
	}
	budget := cmp.Or(s.BudgetFlag, "--receive-for")
	switch {
	case n > 1:
		return usage.Errorf("--events", "give one of --events, --sqs and --ask")
	case s.BudgetFlag != "" && s.SQS == "":
		return usage.Errorf(budget, "only with --sqs")
	case s.OlderThanSet && s.Ask == "":
		return usage.Errorf("--older-than", "only with --ask")
	case s.Budget < 0:
		return usage.Errorf(budget, "must not be negative")
	case s.SQS != "":
		return s.sqsFormat()
	case s.Ask != "":
		return nil
	case s.Events == "":
		return usage.Errorf("--events", "required: a file of events, or - for stdin (or --sqs QUEUE_URL, or --ask PROVIDER)")
	case !slices.Contains(Formats, s.Format):
		return usage.Errorf("--format", "%q is not one of %s", s.Format, strings.Join(Formats, ", "))
	}
	return nil
}

// sqsFormat checks Format for a queue: SES's by default, else any
// provider's payload (a queue carries no jsonl).
func (s *Sources) sqsFormat() error {
	if !s.FormatSet {
		s.Format = string(provider.SES)
	}
	if !slices.Contains(Formats, s.Format) || s.Format == FormatJSONL {
		return usage.Errorf("--format", "%q: with --sqs, one of %s (default %s)", s.Format, strings.Join(provider.Strings(provider.Email...), ", "), provider.SES)
	}
	return nil
}
