package sopsenc

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// A SOPS value is AES-256-GCM under the file's data key, with the value's path as
// additional data, written as ENC[AES256_GCM,data:…,iv:…,tag:…,type:…]. SOPS uses 32-byte
// nonces; the type says how to read the plaintext back.
const (
	valuePrefix = "ENC[AES256_GCM,"
	nonceSize   = 32
	tagSize     = 16
)

// scalarBytes is what SOPS hashes into the MAC and encrypts for a decoded YAML scalar, and
// the type it records. Booleans are written True and False, as SOPS inherited from its
// Python version; floats in their shortest form.
func scalarBytes(v any) ([]byte, string, error) {
	switch v := v.(type) {
	case string:
		return []byte(v), "str", nil
	case int:
		return []byte(strconv.Itoa(v)), "int", nil
	case float64:
		return []byte(strconv.FormatFloat(v, 'f', -1, 64)), "float", nil
	case bool:
		if v {
			return []byte("True"), "bool", nil
		}
		return []byte("False"), "bool", nil
	case nil:
		return nil, "", fmt.Errorf("%w: a null value", ErrUnsupported)
	default:
		return nil, "", fmt.Errorf("%w: a value of type %T", ErrUnsupported, v)
	}
}

// encryptValue seals plaintext of the given type under key with a fresh nonce.
func encryptValue(key, plaintext []byte, typ, additionalData string) (string, error) {
	gcm, err := newGCM(key)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, nonceSize)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("sops: a nonce: %w", err)
	}
	sealed := gcm.Seal(nil, nonce, plaintext, []byte(additionalData))
	data, tag := sealed[:len(sealed)-tagSize], sealed[len(sealed)-tagSize:]
	b64 := base64.StdEncoding.EncodeToString
	return valuePrefix + "data:" + b64(data) + ",iv:" + b64(nonce) + ",tag:" + b64(tag) + ",type:" + typ + "]", nil
}

// decryptValue opens an ENC[…] value and returns its plaintext and type. A value that
// does not open under key with this additional data (another key, another path, altered
// bytes) is ErrMACMismatch: GCM's tag is a MAC too.
func decryptValue(key []byte, value, additionalData string) ([]byte, string, error) {
	fields, err := parseValue(value)
	if err != nil {
		return nil, "", err
	}
	gcm, err := newGCMNonce(key, len(fields["iv"]))
	if err != nil {
		return nil, "", err
	}
	sealed := append(append([]byte{}, fields["data"]...), fields["tag"]...)
	plain, err := gcm.Open(nil, fields["iv"], sealed, []byte(additionalData))
	if err != nil {
		return nil, "", fmt.Errorf("%w: a value does not open under the data key", ErrMACMismatch)
	}
	return plain, string(fields["type"]), nil
}

// parseValue splits ENC[AES256_GCM,data:…,iv:…,tag:…,type:…] into its decoded fields.
func parseValue(value string) (map[string][]byte, error) {
	inner, ok := strings.CutPrefix(value, valuePrefix)
	if !ok || !strings.HasSuffix(inner, "]") {
		return nil, fmt.Errorf("%w: a value is not ENC[AES256_GCM,...]", ErrMalformed)
	}
	fields := map[string][]byte{}
	for _, f := range strings.Split(strings.TrimSuffix(inner, "]"), ",") {
		name, v, ok := strings.Cut(f, ":")
		if !ok {
			return nil, fmt.Errorf("%w: a value's field %q has no name", ErrMalformed, name)
		}
		if name == "type" {
			fields[name] = []byte(v)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return nil, fmt.Errorf("%w: a value's %s is not base64", ErrMalformed, name)
		}
		fields[name] = b
	}
	for _, name := range []string{"data", "iv", "tag", "type"} {
		if _, ok := fields[name]; !ok {
			return nil, fmt.Errorf("%w: a value has no %s", ErrMalformed, name)
		}
	}
	if len(fields["iv"]) == 0 || len(fields["tag"]) != tagSize {
		return nil, fmt.Errorf("%w: a value's iv or tag has the wrong size", ErrMalformed)
	}
	return fields, nil
}

func newGCM(key []byte) (cipher.AEAD, error) { return newGCMNonce(key, nonceSize) }

func newGCMNonce(key []byte, nonce int) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sops: the data key: %w", err)
	}
	return cipher.NewGCMWithNonceSize(block, nonce)
}
