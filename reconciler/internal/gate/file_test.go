package gate

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGateFile: Save keeps the settled directories for Load, only under a build, whole or
// not at all; Load takes nothing from a file of another format and refuses a damaged one.
func TestGateFile(t *testing.T) {
	t.Parallel()
	key := sha256.Sum256([]byte("a directory"))
	deps := []PathHash{{"clusters/ns/namespace.yaml", "3b18e512dba79e4c8300dd08aeb37f8e728b8dad"}, {"clusters/chart.yaml", ""}}
	saved := func(t *testing.T, build string) string {
		t.Helper()
		g := &Gate{Build: build, File: filepath.Join(t.TempDir(), "settled")}
		g.Settle(key, deps)
		if err := g.Save(); err != nil {
			t.Fatal(err)
		}
		return g.File
	}
	hashes := map[string]string{deps[0].Path: deps[0].Hash}
	for _, tc := range []struct {
		name    string
		file    func(t *testing.T) string
		build   string
		settled bool
		err     string
	}{
		{name: "saved and loaded", build: "b", settled: true, file: func(t *testing.T) string { return saved(t, "b") }},
		{name: "nothing saved without a build", build: "b", file: func(t *testing.T) string { return saved(t, "") }},
		{name: "nothing loaded without a build", file: func(t *testing.T) string { return saved(t, "b") }},
		{name: "no file yet", build: "b", file: func(t *testing.T) string { return filepath.Join(t.TempDir(), "settled") }},
		{name: "another format", build: "b", file: func(t *testing.T) string {
			f := saved(t, "b")
			b, _ := os.ReadFile(f)
			return write(t, f, strings.Replace(string(b), "directories 1", "directories 2", 1))
		}},
		{name: "damaged", build: "b", err: "settled", file: func(t *testing.T) string {
			f := saved(t, "b")
			b, _ := os.ReadFile(f)
			return write(t, f, string(b[:len(b)-8]))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.file(t)
			g := &Gate{Build: tc.build, File: f}
			err := g.Load()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Load: %v, want an error with %q", err, tc.err)
			}
			if got := g.IsSettled(key, hashes); got != tc.settled {
				t.Errorf("settled after Load: %v, want %v", got, tc.settled)
			}
			if leftovers, _ := filepath.Glob(f + ".*"); len(leftovers) > 0 {
				t.Errorf("Save left %v", leftovers)
			}
		})
	}
}

func write(t *testing.T, f, content string) string {
	t.Helper()
	if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}
