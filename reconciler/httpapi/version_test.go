package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
)

// TestVersion: GET /version answers the build to anyone; every answer, a refusal included,
// names the release in VersionHeader; the /v1 routes still need a token.
func TestVersion(t *testing.T) {
	build := buildinfo.Info{Version: "0.2.0", Commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985",
		BuildDate: "2026-11-28T09:12:48Z", GoVersion: "go1.26.8", Platform: "linux/amd64",
		EventAPIVersions: []string{v1alpha1.APIVersion}}
	srv := httptest.NewServer((&Server{Tokens: Tokens{[]byte("version-test-token")}, Build: &build}).Handler())
	defer srv.Close()
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
		answer                    *buildinfo.Info // the JSON body, when not nil
	}{
		{name: "version without a token", method: http.MethodGet, path: "/version", status: http.StatusOK, answer: &build},
		{name: "version with a wrong token", method: http.MethodGet, path: "/version", token: "wrong", status: http.StatusOK, answer: &build},
		{name: "HEAD version", method: http.MethodHead, path: "/version", status: http.StatusOK},
		{name: "POST version", method: http.MethodPost, path: "/version", status: http.StatusMethodNotAllowed},
		{name: "v1 without a token", method: http.MethodGet, path: "/v1/clusters/c-1", status: http.StatusUnauthorized},
		{name: "unknown path", method: http.MethodGet, path: "/versions", status: http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, http.NoBody)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get(VersionHeader); got != "0.2.0" {
				t.Errorf("%s: %q, want 0.2.0", VersionHeader, got)
			}
			if tc.answer == nil {
				return
			}
			var got buildinfo.Info
			dec := json.NewDecoder(resp.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*tc.answer, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVersionDefaultsToThisBinary: without Build, the answer is buildinfo.Read() with the
// JSON names the driver shim reads.
func TestVersionDefaultsToThisBinary(t *testing.T) {
	srv := httptest.NewServer((&Server{}).Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := buildinfo.Read()
	if got["version"] != want.Version || got["commit"] != want.Commit || got["goVersion"] != want.GoVersion ||
		!cmp.Equal(got["eventAPIVersions"], []any{v1alpha1.APIVersion}) {
		t.Errorf("GET /version = %v, want version %q, commit %q, goVersion %q, eventAPIVersions [%s]",
			got, want.Version, want.Commit, want.GoVersion, v1alpha1.APIVersion)
	}
}
