// Package twiliotest is a stand-in for Twilio's Messages API on loopback,
// answering as the API reference documents (testdata/README.md cites the
// pages): a 201 Message resource for a good request, Twilio's error
// answers for the test credentials' magic numbers, 401 for wrong Basic
// auth. It records every request it accepted or refused.
package twiliotest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"scan/internal/message"
	"scan/internal/provider/twilio"
)

//go:embed testdata/message_created.json
var created []byte

// The stand-in's magic numbers (testdata/README.md).
const (
	Invalid       = "+15005550001" // 21211
	Unroutable    = "+15005550002" // 21612
	NoPermission  = "+15005550003" // 21408
	Unsubscribed  = "+15005550004" // 21610
	NotMobile     = "+15005550009" // 21614
	TooMany       = "+15005550429" // 429, 20429
	NeverAnswered = "+15005550999" // the request hangs until the client gives up
)

var errorsByTo = map[string]struct {
	status, code int
	msg          string
}{
	Invalid:      {400, 21211, "The 'To' number +15005550001 is not a valid phone number."},
	Unroutable:   {400, 21612, "The 'To' phone number: +15005550002, is not currently reachable using the 'From' phone number: +15005550006 via SMS."},
	NoPermission: {400, 21408, "Permission to send an SMS has not been enabled for the region indicated by the 'To' number: +15005550003."},
	Unsubscribed: {400, 21610, "Attempt to send to unsubscribed recipient"},
	NotMobile:    {400, 21614, "To number: +15005550009, is not a mobile number"},
	TooMany:      {429, 20429, "Too Many Requests"},
}

// Request is one request the stand-in received.
type Request struct {
	To, From, MessagingServiceSid, Body, StatusCallback string
	ValidityPeriod                                      string // as sent; "" when absent
	SID                                                 string // the Message sid answered; "" when refused
	Status                                              int
}

// Server is the stand-in. Its zero value is not usable; use New.
type Server struct {
	URL        string
	AccountSID string
	AuthToken  string
	srv        *httptest.Server
	hang       chan struct{}
	mu         sync.Mutex
	reqs       []Request
	n          int
	status     map[string][2]string // sid -> status, error code ("" for none)
	// PageSize is the list's page size (default 50, Twilio's own default).
	PageSize int
}

// New starts a stand-in for account sid and token, closed with the test.
func New(t testing.TB) *Server {
	s := &Server{AccountSID: "AC" + strings.Repeat("0", 31) + "1", AuthToken: "test-auth-token", hang: make(chan struct{}),
		status: map[string][2]string{}, PageSize: 50}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() { close(s.hang); s.srv.Close() })
	return s
}

// Requests returns what the stand-in received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// To counts the requests for one number.
func (s *Server) To(number string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.To == number {
			n++
		}
	}
	return n
}

// Config returns a twilio.Config for the stand-in.
func (s *Server) Config() twilio.Config {
	return twilio.Config{AccountSID: s.AccountSID, AuthToken: s.AuthToken, From: "+15005550006", BaseURL: s.URL}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	base := "/2010-04-01/Accounts/" + s.AccountSID + "/Messages"
	if u, p, ok := r.BasicAuth(); !ok || u != s.AccountSID || p != s.AuthToken {
		answerError(w, 401, 20003, "Authenticate")
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == base+".json":
		s.list(w, r)
		return
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, base+"/") && strings.HasSuffix(r.URL.Path, ".json"):
		s.fetch(w, strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, base+"/"), ".json"))
		return
	case r.Method != http.MethodPost || r.URL.Path != base+".json":
		answerError(w, 404, 20404, "The requested resource "+r.URL.Path+" was not found")
		return
	}
	if err := r.ParseForm(); err != nil {
		answerError(w, 400, 20001, "bad form")
		return
	}
	f := r.PostForm
	req := Request{To: f.Get("To"), From: f.Get("From"), MessagingServiceSid: f.Get("MessagingServiceSid"), Body: f.Get("Body"), StatusCallback: f.Get("StatusCallback"), ValidityPeriod: f.Get("ValidityPeriod")}
	if v := req.ValidityPeriod; v != "" {
		// "Set validity_period to an integer between 1 and 36,000"
		// (https://www.twilio.com/docs/api/errors/90007).
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 36000 {
			req.Status = 400
			s.record(req)
			answerError(w, 400, 21624, "Validity period can only be set to integers between 1 and 36,000 seconds (10 hours max).")
			return
		}
	}
	if req.To == NeverAnswered {
		// Twilio created the Message; the answer is what is lost.
		s.mu.Lock()
		s.n++
		req.SID = fmt.Sprintf("SM%032x", s.n)
		s.status[req.SID] = [2]string{"delivered", ""}
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	}
	if e, ok := errorsByTo[req.To]; ok {
		req.Status = e.status
		s.record(req)
		answerError(w, e.status, e.code, e.msg)
		return
	}
	if req.To == "" || req.Body == "" || (req.From == "" && req.MessagingServiceSid == "") {
		req.Status = 400
		s.record(req)
		answerError(w, 400, 21604, "A 'To' phone number, a 'From' or 'MessagingServiceSid' and a 'Body' are required.")
		return
	}
	s.mu.Lock()
	s.n++
	req.SID = fmt.Sprintf("SM%032x", s.n)
	req.Status = 201
	s.reqs = append(s.reqs, req)
	s.status[req.SID] = [2]string{"queued", ""}
	s.mu.Unlock()
	var m map[string]any
	_ = json.Unmarshal(created, &m)
	_, segs := message.SMSSegments(req.Body)
	m["sid"], m["to"], m["from"], m["body"], m["num_segments"], m["account_sid"] = req.SID, req.To, req.From, req.Body, fmt.Sprint(segs), s.AccountSID
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(m)
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

func answerError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg,
		"more_info": "https://www.twilio.com/docs/errors/" + fmt.Sprint(code), "status": status})
}

// Callback returns a status callback Twilio would post for req with
// status and code (0 for none), and its X-Twilio-Signature under the
// stand-in's token: the callback URL (req.StatusCallback, which carries
// the key and attempt) and the form.
func (s *Server) Callback(req Request, status string, code int) (fullURL string, form url.Values, signature string) {
	form = url.Values{"MessageSid": {req.SID}, "SmsSid": {req.SID}, "MessageStatus": {status}, "SmsStatus": {status},
		"AccountSid": {s.AccountSID}, "From": {req.From}, "To": {req.To}, "ApiVersion": {"2010-04-01"}}
	if code != 0 {
		form.Set("ErrorCode", fmt.Sprint(code))
	}
	return req.StatusCallback, form, twilio.Signature(s.AuthToken, req.StatusCallback, form)
}

// SetStatus sets the status (and error code, "" for none) a later read of
// Message sid answers.
func (s *Server) SetStatus(sid, status, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[sid] = [2]string{status, code}
}

// resource is the Message resource of req as reads answer it.
func (s *Server) resource(req Request) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(created, &m)
	st := s.status[req.SID]
	m["sid"], m["to"], m["from"], m["body"], m["account_sid"], m["status"] = req.SID, req.To, req.From, req.Body, s.AccountSID, st[0]
	m["date_created"] = "Tue, 01 Dec 2026 02:00:00 +0000"
	if st[1] != "" {
		var code int
		fmt.Sscan(st[1], &code)
		m["error_code"] = code
	}
	return m
}

// list answers "Read multiple Message resources", newest first, paged by
// PageSize with next_page_uri (Page, PageToken ignored but for the page
// number) (https://www.twilio.com/docs/messaging/api/message-resource#read-multiple-message-resources).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var all []map[string]any
	for i := len(s.reqs) - 1; i >= 0; i-- {
		if s.reqs[i].SID != "" {
			all = append(all, s.resource(s.reqs[i]))
		}
	}
	size := s.PageSize
	s.mu.Unlock()
	page := 0
	fmt.Sscan(r.URL.Query().Get("Page"), &page)
	lo, hi := min(page*size, len(all)), min((page+1)*size, len(all))
	out := map[string]any{"messages": all[lo:hi], "page": page, "page_size": size, "next_page_uri": nil}
	if hi < len(all) {
		q := r.URL.Query()
		q.Set("Page", fmt.Sprint(page+1))
		out["next_page_uri"] = r.URL.Path + "?" + q.Encode()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// fetch answers "Fetch a Message resource".
func (s *Server) fetch(w http.ResponseWriter, sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range s.reqs {
		if req.SID == sid {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s.resource(req))
			return
		}
	}
	answerError(w, 404, 20404, "The requested resource was not found")
}
