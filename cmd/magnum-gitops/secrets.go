package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

// encrypter builds the SOPS encrypter of a configuration; nil when no recipient is set.
// With sops.age_recipients_file the recipients are read again when the file changes;
// refused hears of a change that does not load.
func encrypter(c *config.Sops, refused config.Refused) (*sopsenc.Encrypter, error) {
	o := sopsenc.Options{AgeRecipients: c.AgeRecipients}
	switch {
	case c.AgeRecipientsFile != "" && len(c.AgeRecipients) > 0:
		return nil, config.Invalid(errors.New("sops: set age_recipients or age_recipients_file, not both"))
	case c.AgeRecipientsFile != "":
		f, err := config.OpenRecipientsFile(c.AgeRecipientsFile, refused.Of("age_recipients"))
		if err != nil {
			return nil, config.Invalid(err)
		}
		o.RecipientsFunc = f.Recipients
	case len(c.AgeRecipients) == 0:
		return nil, nil
	}
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
