package openstack_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// Stand-in Magnum (Container Infrastructure Management API v1), from the API reference
// and Magnum's controllers: collections are paginated with limit/marker (marker = the last
// uuid) and carry a "next" link only when a page is full; the cluster list is served by
// /v1/clusters/detail, node group lists show a summary only. Every request must carry
// OpenStack-API-Version: container-infra 1.10, the version the client speaks.

const magnumMaxLimit = 1000 // Magnum's [api] max_limit, the default page size

type magnumData struct {
	clusters   []map[string]any
	templates  []map[string]any
	nodegroups map[string][]map[string]any // by cluster uuid
}

// ngSummaryFields are the fields Magnum's node group list keeps (NodeGroup.convert with
// expand=False).
var ngSummaryFields = []string{"uuid", "name", "flavor_id", "node_count", "role", "is_default", "image_id", "status", "stack_id"}

func newMagnum(t *testing.T, ks *keystone.Keystone, data magnumData) *standIn {
	mux := http.NewServeMux()
	list := func(w http.ResponseWriter, r *http.Request, key, resource string, items []map[string]any, fields []string) {
		q := r.URL.Query()
		if !checkQuery(w, q, "limit", "marker", "sort_key", "sort_dir") {
			return
		}
		limit := magnumMaxLimit
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				magnumError(w, 400, "Invalid limit "+v)
				return
			}
			limit = min(n, magnumMaxLimit)
		}
		start := 0
		if m := q.Get("marker"); m != "" {
			i := slices.IndexFunc(items, func(it map[string]any) bool { return it["uuid"] == m })
			if i < 0 {
				magnumError(w, 404, "Marker "+m+" could not be found.")
				return
			}
			start = i + 1
		}
		page := items[start:min(start+limit, len(items))]
		out := map[string]any{key: project(page, fields)}
		if len(page) > 0 && len(page) == limit {
			out["next"] = fmt.Sprintf("http://%s/v1/%s?sort_key=id&sort_dir=asc&limit=%d&marker=%s",
				r.Host, resource, limit, page[len(page)-1]["uuid"])
		}
		writeJSON(w, 200, out)
	}
	find := func(items []map[string]any, ident string) map[string]any {
		for _, it := range items {
			if it["uuid"] == ident || it["name"] == ident {
				return it
			}
		}
		return nil
	}
	mux.HandleFunc("GET /v1/clusters/detail", func(w http.ResponseWriter, r *http.Request) {
		list(w, r, "clusters", "clusters/detail", data.clusters, nil)
	})
	mux.HandleFunc("GET /v1/clusters/{ident}", func(w http.ResponseWriter, r *http.Request) {
		if c := find(data.clusters, r.PathValue("ident")); c != nil {
			writeJSON(w, 200, c)
			return
		}
		magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
	})
	mux.HandleFunc("GET /v1/clustertemplates", func(w http.ResponseWriter, r *http.Request) {
		list(w, r, "clustertemplates", "clustertemplates", data.templates, nil)
	})
	mux.HandleFunc("GET /v1/clustertemplates/{ident}", func(w http.ResponseWriter, r *http.Request) {
		if ct := find(data.templates, r.PathValue("ident")); ct != nil {
			writeJSON(w, 200, ct)
			return
		}
		magnumError(w, 404, "ClusterTemplate "+r.PathValue("ident")+" could not be found.")
	})
	mux.HandleFunc("GET /v1/clusters/{ident}/nodegroups", func(w http.ResponseWriter, r *http.Request) {
		c := find(data.clusters, r.PathValue("ident"))
		if c == nil {
			magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
			return
		}
		uuid := c["uuid"].(string)
		list(w, r, "nodegroups", "clusters/"+uuid+"/nodegroups", data.nodegroups[uuid], ngSummaryFields)
	})
	mux.HandleFunc("GET /v1/clusters/{ident}/nodegroups/{ng}", func(w http.ResponseWriter, r *http.Request) {
		c := find(data.clusters, r.PathValue("ident"))
		if c == nil {
			magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
			return
		}
		if ng := find(data.nodegroups[c["uuid"].(string)], r.PathValue("ng")); ng != nil {
			writeJSON(w, 200, ng)
			return
		}
		magnumError(w, 404, "Nodegroup "+r.PathValue("ng")+" could not be found.")
	})
	versioned := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("OpenStack-API-Minimum-Version", "container-infra 1.1")
		w.Header().Set("OpenStack-API-Maximum-Version", "container-infra 1.14")
		if v := r.Header.Get("OpenStack-API-Version"); v != "container-infra 1.10" {
			// The stand-in insists on the version the client must speak (Magnum itself
			// would serve 1.1 to a request without the header).
			magnumError(w, http.StatusNotAcceptable, fmt.Sprintf("stand-in: want OpenStack-API-Version: container-infra 1.10, got %q", v))
			return
		}
		w.Header().Set("OpenStack-API-Version", "container-infra 1.10")
		mux.ServeHTTP(w, r)
	})
	return newStandIn(t, ks, versioned)
}

// project keeps only fields of each item (all of them when fields is nil).
func project(items []map[string]any, fields []string) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if fields == nil {
			out = append(out, it)
			continue
		}
		m := map[string]any{}
		for _, f := range fields {
			m[f] = it[f]
		}
		out = append(out, m)
	}
	return out
}

// magnumError writes Magnum's error document.
func magnumError(w http.ResponseWriter, status int, title string) {
	writeJSON(w, status, map[string]any{"errors": []map[string]any{{"request_id": "", "code": "",
		"status": status, "title": title, "detail": title, "links": []any{}}}})
}
