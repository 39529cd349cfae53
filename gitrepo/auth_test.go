package gitrepo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestCredentialRotation: with Auth.Credential the password is asked for at each request,
// so a token rotated at the remote and where serve reads it is used by the next push of
// the same Repo; a Repo still holding the old one is refused as any wrong password is.
func TestCredentialRotation(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	s.user = "magnum"
	s.setPassword("token-one")
	url := s.newRepo("r", true)
	var current atomic.Pointer[string]
	use := func(p string) { current.Store(&p) }
	use("token-one")
	o := testOptions(url)
	o.Auth = gitrepo.Auth{Username: "magnum", Credential: func() string { return *current.Load() }}
	r := open(t, o)
	ctx := context.Background()

	steps := []struct {
		server, client string
		want           error
	}{
		{"token-one", "token-one", nil},
		{"token-two", "token-two", nil}, // rotated on both sides: no restart
		{"token-three", "token-two", gitrepo.ErrAuthentication},
		{"token-three", "token-three", nil},
	}
	for i, st := range steps {
		s.setPassword(st.server)
		use(st.client)
		_, err := r.Apply(ctx, change(fmt.Sprintf("step %d", i), map[string]string{"a.yaml": fmt.Sprintf("step: %d\n", i)}))
		if !errors.Is(err, st.want) || (err == nil) != (st.want == nil) {
			t.Errorf("step %d (server %s, client %s): %v, want %v", i, st.server, st.client, err, st.want)
		}
		if err != nil && strings.Contains(err.Error(), "token-") {
			t.Errorf("step %d: the error quotes the credential: %v", i, err)
		}
	}
	if got, ok := fileAt(t, s.dir("r"), "main", "a.yaml"); !ok || string(got) != "step: 3\n" {
		t.Errorf("a.yaml at main = %q, want the last step's", got)
	}
}

// TestSSHKeyRotation: a key file replaced as the kubelet replaces a mounted Secret's is
// used from the next connection; a replacement that does not load keeps the last good key,
// said once.
func TestSSHKeyRotation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bareRepo(t, filepath.Join(root, "r.git"))
	var accepted atomic.Pointer[ssh.PublicKey]
	srv := newSSHGitServerFunc(t, root, func(k ssh.PublicKey) bool {
		return string(k.Marshal()) == string((*accepted.Load()).Marshal())
	})
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id_ed25519")
	replace := func(data []byte) { // a new file renamed over the old one
		tmp := keyFile + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, keyFile); err != nil {
			t.Fatal(err)
		}
	}
	newKey := func() []byte {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		sp, _ := ssh.NewPublicKey(pub)
		accepted.Store(&sp)
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(block)
	}
	replace(newKey())
	knownHosts := filepath.Join(dir, "known_hosts")
	host, port, _ := net.SplitHostPort(srv.addr)
	line := fmt.Sprintf("[%s]:%s %s", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.hostKey.PublicKey()))))
	if err := os.WriteFile(knownHosts, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warned []string
	o := testOptions(fmt.Sprintf("ssh://git@%s/r.git", srv.addr))
	o.Auth = gitrepo.Auth{SSHKeyFile: keyFile, KnownHostsFile: knownHosts}
	o.Warn = func(msg string) { mu.Lock(); warned = append(warned, msg); mu.Unlock() }
	r := open(t, o)
	ctx := context.Background()
	apply := func(step string) error {
		_, err := r.Apply(ctx, change(step, map[string]string{"a.yaml": "step: " + step + "\n"}))
		return err
	}
	if err := apply("first-key"); err != nil {
		t.Fatalf("first key: %v", err)
	}
	replace(newKey()) // the server now accepts only the new key
	if err := apply("second-key"); err != nil {
		t.Fatalf("rotated key not used: %v", err)
	}
	replace([]byte("not a key\n"))
	for _, step := range []string{"bad-file", "bad-file-again"} {
		if err := apply(step); err != nil {
			t.Fatalf("%s: the last good key was not kept: %v", step, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], "auth.ssh_key_file") {
		t.Errorf("warnings %q, want one naming auth.ssh_key_file", warned)
	}
	if got, ok := fileAt(t, filepath.Join(root, "r.git"), "main", "a.yaml"); !ok || string(got) != "step: bad-file-again\n" {
		t.Errorf("a.yaml at main = %q", got)
	}
}
