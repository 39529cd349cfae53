package argocd

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"time"
)

// startRedis runs redis-server for the two controllers' caches, as the argocd-redis
// Deployment does, and returns its address once it answers PING. Flags:
//
//   - --bind 127.0.0.1 --port: loopback only, on a port of the test's;
//   - --save "" --appendonly no: no persistence, as Argo CD's own Redis runs (a cache:
//     nothing in it must outlive the test);
//   - --protected-mode yes: refuse other hosts even though no password is set (Argo CD's
//     manifests set one through the argocd-redis Secret; on loopback it would only add a
//     secret to pass around);
//   - --dir: its working directory under the test's, so nothing lands in the cwd.
func (a *Argo) startRedis(bin string) string {
	t := a.t
	t.Helper()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	p := a.launch("redis", bin, []string{"--bind", "127.0.0.1", "--port", port, "--save", "",
		"--appendonly", "no", "--protected-mode", "yes", "--dir", a.mkdir("redis-data"),
		"--logfile", ""}, nil)
	deadline := time.Now().Add(readyTimeout)
	for {
		err := ping(addr)
		if err == nil {
			return addr
		}
		select {
		case <-p.exited:
			t.Fatalf("redis-server exited before answering: %v\n%s", p.err, p.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer PING within %s: %v\n%s", readyTimeout, err, p.tail())
		}
	}
}

// ping sends PING in Redis's inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis answered %q", strings.TrimSpace(line))
	}
	return nil
}
