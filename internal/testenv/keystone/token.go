package keystone

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
)

// tokenCacheTTL is keystonemiddleware's default token_cache_time: a validated token is
// trusted that long without asking Keystone again.
const tokenCacheTTL = 5 * time.Minute

// Scope is what Keystone says about a validated token.
type Scope struct {
	UserID    string
	ProjectID string
	Roles     []string
}

type scopeKey struct{}

// ScopeFrom returns the token scope RequireToken stored in the request's context.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok
}

type tokenCache struct {
	mu      sync.Mutex
	entries map[string]cachedScope
}

type cachedScope struct {
	scope   Scope
	expires time.Time
}

// RequireToken wraps a stand-in's handler the way keystonemiddleware's auth_token wraps a
// real OpenStack API: the X-Auth-Token header is validated against this Keystone (GET
// /v3/auth/tokens) and a missing, invalid or revoked token is answered 401 with a
// WWW-Authenticate header. A valid token's Scope is in the request's context.
func (k *Keystone) RequireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get("X-Auth-Token")
		scope, ok := k.validate(r.Context(), token)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Keystone uri="`+k.AuthURL+`"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error": {"code": 401, "title": "Unauthorized", ` +
				`"message": "The request you have made requires authentication."}}`))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), scopeKey{}, scope)))
	})
}

func (k *Keystone) validate(ctx context.Context, token string) (Scope, bool) {
	if token == "" {
		return Scope{}, false
	}
	k.tokens.mu.Lock()
	if e, ok := k.tokens.entries[token]; ok && time.Now().Before(e.expires) {
		k.tokens.mu.Unlock()
		return e.scope, true
	}
	k.tokens.mu.Unlock()

	idc, err := k.adminIdentity(ctx)
	if err != nil {
		return Scope{}, false
	}
	res := tokens.Get(ctx, idc, token)
	user, err := res.ExtractUser()
	if err != nil {
		return Scope{}, false
	}
	s := Scope{UserID: user.ID}
	if p, err := res.ExtractProject(); err == nil && p != nil {
		s.ProjectID = p.ID
	}
	if rs, err := res.ExtractRoles(); err == nil {
		for _, r := range rs {
			s.Roles = append(s.Roles, r.Name)
		}
	}
	k.tokens.mu.Lock()
	if k.tokens.entries == nil {
		k.tokens.entries = map[string]cachedScope{}
	}
	k.tokens.entries[token] = cachedScope{scope: s, expires: time.Now().Add(tokenCacheTTL)}
	k.tokens.mu.Unlock()
	return s, true
}
