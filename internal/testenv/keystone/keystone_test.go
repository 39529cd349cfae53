package keystone_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
)

func TestMain(m *testing.M) { keystone.Main(m) }

func TestAdminTokenCatalog(t *testing.T) {
	ks := keystone.Start(t)
	pc, err := openstack.AuthenticatedClient(t.Context(), ks.AdminAuthOptions())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := pc.GetAuthResult().(tokens.CreateResult).ExtractServiceCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var public []string
	for _, e := range cat.Entries {
		for _, ep := range e.Endpoints {
			if e.Type == "identity" && ep.Interface == "public" && ep.RegionID == ks.Region {
				public = append(public, ep.URL)
			}
		}
	}
	if len(public) != 1 || public[0] != ks.AuthURL {
		t.Fatalf("public identity endpoints in %s = %v, want [%s]", ks.Region, public, ks.AuthURL)
	}
}

func TestStandInInCatalogRequiresToken(t *testing.T) {
	ks := keystone.Start(t)
	projectID, _ := ks.CreateProject(t)
	member := ks.CreateUser(t, projectID, "member")

	// A minimal network API: the version document gophercloud discovers, and one resource
	// echoing the caller's project.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"versions": [{"id": "v2.0", "status": "CURRENT", "links": []}]}`))
	})
	mux.Handle("GET /v2.0/whoami", ks.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := keystone.ScopeFrom(r.Context())
		json.NewEncoder(w).Encode(map[string]string{"project_id": s.ProjectID, "user_id": s.UserID})
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	region := ks.NewRegion(t)
	ks.RegisterService(t, region, "network", "neutron-stand-in", srv.URL)

	pc, err := openstack.AuthenticatedClient(t.Context(), member.AuthOptions(ks.AuthURL))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := openstack.NewNetworkV2(pc, gophercloud.EndpointOpts{Region: region})
	if err != nil {
		t.Fatalf("discovering the stand-in through the catalog: %v", err)
	}
	if nc.Endpoint != srv.URL+"/" {
		t.Fatalf("endpoint %q, want %q", nc.Endpoint, srv.URL+"/")
	}

	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantUser   string
	}{
		{"no token", "", 401, ""},
		{"bogus token", "gAAAAAB-not-a-token", 401, ""},
		{"member token", pc.Token(), 200, member.ID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", nc.ResourceBaseURL()+"whoami", nil)
			if tc.token != "" {
				req.Header.Set("X-Auth-Token", tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantStatus != 200 {
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
				return
			}
			var got map[string]string
			json.NewDecoder(resp.Body).Decode(&got)
			if got["user_id"] != tc.wantUser || got["project_id"] != projectID {
				t.Fatalf("scope %v, want user %s project %s", got, tc.wantUser, projectID)
			}
		})
	}
}

func TestGlanceBehindKeystone(t *testing.T) {
	ks := keystone.Start(t)
	g := ks.StartGlance(t)
	region := ks.NewRegion(t)
	g.Register(t, region)
	img := g.CreateImage(t, images.CreateOpts{Name: "harness-" + t.Name(), Visibility: ptr(images.ImageVisibilityPublic),
		Properties: map[string]string{"kube_version": "v1.33.7", "os_distro": "ubuntu"}})

	projectID, _ := ks.CreateProject(t)
	member := ks.CreateUser(t, projectID, "member")
	pc, err := openstack.AuthenticatedClient(t.Context(), member.AuthOptions(ks.AuthURL))
	if err != nil {
		t.Fatal(err)
	}
	ic, err := openstack.NewImageV2(pc, gophercloud.EndpointOpts{Region: region})
	if err != nil {
		t.Fatalf("discovering Glance through the catalog: %v", err)
	}
	got, err := images.Get(t.Context(), ic, img.ID).Extract()
	if err != nil {
		t.Fatalf("%v\n%s", err, g.Log())
	}
	if got.Properties["kube_version"] != "v1.33.7" || got.Properties["os_distro"] != "ubuntu" {
		t.Fatalf("properties %v", got.Properties)
	}

	// Glance's authtoken middleware refuses a token Keystone does not know.
	bogus := *ic
	bogus.ProviderClient = &gophercloud.ProviderClient{TokenID: "gAAAAAB-not-a-token", HTTPClient: http.Client{}}
	_, err = images.Get(t.Context(), &bogus, img.ID).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Fatalf("bogus token: %v, want 401", err)
	}
}

func TestStartPrivateStopsProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second Keystone (15–20 s)")
	}
	var pid int
	t.Run("run", func(t *testing.T) {
		ks := keystone.StartPrivate(t)
		pid = ks.Pid()
		resp, err := http.Get(ks.AuthURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	})
	if pid == 0 {
		return // skipped
	}
	// Cleanup ran when the subtest ended: the process must be gone (and reaped).
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("keystone pid %d still alive after cleanup (kill 0: %v)", pid, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }
