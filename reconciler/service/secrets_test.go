package service_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"filippo.io/age"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// encrypting is the Secret policy serve runs with in production: SOPS for one age
// recipient, the same for the whole test binary, with a fixed digest key, so that two
// repositories fed the same events carry the same plaintext digests and .sops.yaml (the
// ciphertexts differ: SOPS draws a new data key each time).
func encrypting(t testing.TB) reconciler.SecretPolicy {
	t.Helper()
	sharedOnce.Do(func() {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = sopsenc.New(sopsenc.Options{AgeRecipients: []string{id.Recipient().String()},
			DigestKey: bytes.Repeat([]byte{7}, 32)})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return reconciler.SecretPolicy{Encrypter: shared}
}

var (
	sharedOnce sync.Once
	shared     *sopsenc.Encrypter
	sharedErr  error
)

// sameFiles compares main's tree in two repositories of git path by path. SOPS files compare
// on everything but their ciphertext and SOPS metadata, which leaves the plaintext digest.
func sameFiles(t *testing.T, git *gitserver.Server, a, b string) {
	t.Helper()
	files := func(repo string) map[string]string {
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(git.Git(git.Dir(repo), "ls-tree", "-r", "main")), "\n") {
			meta, path, ok := strings.Cut(line, "\t")
			if !ok {
				continue
			}
			out[path] = meta[strings.LastIndex(meta, " ")+1:]
		}
		return out
	}
	fa, fb := files(a), files(b)
	if len(fa) != len(fb) {
		t.Errorf("%s has %d files, %s %d", a, len(fa), b, len(fb))
	}
	for path, blobA := range fa {
		blobB, ok := fb[path]
		switch {
		case !ok:
			t.Errorf("%s is in %s only", path, a)
		case blobA == blobB:
		default:
			ca := withoutCiphertext(git.Git(git.Dir(a), "cat-file", "blob", blobA))
			cb := withoutCiphertext(git.Git(git.Dir(b), "cat-file", "blob", blobB))
			if ca != cb || !strings.Contains(ca, sopsenc.DigestAnnotation) {
				t.Errorf("%s differs between %s and %s", path, a, b)
			}
		}
	}
}

// withoutCiphertext drops the encrypted values and the sops: block of a SOPS YAML file.
func withoutCiphertext(doc string) string {
	var sb strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "sops:") {
			break
		}
		if !strings.Contains(line, "ENC[") {
			sb.WriteString(line + "\n")
		}
	}
	return sb.String()
}
