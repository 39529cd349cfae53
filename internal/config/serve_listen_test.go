package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// TestCheckListen: plain HTTP is served on loopback, or elsewhere only when
// serve.allow_plain_http says a TLS-terminating proxy is in front (and serve is told to
// warn); otherwise the refusal names the listen setting and serve.tls. With serve.tls
// every address is fine. An empty host is every interface, not loopback.
func TestCheckListen(t *testing.T) {
	t.Parallel()
	const tls = "tls: {cert_file: /c, key_file: /k}"
	for i, tc := range []struct {
		name, serve, addr string
		fromFlag          bool
		warn              bool
		err               []string // what the error names; none: accepted
	}{
		{"IPv4 loopback", "{}", "127.0.0.1:8080", false, false, nil},
		{"another 127/8 address", "{}", "127.3.2.1:8080", false, false, nil},
		{"IPv6 loopback", "{}", "[::1]:8080", false, false, nil},
		{"localhost", "{}", "localhost:8080", false, false, nil},
		{"localhost in capitals", "{}", "LOCALHOST:8080", false, false, nil},
		{"IPv4-mapped loopback", "{}", "[::ffff:127.0.0.1]:8080", false, false, nil},
		{"every interface", "{}", ":8080", false, false, []string{"serve.listen", `":8080"`, "serve.tls", "serve.allow_plain_http"}},
		{"0.0.0.0", "{}", "0.0.0.0:8080", false, false, []string{"serve.listen", "serve.tls"}},
		{"IPv6 any", "{}", "[::]:8080", false, false, []string{"serve.listen", "serve.tls"}},
		{"a routable address", "{}", "192.0.2.10:8080", false, false, []string{"serve.listen", "serve.tls"}},
		{"a host name", "{}", "magnum-gitops.example.org:8080", false, false, []string{"serve.listen", "serve.tls"}},
		{"from --listen", "{}", ":8080", true, false, []string{"--listen", "serve.tls"}},
		{"allowed plain, warned", "{allow_plain_http: true}", ":8080", false, true, nil},
		{"allowed plain on loopback: nothing to warn of", "{allow_plain_http: true}", "127.0.0.1:8080", false, false, nil},
		{"TLS on every interface", "{" + tls + "}", ":8443", false, false, nil},
		{"TLS on loopback", "{" + tls + "}", "127.0.0.1:8443", false, false, nil},
		{"no port", "{}", "127.0.0.1", false, false, []string{"serve.listen", "host:port"}},
		{"no port from --listen", "{allow_plain_http: true}", "x", true, false, []string{"--listen", "host:port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), strconv.Itoa(i)+".yaml")
			if err := os.WriteFile(p, []byte("serve: "+tc.serve+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			warn, err := cfg.Serve.CheckListen(tc.addr, tc.fromFlag)
			if tc.err == nil {
				if err != nil || warn != tc.warn {
					t.Fatalf("CheckListen(%q) = %v, %v; want %v, nil", tc.addr, warn, err, tc.warn)
				}
				return
			}
			if err == nil {
				t.Fatalf("CheckListen(%q) accepted plain HTTP (warn %v), want a refusal", tc.addr, warn)
			}
			for _, want := range tc.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not name %s", err, want)
				}
			}
			t.Log(err)
		})
	}
}

// TestAllowPlainHTTPWithTLS: both at once say two things; Load refuses it, naming the key,
// as bad input.
func TestAllowPlainHTTPWithTLS(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "both.yaml")
	if err := os.WriteFile(p, []byte("serve: {allow_plain_http: true, tls: {cert_file: /c, key_file: /k}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), "serve.allow_plain_http") || !errors.Is(err, v1alpha1.ErrInvalidInput) {
		t.Fatalf("Load = %v, want bad input naming serve.allow_plain_http", err)
	}
}
