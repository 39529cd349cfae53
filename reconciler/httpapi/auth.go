package httpapi

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Tokens are the bearer tokens the API accepts.
type Tokens [][]byte

// ReadTokens reads one token per file (surrounding white space trimmed). An empty or
// unreadable file is an error: an empty token would let anyone in.
func ReadTokens(files []string) (Tokens, error) {
	var out Tokens
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("serve.token_files: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return nil, fmt.Errorf("serve.token_files: %s is empty", f)
		}
		out = append(out, []byte(tok))
	}
	return out, nil
}

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
	for _, want := range s.Tokens {
		match |= subtle.ConstantTimeCompare([]byte(tok), want)
	}
	return match == 1
}
