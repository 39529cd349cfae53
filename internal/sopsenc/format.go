package sopsenc

import (
	"bytes"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	yaml "go.yaml.in/yaml/v3"
)

// The SOPS YAML format, for age recipients and encrypted_regex only, written here on
// filippo.io/age and the standard library: the sops module's root package imports its key
// service, and through it every cloud KMS SDK (AWS, GCP, Azure, Vault, Huawei Cloud), which
// added 27 MiB to the stripped binary and tens of MiB to serve's resident memory. A
// file holds the document with the values whose path has a key matching encrypted_regex
// sealed one by one (value.go), and a sops mapping with the data key sealed to each age
// recipient (datakey.go) and a MAC over every value of the document, so that the clear
// metadata cannot be altered either. testdata/ holds files written by the sops library
// that Decrypt must open, and Flux's kustomize-controller decrypts what Encrypt writes in
// make e2e.

// Errors of Decrypt.
var (
	// ErrNotEncrypted means the document has no sops metadata.
	ErrNotEncrypted = errors.New("sops: the document has no sops metadata")
	// ErrMalformed means the document or its sops metadata cannot be read.
	ErrMalformed = errors.New("sops: malformed file")
	// ErrUnsupported means the file uses a SOPS feature beyond age and encrypted_regex.
	ErrUnsupported = errors.New("sops: unsupported")
	// ErrNoDataKey means none of the identities opens the file's data key.
	ErrNoDataKey = errors.New("sops: no identity opens the data key")
	// ErrMACMismatch means the file was altered after it was encrypted.
	ErrMACMismatch = errors.New("sops: MAC mismatch")
)

// formatVersion is written as sops.version: the sops release whose files testdata/ holds
// and whose format this package writes.
const formatVersion = "3.13.3"

// metadataKey is the document key SOPS keeps its metadata under.
const metadataKey = "sops"

// encryptedRe is EncryptedRegex compiled.
var encryptedRe = regexp.MustCompile(EncryptedRegex)

// metadata is the sops mapping of a file, its keys in the order sops writes them.
type metadata struct {
	Age            []ageStanza `yaml:"age"`
	EncryptedRegex string      `yaml:"encrypted_regex"`
	LastModified   string      `yaml:"lastmodified"`
	MAC            string      `yaml:"mac"`
	Version        string      `yaml:"version"`
}

// ageStanza is one age recipient of a file and the data key sealed to it.
type ageStanza struct {
	Enc       string `yaml:"enc"`
	Recipient string `yaml:"recipient"`
}

// knownMetadata are the sops keys Decrypt reads; any other with a value is a feature this
// package does not implement (other key types, key groups, other selection rules).
var knownMetadata = map[string]bool{"age": true, "lastmodified": true, "mac": true, "encrypted_regex": true, "version": true}

// seal encrypts a plain YAML mapping document for the recipients.
func seal(doc []byte, recipients []string, now time.Time) ([]byte, error) {
	root, body, err := parseDocument(doc)
	if err != nil {
		return nil, err
	}
	if metadataIndex(body) >= 0 {
		return nil, fmt.Errorf("%w: the document already has a %s key", ErrMalformed, metadataKey)
	}
	key, err := newDataKey()
	if err != nil {
		return nil, err
	}
	mac := sha512.New()
	err = walk(body, nil, func(n *yaml.Node, path []string) error {
		plain, typ, err := nodeBytes(n, path)
		if err != nil {
			return err
		}
		mac.Write(plain)
		if !selected(encryptedRe, path) || (typ == "str" && len(plain) == 0) {
			return nil // SOPS leaves an empty string as it is
		}
		enc, err := encryptValue(key, plain, typ, additionalData(path))
		if err != nil {
			return err
		}
		n.Value, n.Tag, n.Style = enc, "!!str", 0
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := metadata{LastModified: now.UTC().Truncate(time.Second).Format(time.RFC3339), EncryptedRegex: EncryptedRegex, Version: formatVersion}
	if m.MAC, err = encryptValue(key, fmt.Appendf(nil, "%X", mac.Sum(nil)), "str", m.LastModified); err != nil {
		return nil, err
	}
	for _, r := range recipients {
		enc, err := sealDataKey(key, r)
		if err != nil {
			return nil, err
		}
		m.Age = append(m.Age, ageStanza{Recipient: r, Enc: enc})
	}
	var mn yaml.Node
	if err := mn.Encode(m); err != nil {
		return nil, err
	}
	body.Content = append(body.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: metadataKey}, &mn)
	return emit(root)
}

// Decrypt opens a SOPS YAML file with an age identity file's content (AGE-SECRET-KEY-1...)
// and returns the plain document. It checks the MAC, so an altered file is ErrMACMismatch,
// never a plausible document.
func Decrypt(doc []byte, identity string) ([]byte, error) {
	ids, err := age.ParseIdentities(strings.NewReader(identity))
	if err != nil {
		return nil, errors.New("sops: not an age identity file")
	}
	return decrypt(doc, ids)
}

func decrypt(doc []byte, ids []age.Identity) ([]byte, error) {
	root, body, err := parseDocument(doc)
	if err != nil {
		return nil, err
	}
	i := metadataIndex(body)
	if i < 0 {
		return nil, ErrNotEncrypted
	}
	m, err := readMetadata(body.Content[i+1])
	if err != nil {
		return nil, err
	}
	body.Content = append(body.Content[:i:i], body.Content[i+2:]...)
	re, err := regexp.Compile(m.EncryptedRegex)
	if err != nil {
		return nil, fmt.Errorf("%w: sops.encrypted_regex: %v", ErrMalformed, err)
	}
	lastModified, err := time.Parse(time.RFC3339, m.LastModified)
	if err != nil {
		return nil, fmt.Errorf("%w: sops.lastmodified is not RFC 3339", ErrMalformed)
	}
	key, err := openDataKey(m.Age, ids)
	if err != nil {
		return nil, err
	}
	mac := sha512.New()
	err = walk(body, nil, func(n *yaml.Node, path []string) error {
		if selected(re, path) && n.Value != "" {
			if err := openNode(n, key, path); err != nil {
				return err
			}
		}
		plain, _, err := nodeBytes(n, path)
		if err != nil {
			return err
		}
		mac.Write(plain)
		return nil
	})
	if err != nil {
		return nil, err
	}
	stored, typ, err := decryptValue(key, m.MAC, lastModified.Format(time.RFC3339))
	if err != nil || typ != "str" || subtle.ConstantTimeCompare(stored, fmt.Appendf(nil, "%X", mac.Sum(nil))) != 1 {
		return nil, ErrMACMismatch
	}
	return emit(root)
}

// readMetadata decodes the sops mapping and refuses the features this package lacks.
func readMetadata(n *yaml.Node) (metadata, error) {
	var m metadata
	var all map[string]any
	if err := n.Decode(&all); err != nil {
		return m, fmt.Errorf("%w: the sops metadata: %v", ErrMalformed, err)
	}
	for k, v := range all {
		if !knownMetadata[k] && !empty(v) {
			return m, fmt.Errorf("%w: sops.%s (only age recipients and encrypted_regex are read)", ErrUnsupported, k)
		}
	}
	if err := n.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: the sops metadata: %v", ErrMalformed, err)
	}
	if m.EncryptedRegex == "" {
		return m, fmt.Errorf("%w: a file without sops.encrypted_regex", ErrUnsupported)
	}
	if len(m.Age) == 0 {
		return m, fmt.Errorf("%w: a file without age recipients", ErrUnsupported)
	}
	return m, nil
}

// empty reports a metadata value older sops releases write for key types not in use.
func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case bool:
		return !v
	case int:
		return v == 0
	}
	return false
}

// openNode replaces an encrypted scalar by its plaintext, typed as SOPS recorded it.
func openNode(n *yaml.Node, key []byte, path []string) error {
	plain, typ, err := decryptValue(key, n.Value, additionalData(path))
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	s := string(plain)
	switch typ {
	case "str":
		n.Tag = "!!str"
	case "int":
		_, err = strconv.Atoi(s)
		n.Tag = "!!int"
	case "float":
		_, err = strconv.ParseFloat(s, 64)
		n.Tag = "!!float"
	case "bool":
		var b bool
		b, err = strconv.ParseBool(s)
		s, n.Tag = strconv.FormatBool(b), "!!bool"
	default:
		err = fmt.Errorf("%w: a value of type %q", ErrUnsupported, typ)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	n.Value, n.Style = s, 0
	return nil
}

// nodeBytes is what a scalar contributes to the MAC, decoded as SOPS decodes it.
func nodeBytes(n *yaml.Node, path []string) ([]byte, string, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, "", fmt.Errorf("%w: %s: %v", ErrMalformed, strings.Join(path, "."), err)
	}
	b, typ, err := scalarBytes(v)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return b, typ, nil
}

// walk calls leaf for every scalar under n with the keys of the mappings on its way, in
// document order; a sequence's items share their sequence's path, as in SOPS.
func walk(n *yaml.Node, path []string, leaf func(*yaml.Node, []string) error) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			var name any
			if k.Kind != yaml.ScalarNode || k.Decode(&name) != nil {
				return fmt.Errorf("%w: a key that is not a scalar under %s", ErrUnsupported, strings.Join(path, "."))
			}
			if _, ok := name.(string); !ok {
				return fmt.Errorf("%w: the key %q under %s is not a string", ErrUnsupported, k.Value, strings.Join(path, "."))
			}
			if err := walk(n.Content[i+1], append(path[:len(path):len(path)], k.Value), leaf); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			if err := walk(item, path, leaf); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return leaf(n, path)
	default:
		return fmt.Errorf("%w: an alias under %s", ErrUnsupported, strings.Join(path, "."))
	}
	return nil
}

// selected reports whether SOPS encrypts the values at path: any key on it matches.
func selected(re *regexp.Regexp, path []string) bool {
	for _, p := range path {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

// additionalData binds a value to its path: the keys joined and ended by ":".
func additionalData(path []string) string { return strings.Join(path, ":") + ":" }

// parseDocument reads a single YAML document whose root is a mapping.
func parseDocument(doc []byte) (*yaml.Node, *yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%w: the document is not a mapping", ErrMalformed)
	}
	return &root, root.Content[0], nil
}

// metadataIndex is the index of the sops key in a mapping's content, or -1.
func metadataIndex(body *yaml.Node) int {
	for i := 0; i+1 < len(body.Content); i += 2 {
		if body.Content[i].Value == metadataKey {
			return i
		}
	}
	return -1
}

// emit writes a document indented by four spaces, as sops does.
func emit(root *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(4)
	if err := e.Encode(root); err != nil {
		return nil, err
	}
	if err := e.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
