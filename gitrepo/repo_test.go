package gitrepo_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
)

// TestOpenHistorySince: a clone bounded by time as well as count takes more commits while
// the oldest it holds is younger than History.Since, up to History.MaxCommits; a commit
// older than Since ends it.
func TestOpenHistorySince(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	url := s.newRepo("since", true)
	work := t.TempDir()
	git(t, "", "clone", "-q", s.dir("since"), work)
	// 60 commits: the first 20 a day old, the last 40 from now.
	for i := range 60 {
		os.WriteFile(filepath.Join(work, "f"), []byte{byte(i)}, 0o644)
		git(t, work, "add", "f")
		cmd := exec.Command("git", "commit", "-q", "-m", "c")
		cmd.Dir, cmd.Env = work, append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.org",
			"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.org")
		if i < 20 {
			cmd.Env = append(cmd.Env, "GIT_COMMITTER_DATE="+time.Now().Add(-24*time.Hour).Format(time.RFC3339))
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	tests := []struct {
		name    string
		history gitrepo.History
		want    int
	}{
		{"count only", gitrepo.History{Commits: 3}, 3},
		{"young commits: more, up to the cap", gitrepo.History{Commits: 3, Since: time.Hour, MaxCommits: 30}, 30},
		{"a commit older than since ends it", gitrepo.History{Commits: 3, Since: time.Hour, MaxCommits: 1000}, 48},
		{"the whole history", gitrepo.History{Commits: 3, Since: 48 * time.Hour, MaxCommits: 1000}, 61},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions(url)
			o.History = tt.history
			o.Now = time.Now // the commits' times are the clock's
			r := open(t, o)
			n := 0
			if err := r.Walk(context.Background(), func(gitrepo.CommitInfo) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
			if n != tt.want {
				t.Errorf("%d commits held, want %d", n, tt.want)
			}
		})
	}
}

func TestBadRemotes(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	s.user = "magnum"
	s.setPassword("right-password")
	url := s.newRepo("r", true)
	head := func() string { return strings.TrimSpace(git(t, s.dir("r"), "rev-parse", "main")) }
	before := head()
	ctx := context.Background()

	good := testOptions(url)
	good.Auth = gitrepo.Auth{Username: "magnum", Password: "right-password"}
	if _, err := gitrepo.Open(ctx, good); err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	// An access token is sent as the basic-auth password (GitHub, GitLab and Gitea accept
	// tokens this way).
	tok := testOptions(url)
	tok.Auth = gitrepo.Auth{Username: "magnum", Token: "right-password"}
	if _, err := gitrepo.Open(ctx, tok); err != nil {
		t.Errorf("token: %v", err)
	}

	cases := []struct {
		name string
		opts func() gitrepo.Options
		want error
	}{
		{"wrong credentials", func() gitrepo.Options {
			o := good
			o.Auth.Password = "wrong"
			return o
		}, gitrepo.ErrAuthentication},
		{"no credentials", func() gitrepo.Options { o := good; o.Auth = gitrepo.Auth{}; return o }, gitrepo.ErrAuthentication},
		{"missing branch", func() gitrepo.Options { o := good; o.Branch = "production"; return o }, gitrepo.ErrBranchNotFound},
		{"no such repository", func() gitrepo.Options {
			o := good
			o.URL = strings.Replace(url, "/r.git", "/nope.git", 1)
			return o
		}, gitrepo.ErrRepositoryNotFound},
	}
	for _, tc := range cases {
		_, err := gitrepo.Open(ctx, tc.opts())
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "wrong") {
			t.Errorf("%s: the error quotes the password: %v", tc.name, err)
		}
	}

	// A server that answers with a corrupted pack: a clear error, nothing pushed.
	r, err := gitrepo.Open(ctx, good)
	if err != nil {
		t.Fatal(err)
	}
	s.corrupt.Store(true)
	o := good
	o.MaxAttempts = 2
	if _, err := gitrepo.Open(ctx, o); err == nil {
		t.Error("cloning from a corrupted server succeeded")
	}
	_, err = r.Apply(ctx, change("x", map[string]string{"a": "1"}))
	if err == nil {
		t.Error("pushing to a corrupted server succeeded")
	}
	s.corrupt.Store(false)
	if head() != before {
		t.Error("a failed scenario wrote to the remote")
	}
	if err := (&gitrepo.Options{URL: "", Author: gitrepo.Signature{}}).Validate(); err == nil ||
		!strings.Contains(err.Error(), "url: required") || !strings.Contains(err.Error(), "author") {
		t.Errorf("Validate: %v", err)
	}
	bad := good
	bad.Auth = gitrepo.Auth{SSHKeyFile: "/k"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "known_hosts_file") {
		t.Errorf("ssh without known_hosts: %v", err)
	}
}

// gitServer is a real Git smart-HTTP server: git http-backend behind net/http/cgi, with
// optional basic auth, and switches to stop it or corrupt its answers.
type gitServer struct {
	t        testing.TB
	root     string
	addr     string
	user     string
	password atomic.Pointer[string]
	corrupt  atomic.Bool
	mu       sync.Mutex
	srv      *http.Server
	requests atomic.Int64
	// pushes counts receive-pack POSTs: one per push.
	pushes atomic.Int64
}

// setPassword is the basic-auth password the server accepts from now on.
func (s *gitServer) setPassword(p string) { s.password.Store(&p) }

// git runs the git CLI in dir (gitserver.Git).
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return gitserver.Git(t, dir, args...)
}

func newGitServer(t testing.TB) *gitServer {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	s := &gitServer{t: t, root: t.TempDir()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *gitServer) handler() http.Handler {
	backend := filepath.Join(strings.TrimSpace(git(s.t, "", "--exec-path")), "git-http-backend")
	cg := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + s.root, "GIT_HTTP_EXPORT_ALL=1"}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-receive-pack") {
			s.pushes.Add(1)
		}
		if s.user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != s.user || p != *s.password.Load() {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if s.corrupt.Load() && r.Method == http.MethodPost {
			w.Header().Set("Content-Type", "application/x-"+strings.TrimPrefix(filepath.Base(r.URL.Path), "")+"-result")
			w.Write([]byte("0008NAK\nPACK\x00\x00\x00\x02garbage-not-a-pack"))
			return
		}
		cg.ServeHTTP(w, r)
	})
}

func (s *gitServer) serve(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srv = &http.Server{Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
}

func (s *gitServer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

// restart listens again on the same address.
func (s *gitServer) restart() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.t.Errorf("restart: %v", err)
		return
	}
	s.serve(ln)
}

// newRepo creates a bare repository on the server; seeded repositories get one commit on
// main with a README. It returns the repository's URL.
func (s *gitServer) newRepo(name string, seeded bool) string {
	dir := bareRepo(s.t, filepath.Join(s.root, name+".git"))
	git(s.t, dir, "config", "http.receivepack", "true")
	git(s.t, dir, "config", "core.logAllRefUpdates", "always")
	if seeded {
		work := s.t.TempDir()
		git(s.t, "", "clone", "-q", dir, work)
		os.WriteFile(filepath.Join(work, "README.md"), []byte("# clusters\n"), 0o644)
		git(s.t, work, "add", "README.md")
		git(s.t, work, "commit", "-q", "-m", "initial")
		git(s.t, work, "push", "-q", "origin", "HEAD:main")
	}
	return "http://" + s.addr + "/" + name + ".git"
}

func (s *gitServer) dir(name string) string { return filepath.Join(s.root, name+".git") }

// bareRepo creates a bare repository with branch main at dir and makes the test end with
// git fsck --strict on it: whatever a test did, the repository must stay valid.
func bareRepo(t testing.TB, dir string) string {
	t.Helper()
	git(t, "", "init", "-q", "--bare", "-b", "main", dir)
	t.Cleanup(func() { fsckStrict(t, dir) })
	return dir
}

// fsckStrict runs git fsck --strict on a repository.
func fsckStrict(t testing.TB, dir string) {
	t.Helper()
	cmd := exec.Command("git", "fsck", "--strict", "--no-dangling", "--no-progress")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("git fsck --strict %s: %v\n%s", dir, err, out)
	}
}

// checkRepo runs git fsck --strict on the bare repository and on a fresh CLI clone, and
// returns the clone's directory.
func checkRepo(t testing.TB, bare string) string {
	t.Helper()
	fsckStrict(t, bare)
	clone := t.TempDir()
	git(t, "", "clone", "-q", bare, clone)
	git(t, clone, "fsck", "--strict", "--no-dangling")
	return clone
}

// onlyFastForwards checks the remote's reflog of a branch: each update must descend from
// the previous value, i.e. nothing was force-pushed.
func onlyFastForwards(t testing.TB, bare, branch string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(bare, "logs", "refs", "heads", branch))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		prev, next := f[0], f[1]
		n++
		if strings.Trim(prev, "0") == "" {
			continue
		}
		cmd := exec.Command("git", "merge-base", "--is-ancestor", prev, next)
		cmd.Dir = bare
		if err := cmd.Run(); err != nil {
			t.Errorf("reflog %s: %s → %s is not a fast-forward", branch, prev[:8], next[:8])
		}
	}
	return n
}

func fileAt(t testing.TB, bare, rev, path string) ([]byte, bool) {
	t.Helper()
	cmd := exec.Command("git", "show", rev+":"+path)
	cmd.Dir = bare
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, false
	}
	return out.Bytes(), true
}
