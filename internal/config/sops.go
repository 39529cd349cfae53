package config

// Sops is the --config "sops:" section.
type Sops struct {
	// AgeRecipients are the age public keys every Secret is encrypted to.
	AgeRecipients []string `json:"age_recipients,omitempty"`
	// AgeRecipientsFile, instead of age_recipients, names a file of age recipients, one
	// per line (blank lines and # comments ignored, as `age -R` reads it). serve reads it
	// again when it changes, so recipients rotate without a restart (docs/runbooks.md, 4).
	AgeRecipientsFile string `json:"age_recipients_file,omitempty"`
	// DigestKeyFile holds the key of the digest that keeps unchanged Secrets' ciphertext
	// (at least 32 bytes, e.g. head -c 32 /dev/urandom | base64).
	DigestKeyFile string `json:"digest_key_file,omitempty"`
	// AgeIdentityFile, instead of a digest key, lets magnum-gitops decrypt its own files to
	// compare them. It opens every Secret: prefer the digest key.
	AgeIdentityFile string `json:"age_identity_file,omitempty"`
}
