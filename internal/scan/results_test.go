package scan_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"scan/internal/scan"
)

// Every count of the JSON summary but the run's duration, the quarantine
// and invalid_address_waiting (gauges of their own) is a result, in the summary's order,
// and each result reads its own field.
func TestResultsCoverSummary(t *testing.T) {
	t.Parallel()
	var want []string
	st := reflect.TypeOf(scan.Summary{})
	for i := range st.NumField() {
		f := st.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Int || name == "-" || name == "duration_ms" || name == "quarantine" || name == "invalid_address_waiting" {
			continue
		}
		want = append(want, name)
	}
	if got := scan.ResultNames(); !slices.Equal(got, want) {
		t.Fatalf("scan.Results = %v\nSummary's counts = %v", got, want)
	}
	// Give each field a distinct value through the JSON names, and read
	// it back through Counts.
	in := map[string]int{}
	for i, n := range want {
		in[n] = i + 1
	}
	b, _ := json.Marshal(in)
	var s scan.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Counts(); !reflect.DeepEqual(got, in) {
		t.Fatalf("Counts() = %v, want %v", got, in)
	}
}

// The row of scan_pass_notices in docs/operations.md (Metrics) lists the results, in order.
func TestReadmeListsResults(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "| `scan_pass_notices{result}` | " + strings.Join(scan.ResultNames(), ", ") + " |"
	if !strings.Contains(string(readme), want) {
		t.Fatalf("docs/operations.md has no row %q", want)
	}
}
