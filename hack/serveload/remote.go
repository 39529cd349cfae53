package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// remote is a Git smart-HTTP server (git http-backend behind net/http/cgi, as a Git
// hosting service serves pushes) with one bare repository, r.git, holding one commit on
// main.
type remote struct {
	URL string
	srv *http.Server
}

// startRemote creates the repository under root and serves it on a loopback port.
func startRemote(root string) (*remote, error) {
	out, err := git("", "--exec-path")
	if err != nil {
		return nil, err
	}
	bare := filepath.Join(root, "r.git")
	work := filepath.Join(root, "seed")
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"-C", bare, "config", "http.receivepack", "true"},
		{"init", "-q", "-b", "main", work},
	} {
		if _, err := git("", args...); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("clusters\n"), 0o644); err != nil {
		return nil, err
	}
	for _, args := range [][]string{{"add", "README.md"}, {"commit", "-q", "-m", "start"}, {"push", "-q", bare, "main"}} {
		if _, err := git(work, args...); err != nil {
			return nil, err
		}
	}
	h := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(out), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln) //nolint:errcheck // stopped by Close
	return &remote{URL: "http://" + ln.Addr().String() + "/r.git", srv: srv}, nil
}

func (r *remote) Close() { r.srv.Close() }

// git runs git in dir (the current directory when empty), never prompting.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=serveload", "GIT_AUTHOR_EMAIL=serveload@localhost",
		"GIT_COMMITTER_NAME=serveload", "GIT_COMMITTER_EMAIL=serveload@localhost", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
