package httpapi

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// TokenSource gives the bearer tokens the API accepts, asked on every request:
// config.TokenFiles reads them again when their files change.
type TokenSource interface {
	Tokens() [][]byte
}

// Tokens are a fixed set of bearer tokens the API accepts.
type Tokens [][]byte

// Tokens implements TokenSource.
func (t Tokens) Tokens() [][]byte { return t }

// errUnauthorized is the one answer to a missing or wrong credential: it says nothing of
// which tokens exist.
var errUnauthorized = errors.New("missing or invalid credentials")

// authorized reports whether a request carries an accepted bearer token or a verified
// client certificate (when mTLS is on, the TLS layer has verified it against the client CA
// already). Every configured token is compared, in constant time, so timing tells nothing.
func (s *Server) authorized(r *http.Request) bool {
	if s.AcceptClientCerts && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return true
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return false
	}
	match := 0
	var tokens [][]byte
	if s.Tokens != nil {
		tokens = s.Tokens.Tokens()
	}
	for _, want := range tokens {
		match |= subtle.ConstantTimeCompare([]byte(tok), want)
	}
	return match == 1
}
