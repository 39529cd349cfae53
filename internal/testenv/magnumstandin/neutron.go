package magnumstandin

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// Network is the part of a Neutron network the stand-in serves (Networking API v2.0).
type Network struct {
	ID        string
	Name      string
	ProjectID string
	External  bool
	Shared    bool
}

// Subnet is the part of a Neutron subnet the stand-in serves.
type Subnet struct {
	ID, Name, NetworkID, ProjectID, CIDR string
}

// StartNeutron serves GET / (the unauthenticated version document), GET /v2.0/networks and
// GET /v2.0/subnets with Neutron's exact-match filters. Register it as service type
// "network" at its URL.
func StartNeutron(t testing.TB, ks *keystone.Keystone, nets []Network, subs []Subnet) *Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, 200, map[string]any{"versions": []map[string]any{{"id": "v2.0", "status": "CURRENT",
			"links": []map[string]string{{"rel": "self", "href": "http://" + r.Host + "/v2.0/"}}}}})
	})
	mux.HandleFunc("GET /v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !CheckQuery(w, q, "name", "router:external", "id", "project_id") {
			return
		}
		out := []map[string]any{}
		for _, n := range nets {
			if !match(q, "name", n.Name) || !match(q, "id", n.ID) || !match(q, "project_id", n.ProjectID) ||
				!matchBool(q, "router:external", n.External) {
				continue
			}
			out = append(out, map[string]any{"id": n.ID, "name": n.Name, "project_id": n.ProjectID,
				"tenant_id": n.ProjectID, "router:external": n.External, "shared": n.Shared, "status": "ACTIVE",
				"admin_state_up": true, "mtu": 1500, "subnets": []string{}, "tags": []string{},
				"availability_zones": []string{"nova"}, "revision_number": 1, "description": ""})
		}
		WriteJSON(w, 200, map[string]any{"networks": out})
	})
	mux.HandleFunc("GET /v2.0/subnets", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !CheckQuery(w, q, "name", "id", "network_id", "project_id") {
			return
		}
		out := []map[string]any{}
		for _, s := range subs {
			if !match(q, "name", s.Name) || !match(q, "id", s.ID) || !match(q, "network_id", s.NetworkID) {
				continue
			}
			out = append(out, map[string]any{"id": s.ID, "name": s.Name, "network_id": s.NetworkID,
				"project_id": s.ProjectID, "tenant_id": s.ProjectID, "cidr": s.CIDR, "ip_version": 4,
				"enable_dhcp": true, "dns_nameservers": []string{}, "allocation_pools": []any{},
				"host_routes": []any{}, "revision_number": 1, "description": ""})
		}
		WriteJSON(w, 200, map[string]any{"subnets": out})
	})
	return NewServer(t, ks, mux, "/")
}

func match(q url.Values, key, v string) bool {
	return !q.Has(key) || q.Get(key) == v
}

func matchBool(q url.Values, key string, v bool) bool {
	if !q.Has(key) {
		return true
	}
	b, err := strconv.ParseBool(q.Get(key))
	return err == nil && b == v
}
