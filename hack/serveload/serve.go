package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/serveload"
)

// serve is a running serve process.
type serve struct {
	target  serveload.Target
	logPath string
	cmd     *exec.Cmd
	exited  chan error
}

// startServe runs bin's serve in dir against the remote, with group commit on, status
// from an empty objects file (no management cluster) and no leader election; it returns
// once serve is ready and its resync at start is done.
func startServe(ctx context.Context, bin, dir, remoteURL string, o options) (*serve, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg, token, err := serveload.Setup{Dir: dir, Remote: remoteURL, Listen: addr,
		MaxEvents: o.maxEvents, MaxWait: o.maxWait, Plaintext: o.plaintext, CacheDir: o.cacheDir}.Write()
	if err != nil {
		return nil, err
	}
	objects := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(objects, nil, 0o600); err != nil {
		return nil, err
	}
	s := &serve{target: serveload.Target{URL: "http://" + addr, Token: token}, logPath: filepath.Join(dir, "serve.log")}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	args := []string{"serve", "--config", cfg, "--objects", objects, "--leader-elect=false",
		"--resync-interval", "0", "--shutdown-delay", "0s"}
	if o.plaintext {
		args = append(args, "--insecure-plaintext-secrets")
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()
	if err := serveload.WaitReady(ctx, s.target.URL, 2*time.Minute, s.exited); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w (its log: %s)", err, s.logPath)
	}
	return s, nil
}

// stop ends serve with SIGTERM (it drains: nothing is in flight by then), or kills it.
// Its exit status says nothing the load did not: it is dropped.
func (s *serve) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-s.exited:
	case <-time.After(45 * time.Second):
		_ = s.cmd.Process.Kill()
		err = <-s.exited
	}
	_ = err
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
