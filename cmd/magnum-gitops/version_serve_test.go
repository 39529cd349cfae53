package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/magnum-gitops/magnum-gitops/internal/buildinfo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
	"github.com/magnum-gitops/magnum-gitops/reconciler/httpapi"
)

// TestServeRegistry: serve's registry holds the build's labels on a constant 1, and the Go
// runtime's and the process's metrics.
func TestServeRegistry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		info buildinfo.Info
		want string
	}{
		{name: "make build", info: buildinfo.Info{Version: "0.2.0", Commit: "1f0d7522cb339160ec0ee028c2a3d2df13238985", GoVersion: "go1.26.8"},
			want: `magnum_gitops_build_info{commit="1f0d7522cb339160ec0ee028c2a3d2df13238985",go_version="go1.26.8",version="0.2.0"} 1`},
		{name: "no commit recorded", info: buildinfo.Info{Version: "0.0.0-dev", GoVersion: "go1.26.8"},
			want: `magnum_gitops_build_info{commit="",go_version="go1.26.8",version="0.0.0-dev"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := "# HELP magnum_gitops_build_info The build serving: its release, commit and Go version, as labels of a constant 1.\n" +
				"# TYPE magnum_gitops_build_info gauge\n" + tc.want + "\n"
			reg := serveRegistry(tc.info)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "magnum_gitops_build_info"); err != nil {
				t.Error(err)
			}
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]bool{}
			for _, f := range families {
				names[f.GetName()] = true
			}
			for _, n := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} {
				if !names[n] {
					t.Errorf("serve's registry has no %s", n)
				}
			}
		})
	}
}

// TestServeAnnouncesItsVersion: the real serve logs its build first, exports it as
// magnum_gitops_build_info, answers GET /version without a token, and names its release in
// a header of every API answer.
func TestServeAnnouncesItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	cfg := serveConfig(t, t.TempDir(), url, "version-token")
	addr := testenv.FreeAddr(t)
	proc := startServe(t, cfg, addr)
	defer func() { _ = proc.cmd.Process.Kill(); _, _ = proc.cmd.Process.Wait() }()
	// The subprocess is this test binary: the same build.
	want := buildinfo.Read()

	first, _, _ := strings.Cut(proc.logs.String(), "\n")
	var line map[string]any
	if err := json.Unmarshal([]byte(first), &line); err != nil {
		t.Fatalf("serve's first log line %q: %v", first, err)
	}
	if line["version"] != want.Version || line["commit"] != want.Commit || line["go_version"] != want.GoVersion {
		t.Errorf("serve's first log line %s, want version %q, commit %q, go_version %q", first, want.Version, want.Commit, want.GoVersion)
	}

	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if _, metrics := get("/metrics"); !strings.Contains(metrics, fmt.Sprintf("\nmagnum_gitops_build_info{commit=%q,go_version=%q,version=%q} 1\n",
		want.Commit, want.GoVersion, want.Version)) {
		t.Errorf("/metrics has no build_info of %+v:\n%s", want, metrics)
	}
	resp, body := get("/version")
	var got buildinfo.Info
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /version: %s %s (%v)", resp.Status, body, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GET /version (-buildinfo.Read +answer):\n%s", diff)
	}
	for _, path := range []string{"/version", "/v1/clusters/3e9b7c52-1d4a-4f8e-9b6c-000000000000"} {
		if resp, _ := get(path); resp.Header.Get(httpapi.VersionHeader) != want.Version {
			t.Errorf("GET %s (%s): %s %q, want %q", path, resp.Status, httpapi.VersionHeader, resp.Header.Get(httpapi.VersionHeader), want.Version)
		}
	}
}
