package gitea

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds the wait for the web server's API; on a busy 2-core machine a
// cold start takes a few seconds.
const startTimeout = 90 * time.Second

// configure lays out the server's directory: app.ini under custom/conf (where Gitea
// looks for it), the work path with options/ linked to the cached translations (Gitea
// exits at start without them), and the log directory.
func (s *Server) configure(options string) {
	t := s.t
	t.Helper()
	for _, d := range []string{s.path("work"), s.path("custom", "conf"), s.path("log"), s.path("home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(options, s.path("work", "options")); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	s.ini = s.path("custom", "conf", "app.ini")
	s.logPath = s.path("log", "gitea.log")
	ini := appINI(iniConfig{Root: os.Geteuid() == 0, WorkPath: s.path("work"), Port: port, LogDir: s.path("log")})
	if err := os.WriteFile(s.ini, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// freePort returns a loopback port no listener holds now. Gitea binds it a moment later;
// another process could take it in between, which would show as a start failure with
// "address already in use" in the log.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// command is a Gitea command on this server's configuration. The work and custom paths go
// through Gitea's environment variables rather than flags, which not every subcommand
// takes; the caller's own GITEA_* variables are dropped so they cannot override them.
func (s *Server) command(args ...string) *exec.Cmd {
	cmd := exec.Command(s.bin, args...)
	env := []string{
		"GITEA_WORK_DIR=" + s.path("work"),
		"GITEA_CUSTOM=" + s.path("custom"),
		"HOME=" + s.path("home"),
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GITEA_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	cmd.Dir = s.path("work")
	return cmd
}

// gitea runs a CLI command to completion and returns its standard output. On failure the
// test fails with the command's name and its standard error only: the arguments hold
// passwords and the output of user creation holds a token.
func (s *Server) gitea(args ...string) string {
	s.t.Helper()
	var out, stderr bytes.Buffer
	cmd := s.command(args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		s.t.Fatalf("gitea %s: %v\n%s\n%s", args[0], err, stderr.Bytes(), s.tail(s.logPath))
	}
	return out.String()
}

// createUser creates a user with a random password and an access token through the CLI
// (`gitea admin user create`), as an operator would on a new server.
func (s *Server) createUser(name string, admin bool) User {
	s.t.Helper()
	u := User{Name: name, Email: name + "@example.org", Password: randomHex(12)}
	args := []string{"admin", "user", "create", "--username", u.Name, "--email", u.Email,
		"--password", u.Password, "--must-change-password=false",
		"--access-token", "--access-token-name", "test",
		"--access-token-scopes", "write:repository,write:issue,write:user"}
	if admin {
		args = append(args, "--admin")
	}
	const prefix = "Access token was successfully created... "
	for line := range strings.Lines(s.gitea(args...)) {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			u.Token = strings.TrimSpace(tok)
		}
	}
	if u.Token == "" {
		s.t.Fatalf("gitea admin user create %s: no access token in its output", name)
	}
	return u
}

// startWeb starts `gitea web` and waits until GET /api/v1/version answers with the
// expected version. The server is stopped (SIGTERM, then SIGKILL after 10 s) when the
// test ends; if the test failed, its logs are printed first.
func (s *Server) startWeb() {
	t := s.t
	t.Helper()
	out, err := os.Create(s.path("log", "web.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := s.command("web")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed once the process has exited and waitErr is set
	var waitErr error
	go func() { waitErr = cmd.Wait(); out.Close(); close(exited) }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gitea log:\n%s\ngitea web output:\n%s", s.tail(s.logPath), s.tail(s.path("log", "web.out")))
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		v, err := s.version()
		if err == nil && "v"+v == Version {
			return
		}
		if err == nil {
			t.Fatalf("gitea at %s is version %s, want %s", s.URL, v, Version)
		}
		select {
		case <-exited:
			t.Fatalf("gitea web exited before answering: %v\n%s\n%s", waitErr, s.tail(s.path("log", "web.out")), s.tail(s.logPath))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gitea web did not answer within %s: %v", startTimeout, err)
		}
	}
}

// version asks the API for the server's version.
func (s *Server) version() (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(s.URL + "/api/v1/version")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var v struct {
		Version string `json:"version"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return "", err
	}
	if v.Version == "" {
		return "", errors.New("no version in the answer")
	}
	return v.Version, nil
}

// tail is the last 16 KiB of a log file, for a failed test's output.
func (s *Server) tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer f.Close()
	const limit = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > limit {
		_, _ = f.Seek(-limit, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
