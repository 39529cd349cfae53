package magnumstandin

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

// Microversion is the OpenStack-API-Version every Magnum request must carry: the version
// reconciler/openstack's client speaks.
const Microversion = "container-infra 1.10"

// MaxLimit is Magnum's [api] max_limit, the default and largest page size.
const MaxLimit = 1000

// ngSummaryFields are the fields Magnum's node group list keeps (NodeGroup.convert with
// expand=False).
var ngSummaryFields = []string{"uuid", "name", "flavor_id", "node_count", "role", "is_default", "image_id", "status", "stack_id"}

// Data is what the Magnum stand-in serves: documents shaped as Magnum's API returns them
// at microversion 1.10 (see ClusterDoc, TemplateDoc, NodeGroupDoc), in Magnum's list order
// (creation).
type Data struct {
	Clusters  []map[string]any
	Templates []map[string]any
	// NodeGroups are each cluster's groups, by cluster uuid.
	NodeGroups map[string][]map[string]any
}

// Cluster returns the document of the cluster with this uuid, nil when there is none.
func (d *Data) Cluster(uuid string) map[string]any { return find(d.Clusters, uuid) }

// NodeGroup returns the document of a cluster's group by name or uuid, nil when there is
// none.
func (d *Data) NodeGroup(clusterUUID, ident string) map[string]any {
	return find(d.NodeGroups[clusterUUID], ident)
}

// RemoveCluster drops a cluster and its node groups, as Magnum does once a delete is
// complete.
func (d *Data) RemoveCluster(uuid string) {
	d.Clusters = slices.DeleteFunc(d.Clusters, func(c map[string]any) bool { return c["uuid"] == uuid })
	delete(d.NodeGroups, uuid)
}

// RemoveNodeGroup drops a cluster's group by name.
func (d *Data) RemoveNodeGroup(clusterUUID, name string) {
	d.NodeGroups[clusterUUID] = slices.DeleteFunc(d.NodeGroups[clusterUUID],
		func(ng map[string]any) bool { return ng["name"] == name })
}

// SyncCounts sets a cluster's node_count and master_count from its node groups, as
// Magnum's Cluster object computes them (the sums over worker and master groups).
func (d *Data) SyncCounts(clusterUUID string) {
	c := d.Cluster(clusterUUID)
	if c == nil {
		return
	}
	workers, masters := 0, 0
	for _, ng := range d.NodeGroups[clusterUUID] {
		n := toInt(ng["node_count"])
		if ng["role"] == "master" {
			masters += n
		} else {
			workers += n
		}
	}
	c["node_count"], c["master_count"] = workers, masters
}

// Magnum is the stand-in Magnum API (Container Infrastructure Management API v1), from the
// API reference and Magnum's controllers: collections are paginated with limit/marker
// (marker = the last uuid) and carry a "next" link only when a page is full; the cluster
// list is served by /v1/clusters/detail; node group lists show a summary only. Every
// request must carry OpenStack-API-Version: container-infra 1.10. Like Magnum, it sends no
// ETag: clients can only compare updated_at.
type Magnum struct {
	*Server

	mu   sync.Mutex
	data Data
}

// StartMagnum serves data until the test ends. Register it as service type
// "container-infra" at URL+"/v1".
func StartMagnum(t testing.TB, ks *keystone.Keystone, data Data) *Magnum {
	if data.NodeGroups == nil {
		data.NodeGroups = map[string][]map[string]any{}
	}
	m := &Magnum{data: data}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/clusters/detail", func(w http.ResponseWriter, r *http.Request) {
		m.list(w, r, "clusters", "clusters/detail", func(d *Data) []map[string]any { return d.Clusters }, nil)
	})
	mux.HandleFunc("GET /v1/clusters/{ident}", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if c := find(m.data.Clusters, r.PathValue("ident")); c != nil {
			WriteJSON(w, 200, c)
			return
		}
		magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
	})
	mux.HandleFunc("GET /v1/clustertemplates", func(w http.ResponseWriter, r *http.Request) {
		m.list(w, r, "clustertemplates", "clustertemplates", func(d *Data) []map[string]any { return d.Templates }, nil)
	})
	mux.HandleFunc("GET /v1/clustertemplates/{ident}", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if ct := find(m.data.Templates, r.PathValue("ident")); ct != nil {
			WriteJSON(w, 200, ct)
			return
		}
		magnumError(w, 404, "ClusterTemplate "+r.PathValue("ident")+" could not be found.")
	})
	mux.HandleFunc("GET /v1/clusters/{ident}/nodegroups", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		c := find(m.data.Clusters, r.PathValue("ident"))
		m.mu.Unlock()
		if c == nil {
			magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
			return
		}
		uuid, _ := c["uuid"].(string)
		m.list(w, r, "nodegroups", "clusters/"+uuid+"/nodegroups",
			func(d *Data) []map[string]any { return d.NodeGroups[uuid] }, ngSummaryFields)
	})
	mux.HandleFunc("GET /v1/clusters/{ident}/nodegroups/{ng}", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		c := find(m.data.Clusters, r.PathValue("ident"))
		if c == nil {
			magnumError(w, 404, "Cluster "+r.PathValue("ident")+" could not be found.")
			return
		}
		uuid, _ := c["uuid"].(string)
		if ng := find(m.data.NodeGroups[uuid], r.PathValue("ng")); ng != nil {
			WriteJSON(w, 200, ng)
			return
		}
		magnumError(w, 404, "Nodegroup "+r.PathValue("ng")+" could not be found.")
	})
	versioned := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("OpenStack-API-Minimum-Version", "container-infra 1.1")
		w.Header().Set("OpenStack-API-Maximum-Version", "container-infra 1.14")
		if v := r.Header.Get("OpenStack-API-Version"); v != Microversion {
			// The stand-in insists on the version the client must speak (Magnum itself
			// would serve 1.1 to a request without the header).
			magnumError(w, http.StatusNotAcceptable, fmt.Sprintf("stand-in: want OpenStack-API-Version: %s, got %q", Microversion, v))
			return
		}
		w.Header().Set("OpenStack-API-Version", Microversion)
		mux.ServeHTTP(w, r)
	})
	m.Server = NewServer(t, ks, versioned)
	return m
}

// Update changes what the stand-in serves, under its lock: the next request sees the
// result. Change updated_at where Magnum would (every cluster and node group save).
func (m *Magnum) Update(f func(d *Data)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.data)
}

// list answers one page of a collection, with Magnum's limit/marker pagination.
func (m *Magnum) list(w http.ResponseWriter, r *http.Request, key, resource string, items func(*Data) []map[string]any, fields []string) {
	q := r.URL.Query()
	if !CheckQuery(w, q, "limit", "marker", "sort_key", "sort_dir") {
		return
	}
	limit := MaxLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			magnumError(w, 400, "Invalid limit "+v)
			return
		}
		limit = min(n, MaxLimit)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	all := items(&m.data)
	start := 0
	if mk := q.Get("marker"); mk != "" {
		i := slices.IndexFunc(all, func(it map[string]any) bool { return it["uuid"] == mk })
		if i < 0 {
			magnumError(w, 404, "Marker "+mk+" could not be found.")
			return
		}
		start = i + 1
	}
	page := all[start:min(start+limit, len(all))]
	out := map[string]any{key: project(page, fields)}
	if len(page) > 0 && len(page) == limit {
		out["next"] = fmt.Sprintf("http://%s/v1/%s?sort_key=id&sort_dir=asc&limit=%d&marker=%s",
			r.Host, resource, limit, page[len(page)-1]["uuid"])
	}
	WriteJSON(w, 200, out)
}

// toInt reads a JSON number a test stored as int or float64.
func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// find returns the item whose uuid or name is ident.
func find(items []map[string]any, ident string) map[string]any {
	for _, it := range items {
		if it["uuid"] == ident || it["name"] == ident {
			return it
		}
	}
	return nil
}

// project keeps only fields of each item (all of them when fields is nil).
func project(items []map[string]any, fields []string) []map[string]any {
	out := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if fields == nil {
			out = append(out, it)
			continue
		}
		p := map[string]any{}
		for _, f := range fields {
			p[f] = it[f]
		}
		out = append(out, p)
	}
	return out
}

// magnumError writes Magnum's error document.
func magnumError(w http.ResponseWriter, status int, title string) {
	WriteJSON(w, status, map[string]any{"errors": []map[string]any{{"request_id": "", "code": "",
		"status": status, "title": title, "detail": title, "links": []any{}}}})
}
