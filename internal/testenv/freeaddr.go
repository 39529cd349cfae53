package testenv

import (
	"net"
	"testing"
)

// FreeAddr returns a loopback address no listener holds now, for a process the test
// starts to bind. Another process may take it first; tests that start many servers at
// once (test/e2e) hand out ports of their own instead.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
