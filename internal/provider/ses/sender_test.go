package ses_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"scan/internal/message"
	"scan/internal/message/messagetest"
	"scan/internal/provider/ses"
	"scan/internal/send"
)

// sesRequest is what the stand-in SES endpoint read from one SendEmail.
type sesRequest struct {
	Path, Auth, Date string
	Body             struct {
		FromEmailAddress     string
		ConfigurationSetName string
		Destination          struct{ ToAddresses []string }
		Content              struct{ Raw struct{ Data []byte } }
		EmailTags            []struct{ Name, Value string }
	}
}

// fakeSES stands in for the SES v2 endpoint: it records each request and
// answers with handler.
type fakeSES struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []sesRequest
	n    atomic.Int32
	// keepBody, when set before the first request, receives the last
	// request's body.
	keepBody *[]byte
}

func newFakeSES(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *fakeSES {
	t.Helper()
	f := &fakeSES{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req sesRequest
		req.Path, req.Auth, req.Date = r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Amz-Date")
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &req.Body); err != nil {
			t.Errorf("request body is not SendEmail JSON: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		if f.keepBody != nil {
			*f.keepBody = b
		}
		f.mu.Unlock()
		f.n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSES) requests() []sesRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sesRequest(nil), f.reqs...)
}

func newSES(t *testing.T, endpoint string, timeout time.Duration) *ses.Sender {
	t.Helper()
	s, err := ses.NewSender(ses.SenderConfig{
		AWS: aws.Config{
			Region:       "eu-west-1",
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""),
			BaseEndpoint: aws.String(endpoint),
		},
		ConfigurationSet: "notices",
		Timeout:          timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sesError(status int, code, msg string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message":` + string(must(json.Marshal(msg))) + `}`))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Accepted: the request is signed (SigV4), carries our raw message byte
// for byte, the notice key as a tag and the configuration set; SES's
// MessageId becomes the ProviderID.
func TestSESAccepted(t *testing.T) {
	t.Parallel()
	f := newFakeSES(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"MessageId":"010001abc-def-000000"}`))
	})
	s := newSES(t, f.srv.URL, 10*time.Second)
	m := render(t, newRenderer(t), notice(1, "example.org"))
	rcpt, err := s.Send(t.Context(), m)
	if err != nil {
		t.Fatal(err)
	}
	if rcpt.ProviderID != "010001abc-def-000000" {
		t.Errorf("ProviderID = %q", rcpt.ProviderID)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v2/email/outbound-emails" {
		t.Errorf("path %q", r.Path)
	}
	if !strings.HasPrefix(r.Auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(r.Auth, "/eu-west-1/ses/aws4_request") ||
		!strings.Contains(r.Auth, "SignedHeaders=") || !strings.Contains(r.Auth, "Signature=") || r.Date == "" {
		t.Errorf("not signed with SigV4: Authorization %q, X-Amz-Date %q", r.Auth, r.Date)
	}
	if !bytes.Equal(r.Body.Content.Raw.Data, m.Raw) {
		t.Errorf("raw message differs from ours:\n%s", r.Body.Content.Raw.Data)
	}
	if len(r.Body.EmailTags) != 2 || r.Body.EmailTags[0].Name != "notice_key" || r.Body.EmailTags[0].Value != m.Notice.Key ||
		r.Body.EmailTags[1].Name != "notice_attempt" || r.Body.EmailTags[1].Value != "1" {
		t.Errorf("tags %+v", r.Body.EmailTags)
	}
	if r.Body.ConfigurationSetName != "notices" || r.Body.FromEmailAddress != "notices@example.com" ||
		len(r.Body.Destination.ToAddresses) != 1 || r.Body.Destination.ToAddresses[0] != "user1@example.org" {
		t.Errorf("request %+v", r.Body)
	}
}

// Each answer maps to its class, the SDK never sends a request twice, and
// no error text carries the recipient's address.
func TestSESClassification(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request)
		class   send.Class
		misconf bool
	}{
		{"throttled", sesError(429, "TooManyRequestsException", "Too many requests"), send.Transient, false},
		{"quota", sesError(400, "LimitExceededException", "Daily message quota exceeded"), send.Transient, false},
		{"internal", sesError(500, "InternalServiceErrorException", "Internal error"), send.Transient, false},
		{"unavailable", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }, send.Transient, false},
		{"rejected", sesError(400, "MessageRejected", "Email address is not verified. The following identities failed the check in region EU-WEST-1: user1@example.org"), send.Permanent, false},
		{"invalid recipient", sesError(400, "BadRequestException", "Illegal address user1@example.org"), send.Permanent, false},
		{"mail from", sesError(400, "MailFromDomainNotVerifiedException", "not verified"), send.Permanent, false},
		{"other 4xx", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "nope", http.StatusRequestEntityTooLarge) }, send.Permanent, false},
		{"paused", sesError(400, "SendingPausedException", "sending paused"), send.Transient, true},
		{"bad credentials", sesError(403, "UnrecognizedClientException", "The security token included in the request is invalid."), send.Transient, true},
		{"unknown configuration set", sesError(404, "NotFoundException", "Configuration set notices does not exist."), send.Transient, true},
		{"accepted, unreadable answer", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"MessageId":`)) }, send.Unknown, false},
		{"connection dropped after the request", func(w http.ResponseWriter, _ *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
		}, send.Unknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeSES(t, tc.handler)
			s := newSES(t, f.srv.URL, 10*time.Second)
			_, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
			if got := send.Classify(err); got != tc.class {
				t.Fatalf("class %s, want %s: %v", got, tc.class, err)
			}
			if errors.Is(err, send.ErrMisconfigured) != tc.misconf {
				t.Errorf("misconfigured = %v, want %v: %v", !tc.misconf, tc.misconf, err)
			}
			if strings.Contains(err.Error(), "user1@example.org") {
				t.Errorf("error names the recipient: %v", err)
			}
			if n := f.n.Load(); n != 1 {
				t.Errorf("%d requests, want exactly 1 (the SDK must not retry)", n)
			}
		})
	}
}

// An answer that never comes after the request left is Unknown: the claim
// stays in quarantine, and the request was not sent again.
func TestSESNoAnswerIsUnknown(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f := newFakeSES(t, func(http.ResponseWriter, *http.Request) { <-release })
	t.Cleanup(func() { close(release) })
	s := newSES(t, f.srv.URL, 300*time.Millisecond) // the send's own bound, not an assertion
	_, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if send.Classify(err) != send.Unknown {
		t.Fatalf("class %s: %v", send.Classify(err), err)
	}
	if n := f.n.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// Nothing listening: nothing left, so it is Transient (unreachable).
func TestSESUnreachableIsTransient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newSES(t, "http://"+addr, 10*time.Second)
	_, err = s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org")))
	if send.Classify(err) != send.Transient || !errors.Is(err, send.ErrUnreachable) {
		t.Fatalf("class %s: %v", send.Classify(err), err)
	}
}

func TestNewSESNeedsARegion(t *testing.T) {
	t.Parallel()
	if _, err := ses.NewSender(ses.SenderConfig{}); err == nil {
		t.Fatal("no region accepted")
	}
}

// The request carries what SES needs and nothing the sender trims from the
// SDK's stack (unusedSESMiddleware): a SigV4 signature that verifies over
// the headers and body SES received, the SDK's User-Agent, a JSON body; no
// per-call invocation id or retry-attempt header, and no X-Amzn-Trace-Id
// even where the Lambda variables that would copy one are set.
//
// Not parallel: it sets the Lambda variables in the environment.
func TestSESRequestCarriesWhatSESNeeds(t *testing.T) {
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "scan")
	t.Setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793")
	var got *http.Request
	var body []byte
	var f *fakeSES
	f = newFakeSES(t, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		got = r.Clone(context.Background())
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"MessageId":"010001abc-def-000000"}`))
	})
	f.keepBody = &body
	s := newSES(t, f.srv.URL, 10*time.Second)
	if _, err := s.Send(t.Context(), render(t, newRenderer(t), notice(1, "example.org"))); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got == nil {
		t.Fatal("no request")
	}
	for _, h := range []string{"Amz-Sdk-Invocation-Id", "X-Amzn-Trace-Id", "Amz-Sdk-Request"} {
		if v := got.Header.Get(h); v != "" {
			t.Errorf("request carries %s: %q", h, v)
		}
	}
	if ua := got.Header.Get("User-Agent"); !strings.Contains(ua, "aws-sdk-go-v2/") {
		t.Errorf("User-Agent %q is not the SDK's", ua)
	}
	if ct := got.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if err := verifySigV4(got, body); err != nil {
		t.Error(err)
	}
}

// verifySigV4 signs again, with the test's credentials, the headers r says
// it signed, its body and its X-Amz-Date, and compares the signatures.
func verifySigV4(r *http.Request, body []byte) error {
	auth := r.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return fmt.Errorf("authorization %q has no SignedHeaders", auth)
	}
	signed, _, _ = strings.Cut(signed, ",")
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	again, err := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return err
	}
	for _, h := range strings.Split(signed, ";") {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds, err := staticCredentials().Retrieve(context.Background())
	if err != nil {
		return err
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "ses", "eu-west-1", at); err != nil {
		return err
	}
	if want := again.Header.Get("Authorization"); want != auth {
		return fmt.Errorf("signature does not verify:\n got  %s\n want %s", auth, want)
	}
	return nil
}

func notice(i int, domain string) send.Notice { return messagetest.Notice(i, domain) }

func newRenderer(t testing.TB) *message.Renderer { t.Helper(); return messagetest.NewRenderer(t) }

func render(t testing.TB, r *message.Renderer, n send.Notice) *send.Message {
	t.Helper()
	return messagetest.Render(t, r, n)
}

func staticCredentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")
}
