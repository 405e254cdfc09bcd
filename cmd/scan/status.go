package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"scan/internal/status"
)

// errNeedsPerson ends `scan status` with exit 1 when something needs a
// person, after the status was printed, so that it can serve as a probe.
var errNeedsPerson = errors.New("status: needs a person")

// cmdStatus prints the ledger's status (internal/status): read-only.
func cmdStatus(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "status", "[-o table|json]")
	var output string
	fs.StringVar(&output, "o", "table", "output: table (for a person) or json")
	fs.StringVar(&output, "output", "table", "output: table (for a person) or json")
	if err := parseNoArgs(fs, args, ""); err != nil {
		return err
	}
	if output != "table" && output != "json" {
		return usagef("-o", "%q: use table or json", output)
	}
	db, err := openDB(ctx, e)
	if err != nil {
		return err
	}
	defer db.Close()
	s, err := status.Report(ctx, db, e.clockNow(), status.Options{})
	if err != nil {
		return err
	}
	if output == "json" {
		err = json.NewEncoder(e.stdout).Encode(s)
	} else {
		err = status.WriteTable(e.stdout, s)
	}
	if err != nil || len(s.Problems) == 0 {
		return err
	}
	return errors.Join(errNeedsPerson, errors.New(strings.Join(s.Problems, "; ")))
}
