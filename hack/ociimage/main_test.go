package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testCreated is the commit date the tests build with.
const testCreated = "2026-11-28T00:22:12Z"

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// testBinaries builds a small static program for linux/amd64 and linux/arm64 once per test
// binary: real executables of both architectures, without the minutes magnum-gitops's own
// cross build takes (test/image runs the real one).
func testBinaries(t *testing.T) map[string]string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "ociimage-test-")
		if binErr != nil {
			return
		}
		src := filepath.Join(binDir, "src")
		if binErr = os.MkdirAll(src, 0o755); binErr != nil {
			return
		}
		for name, text := range map[string]string{
			"go.mod":  "module example.org/hello\n\ngo 1.26\n",
			"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
		} {
			if binErr = os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); binErr != nil {
				return
			}
		}
		for _, arch := range []string{"amd64", "arm64"} {
			cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(binDir, "linux-"+arch), ".")
			cmd.Dir = src
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOTOOLCHAIN=local", "GOFLAGS=")
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = &buildError{arch: arch, out: string(out), err: err}
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return map[string]string{
		"linux/amd64": filepath.Join(binDir, "linux-amd64"),
		"linux/arm64": filepath.Join(binDir, "linux-arm64"),
	}
}

type buildError struct {
	arch, out string
	err       error
}

func (e *buildError) Error() string {
	return "building the test binary for " + e.arch + ": " + e.err.Error() + "\n" + e.out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// layoutArgs are the flags of a layout of both test binaries in dir.
func layoutArgs(t *testing.T, dir string, extra ...string) []string {
	t.Helper()
	bins := testBinaries(t)
	return append([]string{"--output", dir,
		"--binary", "linux/amd64=" + bins["linux/amd64"], "--binary", "linux/arm64=" + bins["linux/arm64"],
		"--version", "0.2.0", "--revision", "0123456789abcdef0123456789abcdef01234567", "--created", testCreated}, extra...)
}

// buildLayout runs the program and returns the digest it printed; it fails the test on
// any exit status but 0.
func buildLayout(t *testing.T, args []string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("ociimage %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// TestRun: the digest printed is the one index.json names; bad input exits 2 naming what
// is wrong, and writes nothing.
func TestRun(t *testing.T) {
	t.Parallel()
	bins := testBinaries(t)
	tests := []struct {
		name     string
		args     func(dir string) []string
		wantCode int
		wantErr  string
	}{
		{name: "both platforms", args: func(dir string) []string { return layoutArgs(t, dir) }},
		{name: "no date", wantCode: 2, wantErr: "--created",
			args: func(dir string) []string {
				return []string{"--output", dir, "--binary", "linux/amd64=" + bins["linux/amd64"], "--version", "1", "--revision", "r"}
			}},
		{name: "no binary", wantCode: 2, wantErr: "--binary: at least one",
			args: func(dir string) []string {
				return []string{"--output", dir, "--version", "1", "--revision", "r", "--created", testCreated}
			}},
		{name: "missing binary file", wantCode: 1, wantErr: "--binary linux/s390x",
			args: func(dir string) []string {
				return layoutArgs(t, dir, "--binary", "linux/s390x=/nonexistent/magnum-gitops")
			}},
		{name: "missing CA bundle", wantCode: 1, wantErr: "apt-get install ca-certificates",
			args: func(dir string) []string { return layoutArgs(t, dir, "--ca-certificates", "/nonexistent/ca.crt") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "oci")
			var stdout, stderr bytes.Buffer
			code := run(tt.args(dir), &stdout, &stderr)
			if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want exit %d naming %q", code, stderr.String(), tt.wantCode, tt.wantErr)
			}
			if tt.wantCode != 0 {
				if _, err := os.Stat(filepath.Join(dir, "index.json")); err == nil {
					t.Error("a failed run wrote a layout")
				}
				return
			}
			data, err := os.ReadFile(filepath.Join(dir, "index.json"))
			if err != nil {
				t.Fatal(err)
			}
			var index struct {
				Manifests []struct {
					Digest      string            `json:"digest"`
					Annotations map[string]string `json:"annotations"`
				} `json:"manifests"`
			}
			if err := json.Unmarshal(data, &index); err != nil {
				t.Fatal(err)
			}
			printed := strings.TrimSpace(stdout.String())
			if len(index.Manifests) != 1 || index.Manifests[0].Digest != printed {
				t.Fatalf("printed %q, index.json %s", printed, data)
			}
			want := map[string]string{refNameAnnotation: "0.2.0", containerdAnnotation: "ghcr.io/magnum-gitops/magnum-gitops:0.2.0"}
			for k, v := range want {
				if got := index.Manifests[0].Annotations[k]; got != v {
					t.Errorf("index.json annotation %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
