package openstack_test

// Stand-ins for the OpenStack APIs that cannot run here (Neutron, Cinder, Nova; Magnum in
// magnum_standin_test.go). Each is built from the documented API reference
// (docs.openstack.org/api-ref), registered in the real Keystone's catalog, and checks every
// token against that Keystone, so gophercloud discovers and authenticates to them exactly
// as in production. They are stand-ins, not OpenStack: only the calls magnum-gitops makes
// are served, and anything else is refused loudly.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// standIn is an httptest server behind Keystone's token check that records its requests.
type standIn struct {
	*httptest.Server
	mu       sync.Mutex
	requests []string // "GET /v2.0/networks?name=public&router%3Aexternal=true"
	// fail, when set, makes every authenticated request answer 500 (an API in trouble).
	fail atomic.Bool
}

// newStandIn serves mux; paths in open are answered without a token (version documents).
func newStandIn(t *testing.T, ks *keystone.Keystone, mux http.Handler, open ...string) *standIn {
	s := &standIn{}
	authed := ks.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.fail.Load() {
			writeJSON(w, 500, map[string]any{"NeutronError": map[string]string{"message": "stand-in told to fail"}})
			return
		}
		mux.ServeHTTP(w, r)
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
			mux.ServeHTTP(w, r)
			return
		}
		authed.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// count is how many requests went to paths starting with prefix ("" counts them all).
func (s *standIn) count(prefix string) int {
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

func (s *standIn) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// checkQuery refuses parameters the real API would not accept here, so a client sending
// something unexpected fails the test instead of being silently ignored.
func checkQuery(w http.ResponseWriter, q url.Values, allowed ...string) bool {
	for k := range q {
		if !slices.Contains(allowed, k) {
			writeJSON(w, 400, map[string]string{"message": "stand-in: unexpected query parameter " + k})
			return false
		}
	}
	return true
}

// network and subnet are the Neutron fields the stand-in serves (Networking API v2.0).
type network struct {
	ID        string
	Name      string
	ProjectID string
	External  bool
	Shared    bool
}

type subnet struct {
	ID, Name, NetworkID, ProjectID, CIDR string
}

// newNeutron serves GET / (the unauthenticated version document), GET /v2.0/networks and
// GET /v2.0/subnets with Neutron's exact-match filters.
func newNeutron(t *testing.T, ks *keystone.Keystone, nets []network, subs []subnet) *standIn {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"versions": []map[string]any{{"id": "v2.0", "status": "CURRENT",
			"links": []map[string]string{{"rel": "self", "href": "http://" + r.Host + "/v2.0/"}}}}})
	})
	mux.HandleFunc("GET /v2.0/networks", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !checkQuery(w, q, "name", "router:external", "id", "project_id") {
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
		writeJSON(w, 200, map[string]any{"networks": out})
	})
	mux.HandleFunc("GET /v2.0/subnets", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if !checkQuery(w, q, "name", "id", "network_id", "project_id") {
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
		writeJSON(w, 200, map[string]any{"subnets": out})
	})
	return newStandIn(t, ks, mux, "/")
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

// newCinder serves GET /v3/{project_id}/types (Block Storage API v3; is_public=None, which
// gophercloud sends, lists public and private types alike). The catalog URL
// carries $(project_id)s, which Keystone fills in per token, as deployments register it;
// like Cinder, a project in the path other than the token's is refused.
func newCinder(t *testing.T, ks *keystone.Keystone, types []string) *standIn {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v3/{project}/types", func(w http.ResponseWriter, r *http.Request) {
		if !checkQuery(w, r.URL.Query(), "is_public", "sort", "limit", "offset", "marker") {
			return
		}
		if s, _ := keystone.ScopeFrom(r.Context()); s.ProjectID != r.PathValue("project") {
			writeJSON(w, 400, map[string]any{"badRequest": map[string]any{"code": 400, "message": "Malformed request url"}})
			return
		}
		out := []map[string]any{}
		for i, name := range types {
			out = append(out, map[string]any{"id": fmt.Sprintf("6685584b-1eac-4da6-b5c3-555430cf68f%d", i),
				"name": name, "description": nil, "is_public": true, "extra_specs": map[string]string{},
				"os-volume-type-access:is_public": true, "qos_specs_id": nil})
		}
		writeJSON(w, 200, map[string]any{"volume_types": out})
	})
	return newStandIn(t, ks, mux)
}

// flavor is the part of a Nova flavor the stand-in serves.
type flavor struct {
	ID, Name   string
	VCPUs, RAM int
}

// newNova serves GET /v2.1/flavors/detail (Compute API v2.1).
func newNova(t *testing.T, ks *keystone.Keystone, flavors []flavor) *standIn {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2.1/flavors/detail", func(w http.ResponseWriter, r *http.Request) {
		if !checkQuery(w, r.URL.Query(), "is_public", "minRam", "minDisk") {
			return
		}
		out := []map[string]any{}
		for _, f := range flavors {
			out = append(out, map[string]any{"id": f.ID, "name": f.Name, "vcpus": f.VCPUs, "ram": f.RAM,
				"disk": 20, "swap": "", "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false,
				"rxtx_factor": 1.0, "os-flavor-access:is_public": true, "links": []any{}})
		}
		writeJSON(w, 200, map[string]any{"flavors": out})
	})
	return newStandIn(t, ks, mux)
}
