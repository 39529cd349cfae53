package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// encrypter builds the SOPS encrypter of a configuration; nil when no recipient is set.
func encrypter(c *config.Sops) (*sopsenc.Encrypter, error) {
	if len(c.AgeRecipients) == 0 {
		return nil, nil
	}
	o := sopsenc.Options{AgeRecipients: c.AgeRecipients}
	if c.DigestKeyFile != "" {
		b, err := os.ReadFile(c.DigestKeyFile)
		if err != nil {
			return nil, config.Invalid(fmt.Errorf("sops.digest_key_file: %w", err))
		}
		o.DigestKey = bytes.TrimSpace(b)
	}
	if c.AgeIdentityFile != "" {
		b, err := os.ReadFile(c.AgeIdentityFile)
		if err != nil {
			return nil, config.Invalid(fmt.Errorf("sops.age_identity_file: %w", err))
		}
		o.Identity = string(b)
	}
	e, err := sopsenc.New(o)
	return e, config.Invalid(err)
}
