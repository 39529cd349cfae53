// Package gitserver runs a real Git smart-HTTP server for tests: git http-backend behind
// net/http/cgi on a loopback port, serving bare repositories it creates, with pushes on.
package gitserver

import (
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
)

// Server is a running Git smart-HTTP server.
type Server struct {
	t    testing.TB
	Root string
	URL  string
	// passwords, once set, are the basic-auth passwords a request must carry one of.
	passwords atomic.Pointer[[]string]
}

// RequireBasicAuth makes every request from now on carry basic auth with one of the
// passwords (any user name), as a forge checks an access token; none lifts it. Calling it
// again rotates what is accepted.
func (s *Server) RequireBasicAuth(passwords ...string) { s.passwords.Store(&passwords) }

// Start serves the bare repositories under a new temporary directory until the test ends.
// When the test ends, every object of every repository is scanned for the fixtures' secret
// values (package leakcheck).
// It skips the test when git is not installed (and fails it in CI, where it must be).
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not installed")
		}
		t.Skip("git is not installed")
	}
	s := &Server{t: t, Root: t.TempDir()}
	// Registered after TempDir, so it runs before the repositories are removed.
	t.Cleanup(func() { leakcheck.Repos(t, s.Root) })
	backend := filepath.Join(strings.TrimSpace(s.Git("", "--exec-path")), "git-http-backend")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ps := s.passwords.Load(); ps != nil && len(*ps) > 0 {
			_, p, ok := r.BasicAuth()
			if !ok || !slices.Contains(*ps, p) {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln) //nolint:errcheck // stopped by Close
	t.Cleanup(func() { srv.Close() })
	s.URL = "http://" + ln.Addr().String()
	return s
}

// Init creates an empty bare repository whose HEAD is main, accepting pushes over HTTP,
// and returns its URL.
func (s *Server) Init(name string) string {
	dir := s.Dir(name)
	s.Git("", "init", "-q", "--bare", "-b", "main", dir)
	s.Git(dir, "config", "http.receivepack", "true")
	return s.URL + "/" + name
}

// Dir is where a repository lives on disk.
func (s *Server) Dir(name string) string { return filepath.Join(s.Root, name) }

// Git runs git in dir and returns its output; it fails the test on error.
func (s *Server) Git(dir string, args ...string) string {
	s.t.Helper()
	return Git(s.t, dir, args...)
}

// Git runs git in dir, as a test user that never prompts, and returns its output; it
// fails t on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.org",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.org", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Fsck runs git fsck --strict on a repository.
func (s *Server) Fsck(name string) {
	s.t.Helper()
	s.Git(s.Dir(name), "fsck", "--strict")
}
