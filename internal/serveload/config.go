package serveload

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"filippo.io/age"
)

// Setup is the serve a load runs against.
type Setup struct {
	// Dir receives the configuration and the files it names.
	Dir string
	// CacheDir sets git.cache_dir to Dir/clone; without it serve chooses where its clone
	// lives (a temporary directory, or before d478391 memory).
	CacheDir bool
	// Remote is the Git remote's URL; Listen the API's address.
	Remote, Listen string
	// MaxEvents and MaxWait are serve.group's (0: serve's defaults).
	MaxEvents int
	MaxWait   time.Duration
	// Plaintext commits Secrets unencrypted (serve needs --insecure-plaintext-secrets);
	// otherwise they are SOPS-encrypted to a new age recipient, with a digest key, as
	// deploy/service runs serve.
	Plaintext bool
}

// Write writes the configuration file and what it names: a new bearer token, and for
// SOPS the age recipient's and the digest key's files. It returns the configuration's
// path and the token.
func (s Setup) Write() (config, token string, err error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return "", "", err
	}
	token = hex.EncodeToString(key)
	files := map[string]string{filepath.Join(s.Dir, "token"): token}
	cfg := fmt.Sprintf("git:\n  url: %s\n  branch: main\n", s.Remote)
	if s.CacheDir {
		cfg += fmt.Sprintf("  cache_dir: %s\n", filepath.Join(s.Dir, "clone"))
	}
	if !s.Plaintext {
		id, err := age.GenerateX25519Identity()
		if err != nil {
			return "", "", err
		}
		digest := make([]byte, 32)
		if _, err := rand.Read(digest); err != nil {
			return "", "", err
		}
		digestFile := filepath.Join(s.Dir, "sops-digest.key")
		files[digestFile] = base64.StdEncoding.EncodeToString(digest)
		cfg += fmt.Sprintf("sops:\n  age_recipients: [%s]\n  digest_key_file: %s\n", id.Recipient(), digestFile)
	}
	cfg += fmt.Sprintf("serve:\n  listen: %s\n  token_files: [%s]\n", s.Listen, filepath.Join(s.Dir, "token"))
	if s.MaxEvents > 0 || s.MaxWait > 0 {
		cfg += "  group:\n"
		if s.MaxEvents > 0 {
			cfg += "    max_events: " + strconv.Itoa(s.MaxEvents) + "\n"
		}
		if s.MaxWait > 0 {
			cfg += "    max_wait: " + s.MaxWait.String() + "\n"
		}
	}
	config = filepath.Join(s.Dir, "config.yaml")
	files[config] = cfg
	for f, data := range files {
		if err := os.WriteFile(f, []byte(data), 0o600); err != nil {
			return "", "", err
		}
	}
	return config, token, nil
}
