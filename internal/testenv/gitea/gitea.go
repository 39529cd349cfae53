// Package gitea runs a real Gitea for tests: the binary hack/gitea.sh builds from the Go
// module proxy, on sqlite, on a loopback port, with three users made through its own CLI
// (the admin ops, a reviewer, and serve's bot magnum-bot), each with an access token.
// Review mode is tested against this server rather than a fake of its API, so the API
// shapes, branch protection and webhook signatures are Gitea's own.
//
// Tests that need it skip with one line when the binary is missing, and fail instead when
// CI is set. Every helper fails the test on error: call them from the test's goroutine.
package gitea

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// Version is the Gitea release hack/gitea.sh builds and this harness runs.
const Version = "v1.26.0"

// Server is a running Gitea, stopped when the test that started it ends.
type Server struct {
	// URL is the server's root, http://127.0.0.1:PORT, without a trailing slash.
	URL string
	// Ops is the site administrator; repositories are created in its name.
	Ops User
	// Reviewer approves, merges and closes pull requests.
	Reviewer User
	// Bot is magnum-bot, the user serve pushes and opens pull requests as.
	Bot User

	t       testing.TB
	dir     string // the temporary directory holding app.ini, the work path and the log
	bin     string
	ini     string
	logPath string
}

// User is a Gitea account and an access token for it (scopes: write:repository,
// write:issue, write:user). Over HTTP, Git accepts the token as the password.
type User struct {
	Name, Email, Password, Token string
}

// locate finds the binary and its options directory in dir (GITEA_BIN, or the cache
// hack/gitea.sh writes to). It returns "" for both when either is missing.
func locate(dir string) (bin, options string) {
	bin = filepath.Join(dir, "gitea-"+Version)
	options = filepath.Join(dir, "options-"+Version)
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", ""
	}
	if fi, err := os.Stat(filepath.Join(options, "locale")); err != nil || !fi.IsDir() {
		return "", ""
	}
	return bin, options
}

// binDir is where to look for the binary: $GITEA_BIN (the directory hack/gitea.sh prints
// on its last line), else the cache it builds into.
func binDir() string { return testenv.BinDir("GITEA_BIN", "gitea") }

// Start runs a new Gitea for the test: it writes its configuration, migrates the database,
// creates the three users and their tokens through the CLI, starts the web server and
// waits until the API answers. It is stopped, and its files removed, when the test ends;
// if the test failed, Gitea's log is printed first.
func Start(t testing.TB) *Server {
	t.Helper()
	dir := binDir()
	bin, options := locate(dir)
	if bin == "" {
		msg := "gitea " + Version + " not found in " + dir + " (build it with hack/gitea.sh; GITEA_BIN names its directory)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &Server{t: t, dir: t.TempDir(), bin: bin}
	s.configure(options)
	s.gitea("migrate")
	s.Ops = s.createUser("ops", true)
	s.Reviewer = s.createUser("reviewer", false)
	s.Bot = s.createUser("magnum-bot", false)
	s.startWeb()
	return s
}
