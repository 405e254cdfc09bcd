package send

import (
	"crypto/tls"
	"net/http"
	"time"
)

// IdleConnTimeout is how long the http and ses senders keep an idle
// connection to the provider before closing it themselves.
//
// It sits below the idle timeouts of what usually fronts an HTTP API (60 s
// on AWS's load balancers by default, 75 s in nginx, several minutes at
// Google's and Cloudflare's edges), so that the client, not the server,
// closes an idle connection. A server that closes a kept-alive connection
// just as a request goes out on it leaves that request's fate unknown: an
// SES request then ends Unknown and its claim stays in quarantine. During
// a pass the connections are busy and never reach this timeout; it matters
// in the pauses (a rate-limited domain, a slow claim).
const IdleConnTimeout = 30 * time.Second

// readBufferSize is the read buffer of each connection of the http and ses
// senders: room for a provider's answer (a status line, a few headers and
// a short JSON body, well under 1 KiB for SES and the http sender's
// endpoints; a longer one is read in several pieces). Go's default of
// 4 KiB costs 3 KiB more per connection for nothing, 768 KiB at
// concurrency 256. Writes keep the default 4 KiB: a request's headers
// and the start of its body go out in one piece from it.
const readBufferSize = 1 << 10

// SizeTransport sizes tr for `concurrency` requests in flight to one
// provider host: it keeps that many connections alive between requests
// and never opens more, so a pass opens `concurrency` TLS connections
// once and reuses them, instead of one per notice (Go's default keeps two
// idle connections per host and closes the rest after each answer).
//
// HTTP/2 is attempted where the endpoint offers it through ALPN (a
// custom TLS configuration otherwise turns it off); over HTTP/2 the
// requests in flight share one connection up to the server's stream limit.
func SizeTransport(tr *http.Transport, concurrency int) {
	tr.DisableKeepAlives = false
	tr.MaxConnsPerHost = concurrency
	tr.MaxIdleConnsPerHost = concurrency
	if tr.MaxIdleConns != 0 && tr.MaxIdleConns < concurrency {
		tr.MaxIdleConns = concurrency
	}
	tr.IdleConnTimeout = IdleConnTimeout
	tr.ReadBufferSize = readBufferSize
	tr.ForceAttemptHTTP2 = true
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{}
	}
	if tr.TLSClientConfig.MinVersion < tls.VersionTLS12 {
		tr.TLSClientConfig.MinVersion = tls.VersionTLS12
	}
}
