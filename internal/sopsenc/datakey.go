package sopsenc

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
)

// dataKeySize is the size of a SOPS data key: one AES-256 key per file.
const dataKeySize = 32

// newDataKey returns a fresh data key.
func newDataKey() ([]byte, error) {
	k := make([]byte, dataKeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("sops: a data key: %w", err)
	}
	return k, nil
}

// sealDataKey encrypts the data key to one age recipient, ASCII-armored, as SOPS keeps it
// in sops.age[].enc.
func sealDataKey(key []byte, recipient string) (string, error) {
	r, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return "", fmt.Errorf("sops: not an age X25519 recipient: %w", err)
	}
	var b bytes.Buffer
	aw := armor.NewWriter(&b)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return "", fmt.Errorf("sops: sealing the data key: %w", err)
	}
	if _, err := w.Write(key); err != nil {
		return "", fmt.Errorf("sops: sealing the data key: %w", err)
	}
	if err := w.Close(); err != nil {
		return "", fmt.Errorf("sops: sealing the data key: %w", err)
	}
	if err := aw.Close(); err != nil {
		return "", fmt.Errorf("sops: sealing the data key: %w", err)
	}
	return b.String(), nil
}

// openDataKey returns the data key of the first age stanza one of the identities opens.
func openDataKey(stanzas []ageStanza, ids []age.Identity) ([]byte, error) {
	for _, s := range stanzas {
		r, err := age.Decrypt(armor.NewReader(strings.NewReader(s.Enc)), ids...)
		if err != nil {
			continue // another recipient's stanza
		}
		k, err := io.ReadAll(io.LimitReader(r, dataKeySize+1))
		if err != nil {
			return nil, fmt.Errorf("%w: the data key of %s does not decrypt: %v", ErrMalformed, s.Recipient, err)
		}
		if len(k) != dataKeySize {
			return nil, fmt.Errorf("%w: the data key of %s is %d bytes, not %d", ErrMalformed, s.Recipient, len(k), dataKeySize)
		}
		return k, nil
	}
	return nil, ErrNoDataKey
}
