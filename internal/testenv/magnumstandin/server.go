package magnumstandin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// Server is an httptest server behind Keystone's token check that records its requests.
type Server struct {
	*httptest.Server
	// Fail, when set, makes every authenticated request answer 500 (an API in trouble).
	Fail atomic.Bool

	mu       sync.Mutex
	requests []string // "GET /v2.0/networks?name=public&router%3Aexternal=true"
}

// NewServer serves h behind ks's token check until the test ends; paths in open are
// answered without a token (version documents).
func NewServer(t testing.TB, ks *keystone.Keystone, h http.Handler, open ...string) *Server {
	s := &Server{}
	authed := ks.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Fail.Load() {
			WriteJSON(w, 500, map[string]any{"error": map[string]string{"message": "stand-in told to fail"}})
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		if r.Header.Get("Accept") != "application/json" {
			http.Error(w, "stand-in: want Accept: application/json", http.StatusNotAcceptable)
			return
		}
		if slices.Contains(open, r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Count is how many requests went to paths starting with prefix ("" counts them all).
func (s *Server) Count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if strings.HasPrefix(strings.SplitN(r, " ", 2)[1], prefix) {
			n++
		}
	}
	return n
}

// Log returns every request so far, as "METHOD /path?query".
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// WriteJSON answers v as JSON with the given status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// CheckQuery refuses parameters the real API would not accept here (answering 400) and
// reports whether the query is acceptable.
func CheckQuery(w http.ResponseWriter, q url.Values, allowed ...string) bool {
	for k := range q {
		if !slices.Contains(allowed, k) {
			WriteJSON(w, 400, map[string]string{"message": "stand-in: unexpected query parameter " + k})
			return false
		}
	}
	return true
}
