package report

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/magnum-gitops/magnum-gitops/status"
)

// Lookup returns the current report of a cluster by Magnum UUID.
type Lookup func(uuid string) (status.Report, error)

// Handler serves GET /v1/clusters/{uuid}/status with the cluster's Report as JSON, for a
// Magnum-side driver to copy status, status_reason, api_address and coe_version (which
// the public Magnum API does not let us write).
func Handler(lookup Lookup) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/clusters/{uuid}/status", func(w http.ResponseWriter, r *http.Request) {
		rep, err := lookup(r.PathValue("uuid"))
		w.Header().Set("Content-Type", "application/json")
		switch {
		case errors.Is(err, ErrNotFound):
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]string{"error": "cluster not found"})
			return
		case err != nil:
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(rep)
	})
	return mux
}

// ErrNotFound is returned by a Lookup for an unknown cluster.
var ErrNotFound = errors.New("status: cluster not found")
