package gitrepo_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git5 "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// TestSignedCommits signs with an OpenPGP key and verifies with go-git and, when gpg is
// installed, with git verify-commit.
func TestSignedCommits(t *testing.T) {
	t.Parallel()
	key, pub := signingKey(t)

	s := newGitServer(t)
	o := testOptions(s.newRepo("signed", true))
	o.SigningKey = key
	r := open(t, o)
	res, err := r.Apply(context.Background(), change("signed change", map[string]string{"a": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := git5.PlainOpen(s.dir("signed"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(res.Commit.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(pub); err != nil {
		t.Errorf("go-git cannot verify the signature: %v", err)
	}
	other, _ := openpgp.NewEntity("other", "", "other@example.org", nil)
	var otherPub bytes.Buffer
	w, _ := armor.Encode(&otherPub, openpgp.PublicKeyType, nil)
	other.Serialize(w)
	w.Close()
	if _, err := c.Verify(otherPub.String()); err == nil {
		t.Error("the signature verifies with another key")
	}

	if _, err := exec.LookPath("gpg"); err != nil {
		t.Log("gpg not installed: skipping git verify-commit")
		return
	}
	home := t.TempDir()
	os.Chmod(home, 0o700)
	imp := exec.Command("gpg", "--batch", "--import")
	imp.Env = append(os.Environ(), "GNUPGHOME="+home)
	imp.Stdin = strings.NewReader(pub)
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("gpg --import: %v\n%s", err, out)
	}
	verify := exec.Command("git", "verify-commit", "-v", res.Commit.String())
	verify.Dir = s.dir("signed")
	verify.Env = append(os.Environ(), "GNUPGHOME="+home)
	out, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Good signature") {
		t.Errorf("git verify-commit: %v\n%s", err, out)
	}
}

// signingKey is a new OpenPGP key and its public key, armored.
func signingKey(t *testing.T) (*openpgp.Entity, string) {
	t.Helper()
	key, err := openpgp.NewEntity("magnum-gitops", "test", "magnum-gitops@example.org", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, _ := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err := key.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return key, pub.String()
}
