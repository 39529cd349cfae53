package magnumstandin

import (
	"net/http"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// Flavor is the part of a Nova flavor the stand-in serves.
type Flavor struct {
	ID, Name   string
	VCPUs, RAM int
}

// StartNova serves GET /v2.1/flavors/detail (Compute API v2.1). Register it as service
// type "compute" at URL+"/v2.1".
func StartNova(t testing.TB, ks *keystone.Keystone, flavors []Flavor) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2.1/flavors/detail", func(w http.ResponseWriter, r *http.Request) {
		if !CheckQuery(w, r.URL.Query(), "is_public", "minRam", "minDisk") {
			return
		}
		out := []map[string]any{}
		for _, f := range flavors {
			out = append(out, map[string]any{"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM,
				"disk": 20, "swap": "", "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false,
				"rxtx_factor": 1.0, "os-flavor-access:is_public": true, "links": []any{}})
		}
		WriteJSON(w, 200, map[string]any{"flavors": out})
	})
	return NewServer(t, ks, mux)
}
