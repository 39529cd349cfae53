// Package leakcheck finds the fixture events' secret values in what a test run produced: log
// lines, errors, CLI output, and every object of a Git repository (blobs of every version,
// trees, commit messages). The tests that produce output hand it here, so a secret that
// reaches a log line, an error or a plaintext file in Git fails the run wherever it happens.
package leakcheck

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// Marker is in every made-up secret value of the fixtures and tests: a value that carries it
// never belongs in clear text anywhere.
const Marker = "NOT-REAL"

// minLen is the shortest secret value worth looking for: shorter ones (a PEM line's tail)
// would match by chance.
const minLen = 16

var (
	once    sync.Once
	secrets []string
	loadErr error
)

// Secrets lists the secret values of every fixture event: application credential secrets and
// each body line of every private key. It is read once per test binary.
func Secrets() ([]string, error) {
	once.Do(func() { secrets, loadErr = load() })
	return secrets, loadErr
}

func load() ([]string, error) {
	names, err := fixtures.EventNames()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if len(s) >= minLen && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, n := range names {
		data, err := fixtures.Events.ReadFile("events/" + n)
		if err != nil {
			return nil, err
		}
		ev, err := v1alpha1.DecodeEvent(data)
		if err != nil {
			// Some fixtures are bad input on purpose; they carry no secret worth finding.
			continue
		}
		if ev.Secrets == nil {
			continue
		}
		if ac := ev.Secrets.ApplicationCredential; ac != nil {
			add(ac.Secret.Reveal())
		}
		if c := ev.Secrets.Certificates; c != nil {
			for _, kp := range []*v1alpha1.KeyPair{c.CA, c.Etcd, c.FrontProxy, c.MagnumClient} {
				if kp == nil {
					continue
				}
				for _, line := range strings.Split(kp.Key.Reveal(), "\n") {
					if !strings.HasPrefix(line, "-----") {
						add(line)
					}
				}
			}
		}
	}
	return out, nil
}

// Find returns a description of the first secret in data, or "" when there is none. The
// description names which secret, never its value.
func Find(data []byte) string {
	if bytes.Contains(data, []byte(Marker)) {
		return "a value marked " + Marker
	}
	if bytes.Contains(data, []byte("PRIVATE KEY-----")) {
		return "a PEM private key"
	}
	list, err := Secrets()
	if err != nil {
		return "" // Check reports the load error
	}
	for i, s := range list {
		if bytes.Contains(data, []byte(s)) {
			return "fixture secret #" + strconv.Itoa(i) + " (" + s[:4] + "…)"
		}
	}
	return ""
}

// Check fails the test when data holds a secret value; where says what data is.
func Check(t testing.TB, where string, data []byte) {
	t.Helper()
	if _, err := Secrets(); err != nil {
		t.Fatalf("leakcheck: reading the fixtures' secrets: %v", err)
	}
	if what := Find(data); what != "" {
		t.Errorf("%s holds %s in clear", where, what)
	}
}

// Log returns a buffer for a log or a subprocess's output, safe for concurrent writes,
// whose whole content is checked when the test ends; where says what it holds.
func Log(t testing.TB, where string) *Buffer {
	t.Helper()
	b := &Buffer{}
	t.Cleanup(func() { Check(t, where, []byte(b.String())) })
	return b
}

// Repo checks every object of the Git repository at dir: every version of every file, every
// tree and every commit message. A directory that is not a repository (a test that failed
// before creating it) is skipped.
func Repo(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		if _, err := os.Stat(filepath.Join(dir, ".git", "objects")); err != nil {
			return
		}
	}
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch")
	out, err := cmd.Output()
	if err != nil {
		t.Errorf("leakcheck: reading the objects of %s: %v", dir, err)
		return
	}
	Check(t, "the Git repository "+filepath.Base(dir), out)
}

// Repos checks every Git repository directly under root (bare ones, name.git, or with a
// .git directory).
func Repos(t testing.TB, root string) {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			Repo(t, filepath.Join(root, e.Name()))
		}
	}
}

// Buffer is a bytes.Buffer safe for the concurrent writes of a logger or of exec's copying
// goroutine while the test reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (w *Buffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// String returns what was written so far.
func (w *Buffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
