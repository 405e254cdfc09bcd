package receive_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/rs/zerolog"

	"scan/internal/ledger"
	"scan/internal/ledger/ledgertest"
	"scan/internal/pgtest"
	"scan/internal/provider/mailgun"
	"scan/internal/provider/registry"
	"scan/internal/receive"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

func key(i int) string { return ledgertest.Key(i) }

func msgID(i int) string { return ledgertest.MessageID(i) }

// setup returns a migrated ledger holding n claims (keys 1..n) in
// quarantine: a pass claimed them and died.
func setup(t *testing.T, n int) *sqlx.DB {
	t.Helper()
	db := pgtest.New(t)
	ledgertest.Crashed(t, db, n, t0)
	return db
}

// world is a receiver under test, over HTTP on loopback.
type world struct {
	t   *testing.T
	db  *sqlx.DB
	srv *receive.Server
	url string
	n   int
}

// endpoints returns every provider's endpoint, made from the settings
// given as name, value, ... (registry.Endpoints).
func endpoints(t *testing.T, settings ...string) []receive.Endpoint {
	t.Helper()
	env := map[string]string{}
	for i := 0; i+1 < len(settings); i += 2 {
		env[settings[i]] = settings[i+1]
	}
	eps, err := registry.Endpoints(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return eps
}

func newWorld(t *testing.T, n int, cfg receive.Config) *world {
	t.Helper()
	w := &world{t: t, db: setup(t, n), n: n}
	cfg.DB = w.db
	cfg.Log = zerolog.New(zerolog.NewTestWriter(t))
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0.Add(time.Hour) }
	}
	s, err := receive.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.srv = s
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	w.url = hs.URL
	return w
}

// post sends body to /events/provider with headers (name, value, ...)
// and returns the status and the answer's result.
func (w *world) post(provider string, body []byte, headers ...string) (int, string) {
	w.t.Helper()
	req, err := http.NewRequest(http.MethodPost, w.url+"/events/"+provider, bytes.NewReader(body))
	if err != nil {
		w.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Result string `json:"result"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &ans)
	return resp.StatusCode, ans.Result
}

// states returns the first letter of each claim's state, in key order:
// "cc" is two claims in quarantine, "sc" the first settled sent.
func (w *world) states() string {
	w.t.Helper()
	var b strings.Builder
	for i := 1; i <= w.n; i++ {
		r, err := ledger.Get(context.Background(), w.db, key(i))
		if err != nil {
			w.t.Fatal(err)
		}
		b.WriteString(string(r.State)[:1])
	}
	return b.String()
}

// evidence counts the provider events kept, all notices together.
func (w *world) evidence() int {
	w.t.Helper()
	var n int
	if err := w.db.Get(&n, `SELECT count(*) FROM notice_evidence`); err != nil {
		w.t.Fatal(err)
	}
	return n
}

// want checks a request's answer and the ledger after it.
func (w *world) want(what string, gotStatus int, gotResult string, status int, result, states string) {
	w.t.Helper()
	if gotStatus != status || gotResult != result {
		w.t.Errorf("%s: answered %d %q, want %d %q", what, gotStatus, gotResult, status, result)
	}
	if s := w.states(); s != states {
		w.t.Errorf("%s: states %s, want %s", what, s, states)
	}
}

func (w *world) counted(provider, result string, want float64) {
	w.t.Helper()
	if got := w.srv.Metrics().Value(provider, result); got != want {
		w.t.Errorf("scan_receive_requests_total{provider=%q,result=%q} = %v, want %v", provider, result, got, want)
	}
}

// Payloads, from the providers' documented examples (the same as
// internal/provider/<name>/testdata, whose README cites the pages), with our
// keys where the provider echoes them.

// postmarkDelivery is Postmark's Delivery webhook
// (https://postmarkapp.com/developer/webhooks/delivery-webhook).
func postmarkDelivery(i int) []byte {
	return fmt.Appendf(nil, `{"RecordType":"Delivery","ServerID":23,"MessageStream":"outbound","MessageID":"00000000-0000-0000-0000-%012d","Recipient":"john@example.com","Tag":"welcome-email","DeliveredAt":"2026-11-30T02:33:54.9070259Z","Details":"Test delivery webhook details","Metadata":{"a_key":"a_value","notice_key":%q}}`, i, key(i))
}

// sendgridBatch is a batch of SendGrid "delivered" events
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event).
func sendgridBatch(is ...int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for n, i := range is {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"email":"example@example.com","timestamp":1764468000,"smtp-id":"<%s>","event":"delivered","category":"cat facts","sg_event_id":"sg_event_id_%d","sg_message_id":"14c5d75ce93.dfd.64b469.filter0001.16648.5515E0B88.%d","response":"250 OK","notice_key":%q}`, msgID(i), i, i, key(i))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// mailgunDelivered is Mailgun's "delivered" webhook body
// (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-payloads),
// signed with signingKey at ts with token.
func mailgunDelivered(i int, signingKey string, ts int64, token string) []byte {
	mac := hmac.New(sha256.New, []byte(signingKey))
	fmt.Fprintf(mac, "%d%s", ts, token)
	return fmt.Appendf(nil, `{"signature":{"timestamp":"%d","token":%q,"signature":%q},"event-data":{"event":"delivered","timestamp":1764468000.908181,"id":"CPgfbmQMTCKtHW6uIWtuVe","log-level":"info","message":{"headers":{"to":"Alice <alice@example.com>","message-id":%q,"from":"Bob <bob@example.com>","subject":"Test delivered webhook"},"attachments":[],"size":111},"recipient":"alice@example.com","recipient-domain":"example.com","delivery-status":{"tls":true,"mx-host":"smtp-in.example.com","code":250,"description":"","attempt-no":1,"message":"OK","certificate-verified":true},"user-variables":{"notice_key":%q}}}`,
		ts, token, hex.EncodeToString(mac.Sum(nil)), msgID(i), key(i))
}

func TestPostmarkBasicAuth(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 2, receive.Config{Endpoints: endpoints(t, "POSTMARK_WEBHOOK_USER", "hook", "POSTMARK_WEBHOOK_PASSWORD", "s3cret-pass")})
	auth := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	st, res := w.post("postmark", postmarkDelivery(1))
	w.want("no credentials", st, res, 401, "unverified", "cc")
	st, res = w.post("postmark", postmarkDelivery(1), "Authorization", auth("hook", "wrong"))
	w.want("wrong password", st, res, 401, "refused", "cc")
	st, res = w.post("postmark", postmarkDelivery(1), "Authorization", auth("other", "s3cret-pass"))
	w.want("wrong user", st, res, 401, "refused", "cc")
	if n := w.evidence(); n != 0 {
		t.Fatalf("refused requests kept %d events", n)
	}
	st, res = w.post("postmark", postmarkDelivery(1), "Authorization", auth("hook", "s3cret-pass"))
	w.want("credentials", st, res, 200, "ok", "sc")
	st, res = w.post("postmark", postmarkDelivery(1), "Authorization", auth("hook", "s3cret-pass"))
	w.want("replay", st, res, 200, "duplicate", "sc")
	st, res = w.post("postmark", []byte(`{"RecordType":"Delivery",`), "Authorization", auth("hook", "s3cret-pass"))
	w.want("malformed", st, res, 400, "malformed", "sc")
	if n := w.evidence(); n != 1 {
		t.Fatalf("kept %d events, want 1", n)
	}
	w.counted("postmark", "ok", 1)
	w.counted("postmark", "duplicate", 1)
	w.counted("postmark", "unverified", 1)
	w.counted("postmark", "refused", 2)
	w.counted("postmark", "malformed", 1)
}

// SendGrid's own test vector: the key, timestamp, payload and signature of
// github.com/sendgrid/sendgrid-go helpers/eventwebhook/eventwebhook_test.go
// (the payload is the JSON of {"event":"test_event","category":
// "example_payload","message_id":"message_id"}, keys sorted as Go's
// encoding/json writes them). Its event proves nothing about a notice
// (irrelevant), so it is accepted and changes nothing.
const (
	sendgridVectorKey       = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	sendgridVectorTimestamp = "1588788367"
	sendgridVectorSignature = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
	sendgridVectorPayload   = `{"category":"example_payload","event":"test_event","message_id":"message_id"}`
)

func TestSendGridPublishedVector(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "SENDGRID_WEBHOOK_PUBLIC_KEY", sendgridVectorKey)})
	sig := []string{"X-Twilio-Email-Event-Webhook-Signature", sendgridVectorSignature, "X-Twilio-Email-Event-Webhook-Timestamp", sendgridVectorTimestamp}
	st, res := w.post("sendgrid", []byte(sendgridVectorPayload), sig...)
	w.want("the published vector", st, res, 200, "ok", "c")
	st, res = w.post("sendgrid", []byte(strings.Replace(sendgridVectorPayload, "test_event", "delivered", 1)), sig...)
	w.want("the vector's body altered", st, res, 403, "refused", "c")
	st, res = w.post("sendgrid", []byte(sendgridVectorPayload), sig[0], sig[1], sig[2], "1588788368")
	w.want("the vector's timestamp altered", st, res, 403, "refused", "c")
	st, res = w.post("sendgrid", []byte(sendgridVectorPayload))
	w.want("no signature", st, res, 401, "unverified", "c")
}

// sgSigner signs SendGrid requests with a key the test makes.
type sgSigner struct{ k *ecdsa.PrivateKey }

func newSGSigner(t *testing.T) sgSigner {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return sgSigner{k}
}

func (s sgSigner) public(t *testing.T) string {
	der, err := x509.MarshalPKIXPublicKey(&s.k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}

func (s sgSigner) headers(t *testing.T, ts string, body []byte) []string {
	h := sha256.Sum256(append([]byte(ts), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.k, h[:])
	if err != nil {
		t.Fatal(err)
	}
	return []string{"X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(sig), "X-Twilio-Email-Event-Webhook-Timestamp", ts}
}

func TestSendGridSignedBatch(t *testing.T) {
	t.Parallel()
	ours, theirs := newSGSigner(t), newSGSigner(t)
	w := newWorld(t, 3, receive.Config{Endpoints: endpoints(t, "SENDGRID_WEBHOOK_PUBLIC_KEY", ours.public(t))})
	body := sendgridBatch(1, 2)
	st, res := w.post("sendgrid", body, theirs.headers(t, "1764468000", body)...)
	w.want("signed with another key", st, res, 403, "refused", "ccc")
	altered := bytes.Replace(body, []byte(key(2)), []byte(key(3)), 1)
	st, res = w.post("sendgrid", altered, ours.headers(t, "1764468000", body)...)
	w.want("body altered after signing", st, res, 403, "refused", "ccc")
	if n := w.evidence(); n != 0 {
		t.Fatalf("refused requests kept %d events", n)
	}
	if rs, err := ledger.Receipts(context.Background(), w.db); err != nil || len(rs) != 0 {
		t.Fatalf("refused requests recorded receipts %+v, %v", rs, err)
	}
	st, res = w.post("sendgrid", body, ours.headers(t, "1764468000", body)...)
	w.want("signed batch", st, res, 200, "ok", "ssc")
	st, res = w.post("sendgrid", body, ours.headers(t, "1764468001", body)...)
	w.want("the batch again", st, res, 200, "duplicate", "ssc")
	// scan status's "last event the receiver committed": both requests
	// committed (the second a replay), 2 events each.
	if rs, err := ledger.Receipts(context.Background(), w.db); err != nil || len(rs) != 1 || rs[0].Provider != "sendgrid" || rs[0].Events != 4 {
		t.Fatalf("receipts %+v, %v", rs, err)
	}
	bad := []byte(`[{"event":"delivered",`)
	st, res = w.post("sendgrid", bad, ours.headers(t, "1764468000", bad)...)
	w.want("signed but malformed", st, res, 400, "malformed", "ssc")
}

func TestMailgunSignatureAndTokens(t *testing.T) {
	t.Parallel()
	const signing = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
	now := t0.Add(time.Hour)
	w := newWorld(t, 3, receive.Config{Endpoints: endpoints(t, "MAILGUN_WEBHOOK_SIGNING_KEY", signing), Now: func() time.Time { return now }})
	ts := now.Add(-time.Minute).Unix()
	tok := func(i int) string { return fmt.Sprintf("%050d", i) }

	st, res := w.post("mailgun", mailgunDelivered(1, "another-signing-key", ts, tok(1)))
	w.want("wrong key", st, res, 403, "refused", "ccc")
	old := now.Add(-mailgun.DefaultMaxAge - time.Minute).Unix()
	st, res = w.post("mailgun", mailgunDelivered(1, signing, old, tok(2)))
	w.want("signature older than the limit", st, res, 403, "refused", "ccc")
	st, res = w.post("mailgun", mailgunDelivered(1, signing, now.Add(10*time.Minute).Unix(), tok(3)))
	w.want("signature from the future", st, res, 403, "refused", "ccc")
	altered := bytes.Replace(mailgunDelivered(1, signing, ts, tok(4)), []byte(`"timestamp":"`), []byte(`"timestamp":"1`), 1)
	st, res = w.post("mailgun", altered)
	w.want("timestamp altered", st, res, 403, "refused", "ccc")
	st, res = w.post("mailgun", []byte(`{"event-data":{"event":"delivered"}}`))
	w.want("no signature", st, res, 401, "unverified", "ccc")

	// Within the age limit (8 hours old): Mailgun's last retry.
	st, res = w.post("mailgun", mailgunDelivered(1, signing, now.Add(-8*time.Hour).Unix(), tok(5)))
	w.want("signed 8 hours ago", st, res, 200, "ok", "scc")
	st, res = w.post("mailgun", mailgunDelivered(1, signing, now.Add(-8*time.Hour).Unix(), tok(5)))
	w.want("the same request again (a retry)", st, res, 200, "duplicate", "scc")
	// The same signature and token carrying another notice's event.
	st, res = w.post("mailgun", bytes.Replace(mailgunDelivered(1, signing, now.Add(-8*time.Hour).Unix(), tok(5)), []byte(key(1)), []byte(key(2)), 1))
	w.want("token reused on another body", st, res, 403, "refused", "scc")
	var tokens int
	if err := w.db.Get(&tokens, `SELECT count(*) FROM webhook_token`); err != nil || tokens != 1 {
		t.Fatalf("webhook_token holds %d tokens (%v), want 1", tokens, err)
	}
	if n := w.evidence(); n != 1 {
		t.Fatalf("kept %d events, want 1", n)
	}
}

// A token is recorded in the transaction of its events: a request that is
// not applied (malformed after verification) leaves no token, so the
// provider's corrected retry is not refused as a replay.
func TestMailgunTokenOnlyWithItsEvents(t *testing.T) {
	t.Parallel()
	const signing = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
	now := t0.Add(time.Hour)
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "MAILGUN_WEBHOOK_SIGNING_KEY", signing), Now: func() time.Time { return now }})
	body := mailgunDelivered(1, signing, now.Unix(), strings.Repeat("t", 50))
	broken := bytes.Replace(body, []byte(`"event-data":{"event":"delivered"`), []byte(`"event-data":{"event":["delivered"]`), 1)
	st, res := w.post("mailgun", broken)
	w.want("verified but unreadable", st, res, 400, "malformed", "c")
	st, res = w.post("mailgun", body)
	w.want("the same token, readable", st, res, 200, "ok", "s")
}

// Expired tokens are pruned as requests arrive: a token older than the
// age limit cannot be replayed anyway.
func TestMailgunTokensPruned(t *testing.T) {
	t.Parallel()
	const signing = "k"
	now := t0
	w := newWorld(t, 2, receive.Config{Endpoints: endpoints(t, "MAILGUN_WEBHOOK_SIGNING_KEY", signing), Now: func() time.Time { return now }})
	if st, res := w.post("mailgun", mailgunDelivered(1, signing, now.Unix(), "first")); st != 200 {
		t.Fatalf("first: %d %s", st, res)
	}
	now = now.Add(mailgun.DefaultMaxAge + time.Hour)
	if st, res := w.post("mailgun", mailgunDelivered(2, signing, now.Unix(), "second")); st != 200 {
		t.Fatalf("second: %d %s", st, res)
	}
	var tokens []string
	if err := w.db.Select(&tokens, `SELECT token FROM webhook_token`); err != nil || len(tokens) != 1 || tokens[0] != "second" {
		t.Fatalf("webhook_token holds %v (%v), want [second]", tokens, err)
	}
}

func TestUnconfiguredEndpointsAcceptNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "POSTMARK_WEBHOOK_USER", "u", "POSTMARK_WEBHOOK_PASSWORD", "p")})
	for _, p := range []string{"ses", "sendgrid", "mailgun"} {
		st, res := w.post(p, sendgridBatch(1))
		w.want(p+" without a secret", st, res, 403, "refused", "c")
	}
	if got := w.srv.Configured(); len(got) != 1 || got[0] != "postmark" {
		t.Errorf("Configured() = %v", got)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "POSTMARK_WEBHOOK_USER", "u", "POSTMARK_WEBHOOK_PASSWORD", "p")})
	big := bytes.Repeat([]byte(" "), 3<<20)
	st, res := w.post("postmark", big, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:p")))
	w.want("3 MiB", st, res, 413, "too_large", "c")
	st, res = w.post("postmark", postmarkDelivery(1), "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:p")))
	w.want("then a request", st, res, 200, "ok", "s")
}

func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	// A pool whose server refuses connections: nothing can be committed.
	down, err := sqlx.Open("postgres", "host=127.0.0.1 port=1 dbname=x sslmode=disable connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { down.Close() })
	s, err := receive.New(receive.Config{DB: down, Log: zerolog.Nop(), Endpoints: endpoints(t, "POSTMARK_WEBHOOK_USER", "u", "POSTMARK_WEBHOOK_PASSWORD", "p")})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/events/postmark", bytes.NewReader(postmarkDelivery(1)))
	req.SetBasicAuth("u", "p")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("database down: %d, want 503", resp.StatusCode)
	}
	resp, err = http.Get(hs.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with the database down: %d, want 503", resp.StatusCode)
	}
}

func TestHealthReadyMetrics(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "POSTMARK_WEBHOOK_USER", "u", "POSTMARK_WEBHOOK_PASSWORD", "p")})
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ok", "/metrics": `scan_receive_requests_total{provider="sendgrid",result="refused"} 0`} {
		resp, err := http.Get(w.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, resp.StatusCode, want)
		}
	}
	w.srv.Drain()
	resp, err := http.Get(w.url + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining: %d, want 503", resp.StatusCode)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	db := &sqlx.DB{}
	for _, c := range []struct {
		env   map[string]string
		field string
	}{
		{map[string]string{"SENDGRID_WEBHOOK_PUBLIC_KEY": "not base64!"}, "SENDGRID_WEBHOOK_PUBLIC_KEY"},
		{map[string]string{"SENDGRID_WEBHOOK_PUBLIC_KEY": base64.StdEncoding.EncodeToString([]byte("not der"))}, "SENDGRID_WEBHOOK_PUBLIC_KEY"},
		{map[string]string{"POSTMARK_WEBHOOK_USER": "u"}, "POSTMARK_WEBHOOK_USER, POSTMARK_WEBHOOK_PASSWORD"},
		{map[string]string{"SNS_TOPIC_ARNS": "topic"}, "SNS_TOPIC_ARNS"},
		{map[string]string{"SNS_TOPIC_ARNS": "arn:aws:sns:us-east-1:1:t", "SNS_CERT_HOSTS": "https://x/"}, "SNS_CERT_HOSTS"},
		{map[string]string{"TWILIO_AUTH_TOKEN": "t", "SCAN_TWILIO_STATUS_CALLBACK": "/events/twilio"}, "SCAN_TWILIO_STATUS_CALLBACK"},
	} {
		_, err := registry.Endpoints(func(k string) string { return c.env[k] })
		ce, ok := err.(*receive.ConfigError)
		if !ok || ce.Field != c.field {
			t.Errorf("%+v: %v, want a ConfigError of %s", c.env, err, c.field)
		}
	}
	if _, err := receive.New(receive.Config{DB: db, Endpoints: []receive.Endpoint{{Name: "x"}}}); err == nil {
		t.Error("an endpoint without a body limit was taken")
	}
}

// Two replicas share the replay tokens through PostgreSQL: the same
// Mailgun request posted to both at once is applied by one and answered
// duplicate by the other, and its event is kept once.
func TestMailgunTokenSharedByReplicas(t *testing.T) {
	t.Parallel()
	const signing = "key-shared"
	now := t0.Add(time.Hour)
	w := newWorld(t, 1, receive.Config{Endpoints: endpoints(t, "MAILGUN_WEBHOOK_SIGNING_KEY", signing), Now: func() time.Time { return now }})
	other, err := receive.New(receive.Config{DB: w.db, Log: zerolog.Nop(), Endpoints: endpoints(t, "MAILGUN_WEBHOOK_SIGNING_KEY", signing), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(other.Handler())
	defer hs.Close()
	replica := &world{t: t, db: w.db, srv: other, url: hs.URL, n: 1}
	body := mailgunDelivered(1, signing, now.Unix(), strings.Repeat("r", 50))
	results := make(chan string, 2)
	for _, r := range []*world{w, replica} {
		go func() {
			st, res := r.post("mailgun", body)
			results <- fmt.Sprint(st, " ", res)
		}()
	}
	got := []string{<-results, <-results}
	if !(got[0] == "200 ok" && got[1] == "200 duplicate" || got[0] == "200 duplicate" && got[1] == "200 ok") {
		t.Fatalf("the two replicas answered %v, want one 200 ok and one 200 duplicate", got)
	}
	if n := w.evidence(); n != 1 || w.states() != "s" {
		t.Fatalf("kept %d events, states %s; want 1, s", n, w.states())
	}
}
