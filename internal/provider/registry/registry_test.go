package registry_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/notice"
	"scan/internal/pgtest"
	"scan/internal/provider/registry"
	"scan/internal/receive"
	"scan/internal/reconcile"
	"scan/internal/send"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

// A provider added as its package and one registry line is served by
// `scan receive` (its webhook verified, its events applied and committed
// before the answer) and read by `scan reconcile --format` (Apply), with
// no change to receive, reconcile or any other provider: two claims in
// quarantine, sent through its sender, are settled sent by a delivered
// event posted to its webhook and failed by a bounce in a file of its
// events; an unsigned post and a wrongly signed one change nothing.
func TestAddedProvider(t *testing.T) {
	registry.Register(registry.Provider{Name: fakemailName, Decode: fakemailDecode, Webhook: fakemailWebhook, WebhookVars: fakemailSecretVar})

	db := pgtest.New(t)
	ledgertest.Crashed(t, db, 2, t0)
	var sender fakemailSender
	ids := make([]string, 3)
	for i := 1; i <= 2; i++ {
		r, err := sender.Send(context.Background(), &send.Message{Notice: notice.Notice{Key: ledgertest.Key(i)}})
		if err != nil || r.ProviderID == "" {
			t.Fatalf("send %d: %+v, %v", i, r, err)
		}
		ids[i] = r.ProviderID
	}

	const secret = "fakemail-secret"
	eps, err := registry.Endpoints(func(k string) string { return map[string]string{fakemailSecretVar: secret}[k] })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := receive.New(receive.Config{DB: db, Log: zerolog.New(zerolog.NewTestWriter(t)), Endpoints: eps,
		Now: func() time.Time { return t0.Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Configured(); len(got) != 1 || got[0] != string(fakemailName) {
		t.Errorf("configured %v, want only fakemail", got)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	post := func(body []byte, sig string) int {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/events/fakemail", bytes.NewReader(body))
		if sig != "" {
			req.Header.Set(fakemailSignatureHeader, sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	delivered := fakemailPayload("delivered", ids[1], ledgertest.Key(1), t0.Add(time.Minute))
	if got := post(delivered, ""); got != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", got)
	}
	if got := post(delivered, hex.EncodeToString(fakemailSign("other", delivered))); got != http.StatusForbidden {
		t.Errorf("wrongly signed: %d, want 403", got)
	}
	if got := states(t, db); got != "claimed claimed" {
		t.Fatalf("after refused posts: %s", got)
	}
	if got := post(delivered, hex.EncodeToString(fakemailSign(secret, delivered))); got != http.StatusOK {
		t.Errorf("signed: %d, want 200", got)
	}

	bounced := fakemailPayload("bounced", ids[2], ledgertest.Key(2), t0.Add(time.Minute))
	file := string(bounced) + "\n" + string(fakemailPayload("opened", ids[2], ledgertest.Key(2), t0)) + "\n"
	res, err := reconcile.Apply(context.Background(), db, strings.NewReader(file), reconcile.Options{Format: string(fakemailName), By: "test",
		Now: func() time.Time { return t0.Add(time.Hour) }}, nil)
	if err != nil || res.Payloads != 2 || res.Irrelevant != 1 || res.Settled != 1 {
		t.Fatalf("apply: %+v, %v", res, err)
	}
	if got := states(t, db); got != "sent failed" {
		t.Errorf("states %s, want sent failed", got)
	}
}

// states is the state of claims 1 and 2, space-separated.
func states(t *testing.T, db sqlx.QueryerContext) string {
	t.Helper()
	var out []string
	for i := 1; i <= 2; i++ {
		r, err := ledger.Get(context.Background(), db, ledgertest.Key(i))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(r.State))
	}
	return strings.Join(out, " ")
}
