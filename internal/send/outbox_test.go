package send_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"scan/internal/send"
)

func TestOutbox(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "outbox")
	o, err := send.NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !o.Sync {
		t.Error("Sync is off by default")
	}
	r := newRenderer(t)
	m := render(t, r, notice(1, "example.org"))
	rcpt, err := o.Send(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	name := m.Notice.Key + ".eml"
	if rcpt.ProviderID != "outbox:"+name {
		t.Errorf("ProviderID = %q", rcpt.ProviderID)
	}
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || !bytes.Equal(got, m.Raw) {
		t.Fatalf("file = %d bytes (%v), want the %d bytes of Raw", len(got), err, len(m.Raw))
	}

	// A second send of the same key replaces the file, atomically.
	m2 := *m
	m2.Raw = append([]byte(nil), m.Raw...)
	m2.Raw = append(m2.Raw, "again\r\n"...)
	if _, err := o.Send(t.Context(), &m2); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(got, m2.Raw) {
		t.Error("second send did not replace the file")
	}

	// Concurrent sends of distinct keys.
	o.Sync = false
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := o.Send(context.Background(), render(t, r, notice(100+i, "example.org"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".eml" {
			t.Errorf("left behind %s", e.Name())
		}
	}
	if len(entries) != 21 {
		t.Errorf("%d files, want 21", len(entries))
	}
}

func TestOutboxFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o, err := send.NewOutbox(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := render(t, newRenderer(t), notice(1, "example.org"))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := o.Send(ctx, m); send.Classify(err) != send.Transient {
		t.Errorf("cancelled: %v", err)
	}

	bad := *m
	bad.Notice.Key = "../../etc/passwd"
	if _, err := o.Send(t.Context(), &bad); send.Classify(err) != send.Permanent {
		t.Errorf("path key: %v", err)
	}

	// The directory disappears: nothing written, Transient.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Send(t.Context(), m); send.Classify(err) != send.Transient {
		t.Errorf("missing dir: %v", err)
	}
	if _, err := send.NewOutbox(""); err == nil {
		t.Error("NewOutbox(\"\") succeeded")
	}
}

// BenchmarkOutboxSend writes one rendered message a op, Sync on, into a
// directory under $TMPDIR (TMPDIR=/dev/shm for tmpfs).
func BenchmarkOutboxSend(b *testing.B) {
	o, err := send.NewOutbox(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer o.Close()
	m := render(b, newRenderer(b), notice(1, "example.org"))
	b.SetBytes(int64(len(m.Raw)))
	b.ReportAllocs()
	defer reportCPU(b)()
	i := 0
	for b.Loop() {
		i++
		m.Notice.Key = key(strconv.Itoa(i)) // a new file each time, as in a pass
		if _, err := o.Send(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
}
