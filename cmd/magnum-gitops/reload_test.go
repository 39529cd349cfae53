package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestServeRotatesCredentials: the real serve reads its Git token and its SOPS recipients
// file again when they change, as Kubernetes updates a mounted Secret, while events flow.
// A token rotated at the forge (with the usual overlap of old and new) keeps every event
// answered; a recipient added is encrypted to by the next Secret written; a file changed
// into one that does not load keeps the last good contents, is counted in
// magnum_gitops_reload_errors_total and logged, and no event is refused for it.
func TestServeRotatesCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	url := git.Init("clusters.git")
	git.RequireBasicAuth("git-token-one")
	dir := t.TempDir()
	write := func(path, contents string) { // a new file renamed over the old, as the kubelet does
		t.Helper()
		if err := os.WriteFile(path+".new", []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	recipient := func() string {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			t.Fatal(err)
		}
		return id.Recipient().String()
	}
	oldR, newR := recipient(), recipient()
	files := map[string]string{"token": "api-token\n", "git-token": "git-token-one\n",
		"recipients": "# age recipients of the cluster Secrets\n" + oldR + "\n",
		"digest.key": "q8Vd3kP0x2mB7nL4rT9wY1zA6cE5fH3jK0sU8vX2bN4=\n"}
	for name, contents := range files {
		write(filepath.Join(dir, name), contents)
	}
	cfg := filepath.Join(dir, "config.yaml")
	write(cfg, fmt.Sprintf(`git:
  url: %s
  author: {name: magnum-gitops, email: m@example.org}
  auth: {username: magnum-gitops, token_file: %s}
sops:
  age_recipients_file: %s
  digest_key_file: %s
serve:
  token_files: [%s]
`, url, filepath.Join(dir, "git-token"), filepath.Join(dir, "recipients"), filepath.Join(dir, "digest.key"), filepath.Join(dir, "token")))
	addr := testenv.FreeAddr(t)
	proc := startServe(t, cfg, addr)
	defer func() { _ = proc.cmd.Process.Kill(); _, _ = proc.cmd.Process.Wait() }()

	n := 0
	create := func(step string) string { // a new cluster, with its Secrets; returns its directory
		t.Helper()
		n++
		body, dir := createEvent(t, n)
		if _, ok := postEventToken(addr, body, "api-token"); !ok {
			t.Fatalf("%s: the event was refused", step)
		}
		return dir
	}
	recipientsOf := func(clusterDir string) string {
		t.Helper()
		clone := t.TempDir()
		gitserver.Git(t, "", "clone", "-q", "--branch", "main", git.Dir("clusters.git"), clone)
		b, err := os.ReadFile(filepath.Join(clone, clusterDir, "secret-cloud-credentials.sops.yaml"))
		if err != nil {
			t.Fatalf("the cluster's credential Secret: %v", err)
		}
		var got []string
		for _, r := range []string{oldR, newR} {
			if strings.Contains(string(b), "recipient: "+r) {
				got = append(got, r)
			}
		}
		return strings.Join(got, ",")
	}
	// 1. Before any rotation.
	if got := recipientsOf(create("start")); got != oldR {
		t.Errorf("start: the Secret is for %q, want the old recipient alone", got)
	}
	// 2. The Git token rotated: the forge accepts both, serve's file takes the new one, the
	// forge drops the old one. Every event is answered throughout.
	git.RequireBasicAuth("git-token-one", "git-token-two")
	write(filepath.Join(dir, "git-token"), "git-token-two\n")
	time.Sleep(1500 * time.Millisecond) // a file is looked at once a second at most
	git.RequireBasicAuth("git-token-two")
	create("git token rotated")
	// 3. A recipient added: the next Secret written is for both.
	write(filepath.Join(dir, "recipients"), oldR+"\n"+newR+"\n")
	time.Sleep(1500 * time.Millisecond)
	if got := recipientsOf(create("recipient added")); got != oldR+","+newR {
		t.Errorf("after the recipient was added, the Secret is for %q, want both", got)
	}
	// 4. Both files changed into ones that do not load: the last good ones stay.
	write(filepath.Join(dir, "git-token"), "\n")
	write(filepath.Join(dir, "recipients"), "age1-not-a-recipient\n")
	time.Sleep(1500 * time.Millisecond)
	if got := recipientsOf(create("bad files")); got != oldR+","+newR {
		t.Errorf("after a bad recipients file, the Secret is for %q, want the last good recipients", got)
	}
	metrics := func() string {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, want := range []string{`magnum_gitops_reload_errors_total{what="git_auth"} 1`, `magnum_gitops_reload_errors_total{what="age_recipients"} 1`} {
		if m := metrics(); !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	logs := proc.logs.String()
	if !strings.Contains(logs, "sops.age_recipients_file") || !strings.Contains(logs, "git.auth.token_file") {
		t.Errorf("serve's log does not name the refused files:\n%s", logs)
	}
	if strings.Contains(logs, "git-token-two") {
		t.Error("serve's log quotes the Git token")
	}
}

// createEvent is the create fixture for a new cluster n, and the directory its files go to.
func createEvent(t *testing.T, n int) ([]byte, string) {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = fmt.Sprintf("evt-create-%02d", n)
	ev.Cluster.UUID = fmt.Sprintf("5d1e2f3a-4b5c-4d6e-8f70-%012d", n)
	ev.Cluster.Name = fmt.Sprintf("rot%02d", n)
	ev.Cluster.StackID = fmt.Sprintf("rot%02d-stack", n)
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b, fmt.Sprintf("clusters/magnum/magnum-%s/%s", ev.Cluster.ProjectID, ev.Cluster.StackID)
}
