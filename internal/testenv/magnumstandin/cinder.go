package magnumstandin

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// StartCinder serves GET /v3/{project_id}/types (Block Storage API v3; is_public=None, which
// gophercloud sends, lists public and private types alike). Register it as devstack does:
// service type "volumev3" at URL+"/v3/$(project_id)s", which Keystone fills in per token;
// like Cinder, a project in the path other than the token's is refused.
func StartCinder(t testing.TB, ks *keystone.Keystone, types []string) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v3/{project}/types", func(w http.ResponseWriter, r *http.Request) {
		if !CheckQuery(w, r.URL.Query(), "is_public", "sort", "limit", "offset", "marker") {
			return
		}
		if s, _ := keystone.ScopeFrom(r.Context()); s.ProjectID != r.PathValue("project") {
			WriteJSON(w, 400, map[string]any{"badRequest": map[string]any{"code": 400, "message": "Malformed request url"}})
			return
		}
		out := []map[string]any{}
		for i, name := range types {
			out = append(out, map[string]any{"id": fmt.Sprintf("6685584b-1eac-4da6-b5c3-555430cf68f%d", i),
				"name": name, "description": nil, "is_public": true, "extra_specs": map[string]string{},
				"os-volume-type-access:is_public": true, "qos_specs_id": nil})
		}
		WriteJSON(w, 200, map[string]any{"volume_types": out})
	})
	return NewServer(t, ks, mux)
}
