package main

import (
	"bytes"
	"fmt"
	"os"

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

// encrypter builds the SOPS encrypter of a configuration; nil when no recipient is set.
func (c *sopsConfig) encrypter() (*sopsenc.Encrypter, error) {
	if len(c.AgeRecipients) == 0 {
		return nil, nil
	}
	o := sopsenc.Options{AgeRecipients: c.AgeRecipients}
	if c.DigestKeyFile != "" {
		b, err := os.ReadFile(c.DigestKeyFile)
		if err != nil {
			return nil, configError(fmt.Errorf("sops.digest_key_file: %w", err))
		}
		o.DigestKey = bytes.TrimSpace(b)
	}
	if c.AgeIdentityFile != "" {
		b, err := os.ReadFile(c.AgeIdentityFile)
		if err != nil {
			return nil, configError(fmt.Errorf("sops.age_identity_file: %w", err))
		}
		o.Identity = string(b)
	}
	e, err := sopsenc.New(o)
	return e, configError(err)
}
