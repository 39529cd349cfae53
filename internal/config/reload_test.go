package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clock is a settable time for the watched files' checks.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// replace writes a file the way Kubernetes updates a mounted Secret: new contents in a new
// file, renamed over the old, so the path names another file.
func replace(t *testing.T, path, contents string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestTokenFilesRotate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "token-a"), filepath.Join(dir, "token-b")
	replace(t, a, "old-a\n")
	replace(t, b, "old-b")
	var refused []string
	tf, err := OpenTokenFiles([]string{a, b}, func(err error) { refused = append(refused, err.Error()) })
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	tf.w.now = c.now
	steps := []struct {
		name    string
		change  func()
		advance time.Duration
		want    string // the tokens, joined by ","
		refused int    // onInvalid calls so far
	}{
		{"as opened", func() {}, 0, "old-a,old-b", 0},
		{"a change is not looked at within the second", func() { replace(t, a, "new-a") }, 500 * time.Millisecond, "old-a,old-b", 0},
		{"then it is read", func() {}, time.Second, "new-a,old-b", 0},
		{"a change written in place", func() { _ = os.WriteFile(b, []byte("new-b-longer"), 0o600) }, time.Second, "new-a,new-b-longer", 0},
		{"an emptied file keeps the last tokens, told once", func() { replace(t, a, "  \n") }, time.Second, "new-a,new-b-longer", 1},
		{"and not told again until it changes", func() {}, time.Second, "new-a,new-b-longer", 1},
		{"a missing file keeps them too", func() { _ = os.Remove(a) }, time.Second, "new-a,new-b-longer", 2},
		{"fixed, it is read", func() { replace(t, a, "newer-a") }, time.Second, "newer-a,new-b-longer", 2},
	}
	for _, s := range steps {
		s.change()
		c.advance(s.advance)
		var got []string
		for _, tok := range tf.Tokens() {
			got = append(got, string(tok))
		}
		if strings.Join(got, ",") != s.want || len(refused) != s.refused {
			t.Fatalf("%s: tokens %q, %d refusals %q; want %q, %d", s.name, got, len(refused), refused, s.want, s.refused)
		}
	}
	for _, r := range refused {
		if strings.Contains(r, "old-") || strings.Contains(r, "new-") {
			t.Errorf("a refusal quotes a token: %s", r)
		}
	}
	if !strings.Contains(refused[0], "serve.token_files: "+a+" is empty") {
		t.Errorf("refusal %q does not name the file", refused[0])
	}
}

func TestOpenTokenFilesRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	replace(t, empty, "\n")
	for _, tc := range []struct {
		name, file, says string
	}{
		{"empty", empty, "serve.token_files: " + empty + " is empty"},
		{"missing", filepath.Join(dir, "absent"), "serve.token_files: stat " + filepath.Join(dir, "absent")},
	} {
		if _, err := OpenTokenFiles([]string{tc.file}, nil); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.says)
		}
	}
}

// selfSigned returns a certificate and key in PEM for name.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM string) {
	t.Helper()
	return selfSignedFor(t, name, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
}

// selfSignedFor is selfSigned valid from notBefore to notAfter.
func selfSignedFor(t *testing.T, name string, notBefore, notAfter time.Time) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

func TestTLSCertificateRotates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	cert1, key1 := selfSigned(t, "first.example.org")
	replace(t, certFile, cert1)
	replace(t, keyFile, key1)
	var s Serve
	s.TLS.CertFile, s.TLS.KeyFile = certFile, keyFile
	if cfg, err := s.TLSConfig(nil); err != nil || cfg.GetCertificate == nil || len(cfg.Certificates) > 0 {
		t.Fatalf("TLSConfig = %v, %v: want the certificate read through GetCertificate", cfg, err)
	}
	refusals := 0
	kp, err := openKeyPair(certFile, keyFile, func(error) { refusals++ })
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	kp.w.now = c.now
	served := func() string {
		t.Helper()
		crt, err := kp.certificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		leaf, err := x509.ParseCertificate(crt.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if got := served(); got != "first.example.org" {
		t.Fatalf("serves %s", got)
	}

	cert2, key2 := selfSigned(t, "renewed.example.org")
	replace(t, certFile, cert2)
	replace(t, keyFile, key2)
	c.advance(time.Second)
	if got := served(); got != "renewed.example.org" || refusals != 0 {
		t.Errorf("after renewal: serves %s, %d refusals", got, refusals)
	}
	// A certificate without its key (cert-manager writes both; a hand edit may not): the
	// renewed pair stays, and the refusal is told.
	cert3, _ := selfSigned(t, "third.example.org")
	replace(t, certFile, cert3)
	c.advance(time.Second)
	if got := served(); got != "renewed.example.org" || refusals != 1 {
		t.Errorf("after a certificate without its key: serves %s, %d refusals", got, refusals)
	}
	// An expired pair, or one not valid yet: every client would refuse it.
	for i, at := range []time.Time{time.Now().Add(-48 * time.Hour), time.Now().Add(24 * time.Hour)} {
		cert, key := selfSignedFor(t, "outdated.example.org", at, at.Add(time.Hour))
		replace(t, certFile, cert)
		replace(t, keyFile, key)
		c.advance(time.Second)
		if got := served(); got != "renewed.example.org" || refusals != 2+i {
			t.Errorf("after a certificate valid only at %v: serves %s, %d refusals", at, got, refusals)
		}
	}
	// At start, such a pair is refused with a message naming the file.
	if _, err := openKeyPair(certFile, keyFile, nil); err == nil || !strings.Contains(err.Error(), "serve.tls.cert_file: "+certFile+" is not valid before") {
		t.Errorf("openKeyPair of a certificate not valid yet: %v", err)
	}
}

// TestSecretAndRecipientsFilesRotate: a credential file and a recipients file are read
// again on change; a change into contents that do not load keeps the last good value and
// is told once.
func TestSecretAndRecipientsFilesRotate(t *testing.T) {
	t.Parallel()
	const r1 = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
	const r2 = "age1lggyhqrw2nlhcxprm67z43rta597azn8gknawjehu9d9dl0jq3yqqvfafg"
	dir := t.TempDir()
	secretPath, recipientsPath := filepath.Join(dir, "git-token"), filepath.Join(dir, "recipients")
	replace(t, secretPath, "one\n")
	replace(t, recipientsPath, "# recipients\n"+r1+"\n")
	var refused []string
	told := func(err error) { refused = append(refused, err.Error()) }
	sf, err := OpenSecretFile("git.auth.token_file", secretPath, told)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := OpenRecipientsFile(recipientsPath, told)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Now()}
	sf.w.now, rf.w.now = c.now, c.now
	steps := []struct {
		name             string
		secret, rcpts    string // new contents; "" leaves the file alone
		secretWant, want string
		refused          int
	}{
		{"as opened", "", "", "one", r1, 0},
		{"rotated", "two\n", "\n" + r1 + "\n\n" + r2 + "  # comment-free lines only\n", "two", r1, 1},
		{"fixed recipients", "", r1 + "\n" + r2 + "\n", "two", r1 + "," + r2, 1},
		{"emptied secret, no recipient", "  \n", "# nobody\n", "two", r1 + "," + r2, 3},
		{"good again", "three", r2, "three", r2, 3},
	}
	for _, st := range steps {
		if st.secret != "" {
			replace(t, secretPath, st.secret)
		}
		if st.rcpts != "" {
			replace(t, recipientsPath, st.rcpts)
		}
		c.advance(time.Second)
		if got := sf.Value(); got != st.secretWant {
			t.Errorf("%s: secret %q, want %q", st.name, got, st.secretWant)
		}
		if got := strings.Join(rf.Recipients(), ","); got != st.want {
			t.Errorf("%s: recipients %q, want %q", st.name, got, st.want)
		}
		if len(refused) != st.refused {
			t.Errorf("%s: told %d refusals, want %d: %q", st.name, len(refused), st.refused, refused)
		}
	}
	for _, msg := range refused {
		if strings.Contains(msg, "two") || strings.Contains(msg, "three") {
			t.Errorf("a refusal quotes the secret: %s", msg)
		}
		if !strings.Contains(msg, "git.auth.token_file") && !strings.Contains(msg, "sops.age_recipients_file") {
			t.Errorf("a refusal does not name its field: %s", msg)
		}
	}
}

// TestOpenSecretAndRecipientsFilesRefuse: at start, a file that does not load is an error
// naming the field (and the line of a bad recipient).
func TestOpenSecretAndRecipientsFilesRefuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, contents, want string
		recipients           bool
	}{
		{"empty secret", "\n", "git.auth.token_file: ", false},
		{"missing secret", "", "git.auth.token_file: ", false},
		{"bad recipient", "# ok\nage1nope\n", "sops.age_recipients_file: ", true},
		{"no recipient", "# none\n\n", "holds no recipient", true},
		{"missing recipients", "", "sops.age_recipients_file: ", true},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if tc.contents != "" {
			replace(t, path, tc.contents)
		}
		var err error
		if tc.recipients {
			_, err = OpenRecipientsFile(path, nil)
		} else {
			_, err = OpenSecretFile("git.auth.token_file", path, nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	if _, err := OpenRecipientsFile(filepath.Join(dir, "bad-recipient"), nil); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a bad recipient's line is not named: %v", err)
	}
}
