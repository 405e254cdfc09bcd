package ask_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// sent is one message the stand-in's provider holds: of claim n's
// attempt, sent age before now, with these events (each provider's own
// names: see the stand-ins).
type sent struct {
	n, attempt int
	age        time.Duration
	events     []string
}

// standIn is a loopback server answering as one provider's API reference
// documents, from the messages it holds.
type standIn struct {
	*httptest.Server
	requests atomic.Int32
	// fail, when set, answers a request with a status instead (and the
	// Retry-After it returns, when not "").
	fail func(r *http.Request) (status int, retryAfter string)
}

func newStandIn(t *testing.T, provider string, msgs []sent) *standIn {
	s := &standIn{}
	var h http.HandlerFunc
	switch provider {
	case "postmark":
		h = postmarkAPI(t, msgs)
	case "mailgun":
		h = mailgunAPI(t, msgs)
	case "sendgrid":
		h = sendgridAPI(t, msgs)
	default:
		t.Fatalf("no stand-in for %s", provider)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if s.fail != nil {
			if status, ra := s.fail(r); status != 0 {
				if ra != "" {
					w.Header().Set("Retry-After", ra)
				}
				w.WriteHeader(status)
				return
			}
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// postmarkAPI answers as https://postmarkapp.com/developer/api/messages-api
// documents the outbound search and details, and
// https://postmarkapp.com/developer/api/bounce-api a bounce: the shapes of
// its examples (and of the official postmark.js models OutboundMessage,
// OutboundMessageDetails and MessageEvent), with the Metadata that
// X-PM-Metadata-notice_key and -notice_attempt become
// (https://postmarkapp.com/support/article/1125-custom-metadata-faq).
// Events: Delivered, Transient, Opened, LinkClicked, and Bounced:TYPE
// (HardBounce, SoftBounce, SMTPApiError, ...).
func postmarkAPI(t *testing.T, msgs []sent) http.HandlerFunc {
	id := func(m sent) string { return fmt.Sprintf("0ac29aee-e1cd-480d-b08d-%06d%06d", m.n, m.attempt) }
	summary := func(m sent) map[string]any {
		return map[string]any{"Tag": "", "MessageID": id(m), "MessageStream": "outbound", "To": []map[string]string{{"Email": "john.doe@yahoo.com", "Name": ""}},
			"Cc": []any{}, "Bcc": []any{}, "Recipients": []string{"john.doe@yahoo.com"}, "ReceivedAt": now.Add(-m.age).In(time.FixedZone("EST", -5*3600)).Format("2006-01-02T15:04:05.0000000-07:00"),
			"From": "\"Notices\" <notices@example.com>", "Subject": "Your renewal", "Attachments": []any{}, "Status": "Sent", "TrackOpens": true, "TrackLinks": "None",
			"Metadata": map[string]string{"notice_key": key(m.n), "notice_attempt": strconv.Itoa(m.attempt)}, "Sandboxed": false}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Postmark-Server-Token") != "server-token" || r.Header.Get("Accept") != "application/json" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"ErrorCode": 10, "Message": "No Account or Server API tokens were supplied in the HTTP headers."})
			return
		}
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/messages/outbound":
			if q.Get("count") == "" || q.Get("offset") == "" {
				w.WriteHeader(http.StatusUnprocessableEntity)
				return
			}
			found := []any{}
			for _, m := range msgs {
				if want := q.Get("metadata_notice_key"); want != "" && want != key(m.n) {
					continue
				}
				if off, _ := strconv.Atoi(q.Get("offset")); off > 0 {
					continue
				}
				found = append(found, summary(m))
			}
			writeJSON(w, map[string]any{"TotalCount": len(found), "Messages": found})
		case strings.HasPrefix(r.URL.Path, "/messages/outbound/") && strings.HasSuffix(r.URL.Path, "/details"):
			for _, m := range msgs {
				if r.URL.Path != "/messages/outbound/"+id(m)+"/details" {
					continue
				}
				d := summary(m)
				d["TextBody"], d["HtmlBody"], d["Body"] = "", "", ""
				var evs []map[string]any
				for i, e := range m.events {
					at := now.Add(-m.age + time.Duration(i+1)*time.Minute).Format(time.RFC3339Nano)
					typ, _, _ := strings.Cut(e, ":")
					ev := map[string]any{"Recipient": "john.doe@yahoo.com", "Type": typ, "ReceivedAt": at}
					switch typ {
					case "Delivered", "Transient":
						ev["Details"] = map[string]any{"DeliveryMessage": "smtp;250 2.0.0 OK l10si21599969igu.63 - gsmtp", "DestinationServer": "yahoo-smtp-in.l.yahoo.com", "DestinationIP": "173.194.74.256"}
					case "Bounced":
						ev["Details"] = map[string]any{"Summary": "The server was unable to deliver your message (ex: unknown user, mailbox not found).", "BounceID": 10000 + m.n*10 + i}
					default:
						ev["Details"] = map[string]any{"Summary": ""}
					}
					evs = append(evs, ev)
				}
				d["MessageEvents"] = evs
				writeJSON(w, d)
				return
			}
			w.WriteHeader(http.StatusUnprocessableEntity)
			writeJSON(w, map[string]any{"ErrorCode": 701, "Message": "This message was not found."})
		case strings.HasPrefix(r.URL.Path, "/bounces/"):
			bid, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/bounces/"))
			for _, m := range msgs {
				for i, e := range m.events {
					typ, sub, _ := strings.Cut(e, ":")
					if typ != "Bounced" || bid != 10000+m.n*10+i {
						continue
					}
					codes := map[string]int{"HardBounce": 1, "Transient": 2, "SoftBounce": 4096, "SMTPApiError": 100007}
					writeJSON(w, map[string]any{"ID": bid, "Type": sub, "TypeCode": codes[sub], "Name": "Hard bounce", "Tag": "", "MessageID": id(m),
						"ServerID": 23, "MessageStream": "outbound", "Description": "The server was unable to deliver your message (ex: unknown user, mailbox not found).",
						"Details": "smtp;550 5.1.1 The email account that you tried to reach does not exist.", "Email": "john.doe@yahoo.com", "From": "notices@example.com",
						"BouncedAt": now.Add(-m.age + time.Duration(i+1)*time.Minute).Format(time.RFC3339Nano), "DumpAvailable": true, "Inactive": true, "CanActivate": true, "Subject": "Your renewal"})
					return
				}
			}
			w.WriteHeader(http.StatusUnprocessableEntity)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}

// mailgunAPI answers GET /v3/{domain}/events as
// https://documentation.mailgun.com/docs/mailgun/api-reference/openapi-final/tag/Events
// documents it ({"items": [...], "paging": {"next": ...}}, filtered by
// message-id, begin, ascending), each item an event as the webhook
// payloads carry it in event-data
// (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/webhook-payloads),
// with user-variables from X-Mailgun-Variables. Events: accepted,
// delivered, opened, failed:permanent, failed:temporary, rejected. Items
// are served two to a page, so that paging is followed.
func mailgunAPI(t *testing.T, msgs []sent) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || user != "api" || pass != "key-1" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("Forbidden"))
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/v3/n.example.com/events") {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		q := r.URL.Query()
		begin, err := strconv.ParseFloat(q.Get("begin"), 64)
		if err != nil || q.Get("ascending") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
			writeJSON(w, map[string]string{"message": "Invalid begin"})
			return
		}
		var items []any
		for _, m := range msgs {
			if id := q.Get("message-id"); id != "" && id != msgID(m.n) {
				continue
			}
			for i, e := range m.events {
				at := now.Add(-m.age + time.Duration(i)*time.Minute)
				if float64(at.Unix()) < begin {
					continue
				}
				typ, sev, _ := strings.Cut(e, ":")
				item := map[string]any{"event": typ, "id": fmt.Sprintf("G9Bn5sl1TC6dwOMl%02d%02d", m.n, i), "timestamp": float64(at.UnixNano()) / 1e9,
					"log-level": "info", "recipient": "alice@example.com", "recipient-domain": "example.com",
					"message":        map[string]any{"headers": map[string]string{"to": "Alice <alice@example.com>", "message-id": msgID(m.n), "from": "Notices <notices@n.example.com>", "subject": "Your renewal"}, "size": 111},
					"user-variables": map[string]string{"notice_key": key(m.n), "notice_attempt": strconv.Itoa(m.attempt)}, "flags": map[string]bool{"is-test-mode": false}}
				switch typ {
				case "delivered":
					item["delivery-status"] = map[string]any{"code": 250, "message": "OK", "description": "", "attempt-no": 1, "tls": true}
				case "failed":
					item["severity"], item["reason"] = sev, "bounce"
					item["delivery-status"] = map[string]any{"code": 550, "message": "5.1.1 The email account that you tried to reach does not exist.", "description": "", "attempt-no": 1, "bounce-type": "hard"}
					item["log-level"] = "error"
				}
				items = append(items, item)
			}
		}
		page, _ := strconv.Atoi(q.Get("page"))
		from := min(page*2, len(items))
		to := min(from+2, len(items))
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		writeJSON(w, map[string]any{"items": append([]any{}, items[from:to]...),
			"paging": map[string]string{"next": "http://" + r.Host + next.RequestURI(), "previous": "http://" + r.Host + r.URL.RequestURI()}})
	}
}

// sendgridAPI answers as the Email Logs API reference documents it
// (https://www.twilio.com/docs/sendgrid/api-reference/email-logs/filter-all-messages,
// .../filter-messages-by-id, and twilio/sendgrid-oai
// spec/yaml/tsg_logs_v3.yaml): POST /v3/logs lists the messages created in
// the query's sg_message_id_created_at range; GET /v3/logs/{id} gives one
// message with its custom_args and events shaped as the Event Webhook's
// (https://www.twilio.com/docs/sendgrid/for-developers/tracking-events/event).
// Events: processed, delivered, deferred, bounce:bounce, bounce:blocked,
// dropped.
func sendgridAPI(t *testing.T, msgs []sent) http.HandlerFunc {
	id := func(m sent) string {
		return fmt.Sprintf("XBg2anf2TqCy6WXKQF%02d%02d.recvd-7d6f8c5b4-x2v9q-1-67F8A2C1-3.0", m.n, m.attempt)
	}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer SG.key" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]any{"errors": []map[string]string{{"message": "authorization required"}}})
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v3/logs":
			var body struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Limit < 1 || body.Limit > 1000 {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			// The one query About and Since send: a range of creation times.
			parts := strings.Split(body.Query, `"`)
			if len(parts) != 5 || parts[0] != "sg_message_id_created_at >= TIMESTAMP " || parts[2] != " AND sg_message_id_created_at < TIMESTAMP " {
				w.WriteHeader(http.StatusBadRequest)
				writeJSON(w, map[string]any{"errors": []map[string]string{{"message": "invalid query"}}})
				return
			}
			from, err1 := time.Parse(time.RFC3339, parts[1])
			to, err2 := time.Parse(time.RFC3339, parts[3])
			if err1 != nil || err2 != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			list := []any{}
			for _, m := range msgs {
				at := now.Add(-m.age)
				if at.Before(from) || !at.Before(to) {
					continue
				}
				list = append(list, map[string]any{"from_email": "notices@example.com", "sg_message_id": id(m), "subject": "Your renewal",
					"to_email": "alice@example.com", "status": "delivered", "sg_message_id_created_at": at.Format(time.RFC3339)})
			}
			writeJSON(w, map[string]any{"messages": list})
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v3/logs/"):
			for _, m := range msgs {
				if r.URL.Path != "/v3/logs/"+id(m) {
					continue
				}
				var evs []map[string]any
				for i, e := range m.events {
					typ, sub, _ := strings.Cut(e, ":")
					ev := map[string]any{"event": typ, "email": "alice@example.com", "sg_message_id": id(m), "sg_event_id": fmt.Sprintf("ZGVsaXZlcmVk%02d%02d", m.n, i),
						"smtp-id": "<" + msgID(m.n) + ">", "timestamp": now.Add(-m.age + time.Duration(i)*time.Minute).Unix()}
					switch typ {
					case "delivered":
						ev["response"], ev["ip"] = "250 OK", "168.1.1.1"
					case "bounce":
						ev["type"], ev["reason"], ev["status"] = sub, "500 unknown recipient", "5.0.0"
					case "dropped":
						ev["reason"], ev["status"] = "Bounced Address", "5.0.0"
					}
					evs = append(evs, ev)
				}
				writeJSON(w, map[string]any{"from_email": "notices@example.com", "sg_message_id": id(m), "subject": "Your renewal", "to_email": "alice@example.com",
					"status": "delivered", "api_key_id": "abc", "client_ip": "192.0.2.1", "events": evs,
					"custom_args": map[string]string{"notice_key": key(m.n), "notice_attempt": strconv.Itoa(m.attempt)}})
				return
			}
			w.WriteHeader(http.StatusNotFound)
			writeJSON(w, map[string]any{"errors": []map[string]string{{"message": "message not found"}}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}
}
