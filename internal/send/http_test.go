package send_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"scan/internal/send"
)

func TestHTTPClassification(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		body   string
		header string
		class  send.Class
		id     string
	}{
		{"200 with id", 200, `{"id":"prov-1"}`, "", 0, "prov-1"},
		{"201 numeric id", 201, `{"id":42}`, "", 0, "42"},
		{"202 header id", 202, `accepted`, "hdr-7", 0, "hdr-7"},
		{"204 nothing", 204, ``, "", 0, ""},
		{"429", 429, `slow down`, "", send.Transient, ""},
		{"503", 503, ``, "", send.Transient, ""},
		{"400", 400, `{"error":"bad user1@example.org"}`, "", send.Permanent, ""},
		{"404", 404, ``, "", send.Permanent, ""},
		{"422", 422, ``, "", send.Permanent, ""},
		{"500", 500, ``, "", send.Unknown, ""},
		{"502", 502, ``, "", send.Unknown, ""},
		{"504", 504, ``, "", send.Unknown, ""},
		{"302", 302, ``, "", send.Unknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := render(t, newRenderer(t), notice(1, "example.org"))
			var got send.HTTPRequest
			var hdr http.Header
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hdr = r.Header.Clone()
				if r.Method != http.MethodPost {
					t.Errorf("method %s", r.Method)
				}
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Error(err)
				}
				if tt.header != "" {
					w.Header().Set("X-Message-Id", tt.header)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			h, err := send.NewHTTP(send.HTTPConfig{URL: srv.URL, Client: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			rcpt, err := h.Send(t.Context(), m)
			if c := send.Classify(err); c != tt.class {
				t.Fatalf("Send error = %v (class %v), want class %v", err, c, tt.class)
			}
			if err != nil {
				var se *send.Error
				if errors.As(err, &se); se.Code != tt.status {
					t.Errorf("Code = %d, want %d", se.Code, tt.status)
				}
				if strings.Contains(err.Error(), m.Notice.To) {
					t.Errorf("error %q carries the recipient", err)
				}
			}
			if rcpt.ProviderID != tt.id {
				t.Errorf("ProviderID = %q, want %q", rcpt.ProviderID, tt.id)
			}
			if k := hdr.Get("Idempotency-Key"); k != m.Notice.Key {
				t.Errorf("Idempotency-Key = %q", k)
			}
			want := send.HTTPRequest{
				Key: m.Notice.Key, MessageID: m.MessageID, To: m.Notice.To, Subject: m.Subject,
				Text: m.Text, HTML: m.HTML, SubscriptionID: m.Notice.SubscriptionID, Kind: m.Notice.Kind,
				Attempt: 1, // Notice.Attempt 0 (unknown) is the first
			}
			if got != want {
				t.Errorf("body = %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestHTTPTransportFailures(t *testing.T) {
	t.Parallel()
	m := render(t, newRenderer(t), notice(1, "example.org"))

	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://user:s3cret@" + ln.Addr().String() + "/send"
		ln.Close()
		h, err := send.NewHTTP(send.HTTPConfig{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.Send(t.Context(), m)
		if send.Classify(err) != send.Transient {
			t.Fatalf("Send error = %v, want Transient", err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error %q leaks the password", err)
		}
	})

	t.Run("no response", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done() // hang until the client gives up
		}))
		defer srv.Close()
		h, err := send.NewHTTP(send.HTTPConfig{URL: srv.URL, Timeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Send(t.Context(), m); send.Classify(err) != send.Unknown {
			t.Fatalf("Send error = %v, want Unknown", err)
		}
	})

	t.Run("reset after request", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		h, err := send.NewHTTP(send.HTTPConfig{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Send(t.Context(), m); send.Classify(err) != send.Unknown {
			t.Fatalf("Send error = %v, want Unknown", err)
		}
	})
}

func TestNewHTTPErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []send.HTTPConfig{
		{},
		{URL: "ftp://example.com"},
		{URL: "/relative"},
		{URL: "https://example.com", Timeout: -1},
		{URL: "https://example.com", Pool: -1},
		{URL: "https://example.com", TLSConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the point of the test
	} {
		if _, err := send.NewHTTP(cfg); err == nil {
			t.Errorf("NewHTTP(%+v) succeeded", cfg)
		}
	}
}
