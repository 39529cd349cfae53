// Package sopsenc encrypts Kubernetes Secrets with SOPS and age, the way Flux's
// kustomize-controller decrypts them: only data and stringData are encrypted, so apiVersion,
// kind and metadata stay readable for Flux to route the object.
//
// SOPS output is randomised (a fresh data key and IVs each time), so re-encrypting an
// unchanged Secret would make a Git commit every time. Encrypter keeps the existing file
// when the Secret is unchanged, judged one of two ways:
//
//   - keyed digest (DigestKey): an HMAC-SHA256, under a key only magnum-gitops holds, of the
//     plaintext Secret and the recipient list, stored in the annotation
//     magnum-gitops.io/sops-digest. Without the key it reveals nothing about the values, and
//     the renderer never needs to be able to decrypt. This is the default.
//   - decryption (Identity): the existing file is decrypted with an age identity and
//     compared. Exact, but the renderer then holds a key that opens every Secret.
package sopsenc

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// EncryptedRegex is what SOPS encrypts: the Secret's values, nothing Flux needs to read.
const EncryptedRegex = "^(data|stringData)$"

// DigestAnnotation holds the keyed digest of the plaintext a file was encrypted from.
const DigestAnnotation = "magnum-gitops.io/sops-digest"

// FileSuffix ends the name of every encrypted file.
const FileSuffix = ".sops.yaml"

// Errors.
var (
	// ErrNoRecipients means no age recipient is configured: Secrets cannot be encrypted.
	ErrNoRecipients = errors.New("sops.age_recipients is empty: Secrets cannot be encrypted")
	// ErrNoComparison means neither a digest key nor an identity is configured, so
	// unchanged Secrets could not keep their ciphertext.
	ErrNoComparison = errors.New("set sops.digest_key_file (recommended) or sops.age_identity_file so unchanged Secrets keep their ciphertext")
)

// Options configures an Encrypter.
type Options struct {
	// AgeRecipients are the age public keys (age1...) every Secret is encrypted to.
	AgeRecipients []string
	// RecipientsFunc, when set, gives the recipients at each use instead of AgeRecipients,
	// so recipients rotated where the caller reads them (config.RecipientsFile) are used
	// without a restart. It must return a non-empty list of valid recipients, and the same
	// slice while they have not changed.
	RecipientsFunc func() []string
	// DigestKey keys the digest that tells an unchanged Secret (at least 32 bytes).
	DigestKey []byte
	// Identity is an age identity file's content (AGE-SECRET-KEY-1...), used to decrypt
	// and compare when DigestKey is not set.
	Identity string
	// Now stamps sops.lastmodified; time.Now when nil.
	Now func() time.Time
}

// Validate checks the options without revealing key material in errors.
func (o *Options) Validate() error {
	recipients := o.AgeRecipients
	if o.RecipientsFunc != nil {
		recipients = o.RecipientsFunc()
	}
	if len(recipients) == 0 {
		return ErrNoRecipients
	}
	for i, r := range recipients {
		if _, err := age.ParseX25519Recipient(r); err != nil {
			return fmt.Errorf("sops.age_recipients[%d]: not an age X25519 recipient (age1...)", i)
		}
	}
	if len(o.DigestKey) == 0 && o.Identity == "" {
		return ErrNoComparison
	}
	if len(o.DigestKey) > 0 && len(o.DigestKey) < 32 {
		return fmt.Errorf("sops.digest_key_file: the key must be at least 32 bytes, got %d", len(o.DigestKey))
	}
	if o.Identity != "" {
		if _, err := age.ParseIdentities(strings.NewReader(o.Identity)); err != nil {
			return errors.New("sops.age_identity_file: not an age identity file")
		}
	}
	return nil
}

// Encrypter encrypts Secrets for Git.
type Encrypter struct {
	recipients []string
	// source, when set, replaces recipients: normalised is its last answer, sorted.
	source     func() []string
	mu         sync.Mutex
	lastSource []string
	normalised []string
	digestKey  []byte
	identities []age.Identity
	now        func() time.Time
	// rules holds CreationRules' document by path: every plan that writes a Secret asks.
	rules sync.Map
}

// New returns an Encrypter for valid options.
func New(o Options) (*Encrypter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rs := normalise(o.AgeRecipients)
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var ids []age.Identity
	if o.Identity != "" {
		ids, _ = age.ParseIdentities(strings.NewReader(o.Identity)) // Validate parsed it
	}
	return &Encrypter{recipients: rs, source: o.RecipientsFunc, digestKey: o.DigestKey, identities: ids, now: now}, nil
}

// normalise sorts a recipient list and drops repeats: the form files and digests hold.
func normalise(rs []string) []string {
	rs = slices.Clone(rs)
	slices.Sort(rs)
	return slices.Compact(rs)
}

// current is the recipients now: the source's answer, normalised once per change.
func (e *Encrypter) current() []string {
	if e.source == nil {
		return e.recipients
	}
	in := e.source()
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Equal(in, e.lastSource) {
		e.lastSource, e.normalised = in, normalise(in)
	}
	return e.normalised
}

// Recipients returns the age recipients every file is encrypted for now, sorted.
func (e *Encrypter) Recipients() []string { return slices.Clone(e.current()) }

// SecretEncoding writes Secrets as <base>.sops.yaml files, encrypted.
func (e *Encrypter) SecretEncoding() *generator.SecretEncoding {
	return &generator.SecretEncoding{Suffix: FileSuffix, Encode: e.Encrypt}
}

// Encrypt encrypts a Secret into a SOPS YAML document.
func (e *Encrypter) Encrypt(s *corev1.Secret) ([]byte, error) {
	plain := s.DeepCopy()
	if e.digestKey != nil {
		d, err := e.digest(s)
		if err != nil {
			return nil, err
		}
		if plain.Annotations == nil {
			plain.Annotations = map[string]string{}
		}
		plain.Annotations[DigestAnnotation] = d
	}
	doc, err := generator.MarshalObject(plain)
	if err != nil {
		return nil, err
	}
	return seal(doc, e.current(), e.now())
}

// digest is the keyed digest of a Secret's plaintext and the recipient list.
func (e *Encrypter) digest(s *corev1.Secret) (string, error) {
	return e.digestFor(s, e.current())
}

func (e *Encrypter) digestFor(s *corev1.Secret, recipients []string) (string, error) {
	c := s.DeepCopy()
	delete(c.Annotations, DigestAnnotation)
	doc, err := generator.MarshalObject(c)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, e.digestKey)
	mac.Write(doc)
	mac.Write([]byte("\x00recipients=" + strings.Join(recipients, ",")))
	return "hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)), nil
}

// Unchanged reports whether an existing encrypted file already holds this Secret for the
// current recipients.
func (e *Encrypter) Unchanged(old []byte, s *corev1.Secret) (bool, error) {
	var meta struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Sops struct {
			Age []struct {
				Recipient string `json:"recipient"`
			} `json:"age"`
		} `json:"sops"`
	}
	if err := yaml.Unmarshal(old, &meta); err != nil {
		return false, nil // not ours or damaged: write a fresh file
	}
	var have []string
	for _, a := range meta.Sops.Age {
		have = append(have, a.Recipient)
	}
	slices.Sort(have)
	recipients := e.current()
	if !slices.Equal(have, recipients) {
		return false, nil
	}
	if e.digestKey != nil {
		want, err := e.digestFor(s, recipients)
		if err != nil {
			return false, err
		}
		return hmac.Equal([]byte(meta.Metadata.Annotations[DigestAnnotation]), []byte(want)), nil
	}
	plain, err := decrypt(old, e.identities)
	if err != nil {
		return false, nil
	}
	want, err := generator.MarshalObject(s)
	if err != nil {
		return false, err
	}
	return canonicalEqual(plain, want), nil
}

// canonicalEqual compares two YAML documents as data, ignoring the digest annotation.
func canonicalEqual(a, b []byte) bool {
	norm := func(d []byte) []byte {
		var m map[string]any
		if yaml.Unmarshal(d, &m) != nil {
			return nil
		}
		delete(m, "sops")
		if md, ok := m["metadata"].(map[string]any); ok {
			if ann, ok := md["annotations"].(map[string]any); ok {
				delete(ann, DigestAnnotation)
			}
		}
		out, _ := yaml.Marshal(m)
		return out
	}
	na, nb := norm(a), norm(b)
	return na != nil && bytes.Equal(na, nb)
}

// CreationRules returns a .sops.yaml for the repository root, one rule per path the
// Secrets live under (each management cluster's), so operators can edit the
// files with the sops CLI using the same recipients and regex.
func (e *Encrypter) CreationRules(paths ...string) []byte {
	recipients := strings.Join(e.current(), ",")
	key := recipients + "\x00" + strings.Join(paths, "\x00")
	if b, ok := e.rules.Load(key); ok {
		return b.([]byte)
	}
	b := e.creationRules(paths, recipients)
	e.rules.Store(key, b)
	return b
}

func (e *Encrypter) creationRules(paths []string, recipients string) []byte {
	rules := make([]any, len(paths))
	for i, p := range paths {
		rules[i] = map[string]any{
			"path_regex":      "^" + regexpQuote(strings.TrimSuffix(p, "/")) + "/.*\\.sops\\.yaml$",
			"encrypted_regex": EncryptedRegex,
			"age":             recipients,
		}
	}
	b, _ := yaml.Marshal(map[string]any{"creation_rules": rules})
	return append([]byte("# Written by magnum-gitops: the recipients of the cluster Secrets.\n"), b...)
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
