package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// fileWriter returns a function that writes a file into a new temporary directory and
// returns its path: the configuration and key files a test hands the CLI.
func fileWriter(t *testing.T) func(name, content string) string {
	t.Helper()
	dir := t.TempDir()
	return func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// run executes the CLI in-process. Its output and error are scanned for secret values.
func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	what := "magnum-gitops " + strings.Join(args, " ")
	leakcheck.Check(t, what+" (stdout)", out.Bytes())
	leakcheck.Check(t, what+" (stderr)", errOut.Bytes())
	if err != nil {
		leakcheck.Check(t, what+" (error)", []byte(err.Error()))
	}
	return out.String(), errOut.String(), err
}

// fixture is the event most tests render: the create of prod-a.
const fixture = "../../fixtures/events/01-prod-a-create.yaml"

// env is the API server TestMain starts for the tests that need one (testenv.Require).
var env *testenv.Env

// TestMain lets the tests run this binary as the magnum-gitops CLI in a subprocess, and
// starts a real API server for the tests that need one.
func TestMain(m *testing.M) {
	if os.Getenv("MAGNUM_GITOPS_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(testenv.Main(m, &env))
}

// TestBadInputExitsTwo: every kind of bad input — a flag, an argument, an output format,
// a configuration value or a file the configuration names — exits 2 with a message naming
// it, as README says; nothing else does.
func TestBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	write := fileWriter(t)
	dir := t.TempDir()
	event := "../../fixtures/events/01-prod-a-create.yaml"
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"unknown flag", []string{"render", "--bogus"}, "--bogus"},
		{"an argument where none is taken", []string{"render", "-f", event, "extra"}, "extra"},
		{"unknown render output", []string{"render", "-f", event, "-o", "xml"}, "--output"},
		{"unknown status output", []string{"status", "--objects", os.DevNull, "-o", "xml"}, "--output"},
		{"unknown log level", []string{"serve", "--config", write("sl.yaml", "serve: {token_files: [x]}\n"), "--log-level", "verbose"}, "--log-level"},
		{"unknown log format", []string{"serve", "--config", write("s.yaml", "serve: {token_files: [x]}\n"), "--log-format", "xml"}, "--log-format"},
		{"missing required flag", []string{"render"}, `required flag(s) "filename" not set`},
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"missing event file", []string{"render", "-f", filepath.Join(dir, "absent-event.yaml")}, "absent-event.yaml"},
		{"missing objects file", []string{"status", "--objects", filepath.Join(dir, "absent-objects.yaml")}, "absent-objects.yaml"},
		{"malformed objects file", []string{"status", "--objects", write("objects.yaml", "kind: [\n")}, "objects.yaml"},
		{"a bad duration after a bare 0", []string{"render", "-f", event, "--config", write("d0.yaml", "openstack: {cache_ttl: 0, poller: {interval: 1x}}\n")}, "openstack.poller.interval: must be a duration"},
		{"missing config file", []string{"render", "-f", event, "--config", filepath.Join(dir, "absent.yaml")}, "--config"},
		{"missing magnum_conf", []string{"render", "-f", event, "--config", write("mc.yaml", "magnum_conf: "+filepath.Join(dir, "absent.conf")+"\n")}, "magnum_conf"},
		{"negative OpenStack timeout", []string{"render", "-f", event, "--config", write("os.yaml", "openstack: {timeout: -1s}\n")}, "openstack.timeout"},
		{"not a duration", []string{"render", "-f", event, "--config", write("cg.yaml", "openstack: {poller: {create_grace: soon}}\n")}, "openstack.poller.create_grace: must be a duration"},
		{"negative create grace", []string{"render", "-f", event, "--config", write("ncg.yaml", "openstack: {poller: {create_grace: -1m}}\n")}, "openstack.poller.create_grace: must not be negative"},
		{"unknown application credential mode", []string{"render", "-f", event, "--config", write("ac.yaml", "openstack: {poller: {application_credentials: foo}}\n")}, "openstack.poller.application_credentials"},
		{"site post-renderers with argo", []string{"render", "-f", event, "--format", "argo", "--config", write("pr.yaml",
			"flux: {post_renderers: [{kustomize: {patches: [{target: {kind: Cluster}, patch: '[{op: remove, path: /spec/paused}]'}]}}]}\n")},
			"flux.post_renderers: Argo CD Applications have no post-renderers"},
		{"a site post-renderer kustomize cannot apply", []string{"render", "-f", event, "--config", write("prt.yaml",
			"flux: {post_renderers: [{kustomize: {patches: [{patch: '[{op: remove, path: /spec/paused}]'}]}}]}\n")},
			"flux.post_renderers[0].kustomize.patches[0].target: must be set"},
		{"migrate without clusters", []string{"migrate", "--config", write("m.yaml", "{}\n")}, `required flag(s) "filename" not set`},
		{"migrate from an unknown source", []string{"migrate", "--source", "heat", "--config", write("m.yaml", "{}\n")}, "--source"},
		{"migrate --export from a file", []string{"migrate", "-f", event, "--export", "--config", write("m.yaml", "{}\n")}, "--export"},
		{"migrate from Magnum without OpenStack", []string{"migrate", "--source", "magnum", "--template-label", "capi", "--config", write("m.yaml", "{}\n")},
			"--source magnum: needs the openstack section"},
		{"migrate from Magnum selecting nothing", []string{"migrate", "--source", "magnum", "--config", write("mo.yaml", "openstack: {cloud: test}\n")},
			"set --template-label or --template-driver"},
		{"missing signing key", []string{"apply", "-f", event, "--insecure-plaintext-secrets", "--config",
			write("sk.yaml", "git: {url: file:///nonexistent.git, author: {name: a, email: a@example.org}, signing_key_file: "+filepath.Join(dir, "absent.asc")+"}\n")}, "git.signing_key_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := run(t, "", tc.args...)
			var stderr bytes.Buffer
			if code := exitCode(&stderr, err); code != 2 {
				t.Errorf("exit %d, want 2: %v", code, err)
			}
			if !strings.Contains(stderr.String(), tc.says) {
				t.Errorf("the message does not name %s: %s", tc.says, stderr.String())
			}
		})
	}
}
