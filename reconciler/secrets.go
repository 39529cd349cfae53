package reconciler

import (
	"fmt"
	"path"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/gate"
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

// encoder returns how to write the Secrets of res into a directory whose current files
// existing reads; nil leaves them out. Secrets with nothing to encrypt them are refused.
func (sp SecretPolicy) encoder(res *generator.Result, existing func(string) ([]byte, bool)) (generator.SecretEncoder, error) {
	switch {
	case sp.Omit:
		return nil, nil
	case sp.Encrypter != nil:
		return sp.Encrypter.Encoder(existing), nil
	case sp.Plaintext:
		return generator.PlaintextSecrets, nil
	case len(res.Objects.Secrets) > 0:
		return nil, fmt.Errorf("%s: %d %w", res, len(res.Objects.Secrets), ErrPlaintextRefused)
	}
	return nil, nil
}

// gated wraps the encoder of res's Secrets in the gate: a Secret the tree already holds
// in the file the encoder would write keeps that file.
func (sp SecretPolicy) gated(g *gate.Gate, enc generator.SecretEncoder, dir string, tree gitrepo.Tree) generator.SecretEncoder {
	suffix := ".yaml"
	if sp.Encrypter != nil {
		suffix = sopsenc.FileSuffix
	}
	return g.Secrets(enc, sp.encoding(), func(base string) string { return base + suffix }, dir, tree)
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
