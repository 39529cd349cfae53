package reconciler

import (
	"fmt"
	"path"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"

	corev1 "k8s.io/api/core/v1"
)

// SecretPolicy decides how a cluster's Secrets reach the repository: encrypted with SOPS,
// in plaintext when explicitly allowed, left out, or refused. It is the only place that
// decides, so every command and the service say the same thing.
type SecretPolicy struct {
	// Encrypter encrypts Secrets with SOPS for the configured age recipients.
	Encrypter *sopsenc.Encrypter
	// Plaintext allows Secrets in clear when there is no Encrypter
	// (--insecure-plaintext-secrets). Never push such a repository.
	Plaintext bool
	// Omit leaves Secrets out of the change, for reports that show no Secret.
	Omit bool
}

// layout returns how the Secrets of res are laid out (generator.FileOptions.Secrets): nil
// leaves them out. Secrets with nothing to encrypt them are refused.
func (sp SecretPolicy) layout(res *generator.Result) (*generator.SecretEncoding, error) {
	switch {
	case sp.Omit:
		return nil, nil
	case sp.Encrypter != nil:
		return sp.Encrypter.SecretEncoding(), nil
	case sp.Plaintext:
		return generator.PlaintextSecrets, nil
	case len(res.Objects.Secrets) > 0:
		return nil, fmt.Errorf("%s: %d %w", res, len(res.Objects.Secrets), ErrPlaintextRefused)
	}
	return nil, nil
}

// encodeOver encodes a Secret for the file at f of tree: with SOPS, the file there when
// it holds the same plaintext for the same recipients (unchanged.go), else the Secret
// encrypted anew.
func (sp SecretPolicy) encodeOver(s *corev1.Secret, tree gitrepo.Tree, f string) ([]byte, error) {
	if sp.Encrypter == nil {
		return generator.PlaintextSecrets.Encode(s)
	}
	old, ok, err := tree.ReadFile(f)
	if err != nil {
		return nil, err
	}
	if ok {
		same, err := sp.Encrypter.Unchanged(old, s)
		if err != nil {
			return nil, err
		}
		if same {
			return old, nil
		}
	}
	return sp.Encrypter.Encrypt(s)
}

// encoding names how the policy writes Secrets, with what a written file depends on
// besides the plaintext (the recipients).
func (sp SecretPolicy) encoding() string {
	switch {
	case sp.Omit:
		return "omitted"
	case sp.Encrypter != nil:
		return "sops age " + strings.Join(sp.Encrypter.Recipients(), ",")
	case sp.Plaintext:
		return "plaintext"
	}
	return "refused"
}

// addCreationRules writes the repository's .sops.yaml when the change holds encrypted
// Secrets, so that an operator's `sops` finds the recipients.
func (sp SecretPolicy) addCreationRules(cfg *generator.Config, fs *generator.FileSet) {
	if sp.Encrypter == nil {
		return
	}
	for f := range fs.Files {
		if strings.HasSuffix(path.Base(f), sopsenc.FileSuffix) {
			fs.Files[sopsConfigFile] = sp.Encrypter.CreationRules(cfg.Roots()...)
			return
		}
	}
}

// sopsConfigFile is the repository's SOPS configuration, at its root.
const sopsConfigFile = ".sops.yaml"
