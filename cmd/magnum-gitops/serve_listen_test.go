package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// TestServeRefusesPlainHTTPOutsideLoopback: serve's listen decision (serve.go, with
// config.Serve.CheckListen). Plain HTTP on every interface, from serve.listen or --listen,
// is bad input (exit status 2) naming the setting and serve.tls, decided before the clone:
// the Git URL here answers nothing, and the error is not about it.
func TestServeRefusesPlainHTTPOutsideLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, serve string
		args        []string
		names       []string
	}{
		{"serve.listen on every interface", "{listen: ':0'}", nil, []string{"serve.listen", "serve.tls", "serve.allow_plain_http"}},
		{"serve.listen on 0.0.0.0", "{listen: '0.0.0.0:0'}", nil, []string{"serve.listen", "serve.tls"}},
		{"--listen over a loopback serve.listen", "{listen: '127.0.0.1:0'}", []string{"--listen", ":0"}, []string{"--listen", "serve.tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.yaml")
			doc := "git:\n  url: http://127.0.0.1:1/nothing.git\n  author: {name: m, email: m@example.org}\nserve: " + tc.serve + "\n"
			if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := run(t, "", append([]string{"serve", "--config", cfg, "--objects", os.DevNull, "--leader-elect=false"}, tc.args...)...)
			if !errors.Is(err, v1alpha1.ErrInvalidInput) {
				t.Fatalf("serve = %v, want bad input (exit status 2)", err)
			}
			for _, want := range tc.names {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: does not name %s", err, want)
				}
			}
		})
	}
}

// TestServeListens: what serve does accept on every interface. With
// serve.allow_plain_http it serves plain HTTP and logs one warning naming the address; with
// serve.tls it serves HTTPS with the configured certificate (the ops listener stays plain).
func TestServeListens(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	git := gitserver.Start(t)
	t.Run("plain when allowed", func(t *testing.T) {
		dir := t.TempDir()
		cfg := serveConfig(t, dir, git.Init("plain.git"), "plain-token")
		appendServe(t, cfg, "  allow_plain_http: true\n")
		addr := everyInterface(t)
		p := startServeWith(t, []string{"serve", "--config", cfg, "--listen", addr, "--objects", os.DevNull, "--log-format", "json"})
		defer func() { _ = p.cmd.Process.Kill(); _, _ = p.cmd.Process.Wait() }()
		if code, _ := getToken(t, addr, "/version", ""); code != http.StatusOK {
			t.Errorf("GET /version in plain HTTP: %d", code)
		}
		logs := p.logs.String()
		if n := strings.Count(logs, "serve.allow_plain_http allows"); n != 1 || !strings.Contains(logs, `"listen":"`+addr+`"`) {
			t.Errorf("%d warnings naming the address %s, want one:\n%s", n, addr, logs)
		}
	})
	t.Run("TLS renewed in place", func(t *testing.T) {
		dir := t.TempDir()
		cfg := serveConfig(t, dir, git.Init("tls.git"), "tls-token")
		certPEM, keyPEM := serveCertificate(t)
		crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		for f, b := range map[string]string{crt: certPEM, key: keyPEM} {
			if err := os.WriteFile(f, []byte(b), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		ops := testenv.FreeAddr(t)
		appendServe(t, cfg, fmt.Sprintf("  ops_listen: %s\n  tls: {cert_file: %s, key_file: %s}\n", ops, crt, key))
		addr := everyInterface(t)
		cmd := exec.Command(os.Args[0], "serve", "--config", cfg, "--listen", addr, "--objects", os.DevNull, "--log-format", "json")
		cmd.Env = append(os.Environ(), "MAGNUM_GITOPS_RUN_MAIN=1", "TMPDIR="+t.TempDir())
		logs := leakcheck.Log(t, "serve's log")
		cmd.Stderr = logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(certPEM))
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		_, port, _ := net.SplitHostPort(addr)
		url := "https://127.0.0.1:" + port + "/version"
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := client.Get(url)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "eventAPIVersions") {
					t.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no HTTPS on %s: %v\n%s", addr, err, logs)
			}
		}
		// cert-manager renews the certificate in its Secret: new connections get the new one,
		// and events posted meanwhile are all answered.
		renewedPEM, renewedKey := serveCertificate(t)
		pool.AppendCertsFromPEM([]byte(renewedPEM))
		renewed, _ := pem.Decode([]byte(renewedPEM))
		for f, b := range map[string]string{crt: renewedPEM, key: renewedKey} {
			if err := os.WriteFile(f+".new", []byte(b), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(f+".new", f); err != nil {
				t.Fatal(err)
			}
		}
		fresh := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		served := false
		for i, deadline := 0, time.Now().Add(10*time.Second); !served; i++ {
			req, _ := http.NewRequest(http.MethodPost, "https://127.0.0.1:"+port+"/v1/events", bytes.NewReader(resizeEvent(t, 7, i+1)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer tls-token")
			resp, err := fresh.Do(req)
			if err != nil {
				t.Fatalf("event %d during the renewal: %v", i, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("event %d during the renewal answered %d", i, resp.StatusCode)
			}
			served = bytes.Equal(resp.TLS.PeerCertificates[0].Raw, renewed.Bytes)
			if !served && time.Now().After(deadline) {
				t.Fatal("the renewed certificate is not served 10 s after it was written")
			}
			time.Sleep(200 * time.Millisecond)
		}
		if resp, err := http.Get("http://127.0.0.1:" + port + "/version"); err == nil {
			if resp.StatusCode == http.StatusOK {
				t.Error("the API answers plain HTTP too")
			}
			resp.Body.Close()
		}
		if resp, err := http.Get("http://" + ops + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("the ops listener in plain HTTP: %v %v", resp, err)
		} else {
			resp.Body.Close()
		}
		if strings.Contains(logs.String(), "allow_plain_http") {
			t.Errorf("a plain-HTTP warning with TLS on:\n%s", logs)
		}
	})
}

// appendServe adds lines to the serve section serveConfig writes last.
func appendServe(t *testing.T, cfg, lines string) {
	t.Helper()
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, lines...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// everyInterface is 0.0.0.0 with a port free a moment ago: an address that is not loopback.
func everyInterface(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprintf("0.0.0.0:%d", ln.Addr().(*net.TCPAddr).Port)
}

// serveCertificate is a self-signed certificate for 127.0.0.1, and its key, in PEM.
func serveCertificate(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "magnum-gitops"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}))
}
