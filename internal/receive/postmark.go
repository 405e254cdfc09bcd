package receive

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// verifyPostmark checks the basic-auth credentials that Postmark sends
// from the webhook's URL (https://user:password@host/events/postmark):
// "Postmark does not sign webhooks; protect the URL with basic HTTP
// authentication" (https://postmarkapp.com/developer/webhooks/webhooks-overview,
// "Protecting your webhook"). It is the only mechanism Postmark has. User
// and password are compared in constant time, as digests so that not even
// their lengths leak. No credentials: 401 unverified; wrong ones: 401
// refused (both with WWW-Authenticate).
func (s *Server) verifyPostmark(r *http.Request, body []byte) (verdict, error) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		return verdict{}, unverified("no basic-auth credentials")
	}
	u1, u2 := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(s.cfg.PostmarkUser))
	p1, p2 := sha256.Sum256([]byte(pass)), sha256.Sum256([]byte(s.cfg.PostmarkPassword))
	okUser := subtle.ConstantTimeCompare(u1[:], u2[:])
	okPass := subtle.ConstantTimeCompare(p1[:], p2[:])
	if okUser&okPass != 1 {
		// 401, not 403: Postmark stops retrying at a 403, so credentials
		// rotated in Postmark before the Secret would lose the events of
		// the meantime; at a 401 it retries for about 10 hours.
		return verdict{}, &refusal{http.StatusUnauthorized, "refused", "wrong basic-auth credentials"}
	}
	return verdict{events: body}, nil
}
