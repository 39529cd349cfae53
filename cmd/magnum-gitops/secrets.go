package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// sopsConfig is the --config "sops:" section.
type sopsConfig struct {
	// AgeRecipients are the age public keys every Secret is encrypted to.
	AgeRecipients []string `json:"age_recipients,omitempty"`
	// DigestKeyFile holds the key of the digest that keeps unchanged Secrets' ciphertext
	// (at least 32 bytes, e.g. head -c 32 /dev/urandom | base64).
	DigestKeyFile string `json:"digest_key_file,omitempty"`
	// AgeIdentityFile, instead of a digest key, lets magnum-gitops decrypt its own files to
	// compare them. It opens every Secret: prefer the digest key.
	AgeIdentityFile string `json:"age_identity_file,omitempty"`
}

// errPlaintextRefused is returned when Secrets would be written and nothing encrypts them.
var errPlaintextRefused = errors.New("Secrets would be written in plaintext: set sops.age_recipients (see README, Management cluster setup), or pass --insecure-plaintext-secrets")

// encrypter builds the SOPS encrypter of a configuration; nil when no recipient is set.
func (c *sopsConfig) encrypter() (*sopsenc.Encrypter, error) {
	if len(c.AgeRecipients) == 0 {
		return nil, nil
	}
	o := sopsenc.Options{AgeRecipients: c.AgeRecipients}
	if c.DigestKeyFile != "" {
		b, err := os.ReadFile(c.DigestKeyFile)
		if err != nil {
			return nil, fmt.Errorf("sops.digest_key_file: %w", err)
		}
		o.DigestKey = bytes.TrimSpace(b)
	}
	if c.AgeIdentityFile != "" {
		b, err := os.ReadFile(c.AgeIdentityFile)
		if err != nil {
			return nil, fmt.Errorf("sops.age_identity_file: %w", err)
		}
		o.Identity = string(b)
	}
	return sopsenc.New(o)
}

// secretsPlan decides how a result's Secrets reach the output: encrypted, in plaintext
// when explicitly allowed, or refused.
type secretsPlan struct {
	enc       *sopsenc.Encrypter
	plaintext bool
}

// options returns the FileOptions for a result whose cluster directory currently holds
// the files read by existing.
func (p secretsPlan) options(res *generator.Result, names []string, existing func(string) ([]byte, bool)) (generator.FileOptions, error) {
	opts := generator.FileOptions{Existing: names}
	switch {
	case p.enc != nil:
		opts.Secrets = p.enc.Encoder(existing)
	case p.plaintext:
		opts.Secrets = generator.PlaintextSecrets
	case len(res.Objects.Secrets) > 0:
		return opts, fmt.Errorf("%s: %d %w", res, len(res.Objects.Secrets), errPlaintextRefused)
	}
	return opts, nil
}

// addCreationRules writes the repository's .sops.yaml next to encrypted Secrets.
func (p secretsPlan) addCreationRules(cfg *generator.Config, fs *generator.FileSet) {
	if p.enc == nil {
		return
	}
	for f := range fs.Files {
		if path.Ext(f) == ".yaml" && len(f) > len(sopsenc.FileSuffix) && f[len(f)-len(sopsenc.FileSuffix):] == sopsenc.FileSuffix {
			fs.Files[".sops.yaml"] = p.enc.CreationRules(cfg.Flux.Path)
			return
		}
	}
}
