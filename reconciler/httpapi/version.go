package httpapi

import (
	"net/http"

	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
)

// VersionHeader names the release on every answer of the API, so that a client learns
// which service answered, a refusal and an error included, without asking GET /version.
const VersionHeader = "Magnum-Gitops-Version"

// build is what GET /version answers and VersionHeader carries: s.Build, else this binary's.
func (s *Server) build() buildinfo.Info {
	if s.Build != nil {
		return *s.Build
	}
	return buildinfo.Read()
}

// getVersion answers GET /version without a credential, as a Kubernetes API server answers
// its /version to anyone: a client checks that the service speaks its event API before it
// holds a token, and the release, commit and Go version are no secret.
func (s *Server) getVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.build())
}

// withVersionHeader sets VersionHeader on every answer of next.
func (s *Server) withVersionHeader(next http.Handler) http.Handler {
	v := s.build().Version
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(VersionHeader, v)
		next.ServeHTTP(w, r)
	})
}
