package sopsenc

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"
)

// testdata/*.sops.yaml were written by the sops library (v3.13.3, the same calls as
// `sops --encrypt --age … --encrypted-regex '^(data|stringData)$'`) from the plain
// testdata/*.yaml beside them, for the identity in testdata/age.agekey. secret is a Secret
// with a label named data (encrypted too: any key on the path counts), a list, an empty
// value and strings that look like a number and a boolean; types has ints, floats,
// booleans, lists and nested mappings under data, and clear ones around it.
var sopsLibraryFiles = []string{"secret", "types"}

// stayClear are lines of the plain files, indentation aside, that encrypting leaves alone.
var stayClear = map[string][]string{
	"secret": {"kind: Secret", "namespace: magnum-p", "app: magnum-gitops", "- example.com/keep", `empty: ""`, "immutable: false"},
	"types":  {"kind: Types", "count: 7", "other: 1.5"},
}

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func identity(t *testing.T) string { return string(testdata(t, "age.agekey")) }

// asData is a YAML document as Go values, to compare documents whatever their layout.
func asData(t *testing.T, doc []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return v
}

func TestDecryptOpensFilesOfTheSopsLibrary(t *testing.T) {
	t.Parallel()
	for _, name := range sopsLibraryFiles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			plain, err := Decrypt(testdata(t, name+".sops.yaml"), identity(t))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(asData(t, testdata(t, name+".yaml")), asData(t, plain)); d != "" {
				t.Errorf("decrypted document differs from the plain one (-want +got):\n%s", d)
			}
		})
	}
}

func TestSealRoundTripsAndKeepsClearValues(t *testing.T) {
	t.Parallel()
	id, err := age.ParseX25519Identity(strings.TrimSpace(identity(t)))
	if err != nil {
		t.Fatal(err)
	}
	other, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, name := range sopsLibraryFiles {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			plain := testdata(t, name+".yaml")
			enc, err := seal(plain, []string{id.Recipient().String(), other.Recipient().String()}, now)
			if err != nil {
				t.Fatal(err)
			}
			var file struct {
				Sops metadata `yaml:"sops"`
			}
			if err := yaml.Unmarshal(enc, &file); err != nil {
				t.Fatal(err)
			}
			m := file.Sops
			if m.EncryptedRegex != EncryptedRegex || m.LastModified != "2026-11-22T12:00:00Z" || m.Version != formatVersion || len(m.Age) != 2 || !strings.HasPrefix(m.MAC, valuePrefix) {
				t.Errorf("sops metadata = %+v", m)
			}
			for _, clear := range stayClear[name] {
				if !bytes.Contains(enc, []byte(clear)) {
					t.Errorf("%q is no longer in clear:\n%s", clear, enc)
				}
			}
			for _, secret := range []string{"fixture-secret-NOT-REAL-1c2d", "a-label-named-data", "hello", "deeper: value"} {
				if bytes.Contains(enc, []byte(secret)) {
					t.Errorf("%q is in clear:\n%s", secret, enc)
				}
			}
			for _, ident := range []*age.X25519Identity{id, other} {
				got, err := Decrypt(enc, ident.String())
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(asData(t, plain), asData(t, got)); d != "" {
					t.Errorf("round trip changed the document (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestSealRecordsValueTypes(t *testing.T) {
	t.Parallel()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	enc, err := seal(testdata(t, "types.yaml"), []string{id.Recipient().String()}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data map[string]any `yaml:"data"`
	}
	if err := yaml.Unmarshal(enc, &doc); err != nil {
		t.Fatal(err)
	}
	for key, typ := range map[string]string{"text": "str", "count": "int", "negative": "int", "ratio": "float", "big": "float", "on": "bool", "off": "bool", "quoted": "str"} {
		v, _ := doc.Data[key].(string)
		if !strings.HasPrefix(v, valuePrefix) || !strings.HasSuffix(v, ",type:"+typ+"]") {
			t.Errorf("data.%s = %q, want an ENC value of type %s", key, v, typ)
		}
	}
}

func TestDecryptRefuses(t *testing.T) {
	t.Parallel()
	file := string(testdata(t, "secret.sops.yaml"))
	value := func(key string) string { // the line of an encrypted value, from its key on
		i := strings.Index(file, key+": ENC[")
		return file[i : i+strings.Index(file[i:], "\n")]
	}
	swapped := strings.NewReplacer(value("port"), strings.Replace(value("flag"), "flag", "port", 1), value("flag"), strings.Replace(value("port"), "port", "flag", 1)).Replace(file)
	stranger, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, file, identity string
		want                 error
	}{
		{"a clear value changed", strings.Replace(file, "namespace: magnum-p", "namespace: magnum-q", 1), "", ErrMACMismatch},
		{"a clear value removed", strings.Replace(file, "immutable: false\n", "", 1), "", ErrMACMismatch},
		{"a list item removed", strings.Replace(file, "        - example.com/also\n", "", 1), "", ErrMACMismatch},
		{"two encrypted values swapped", swapped, "", ErrMACMismatch},
		{"an encrypted value emptied", strings.Replace(file, value("port"), `port: ""`, 1), "", ErrMACMismatch},
		{"another identity", file, stranger.String(), ErrNoDataKey},
		{"no sops metadata", "kind: Secret\ndata:\n    a: b\n", "", ErrNotEncrypted},
		{"not a mapping", "- a\n- b\n", "", ErrMalformed},
		{"not ENC", strings.Replace(file, value("port"), "port: plain", 1), "", ErrMalformed},
		{"a PGP key too", strings.Replace(file, "    version: 3.13.3", "    pgp:\n        - fp: ABCD\n          enc: x\n    version: 3.13.3", 1), "", ErrUnsupported},
		{"no encrypted_regex", strings.Replace(file, "    encrypted_regex: ^(data|stringData)$\n", "", 1), "", ErrUnsupported},
		{"an old sops's empty key lists are fine", strings.Replace(file, "    version: 3.13.3", "    kms: []\n    pgp: []\n    version: 3.13.3", 1), "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.file == file && tc.want != nil && tc.identity == "" {
				t.Fatal("the case changed nothing")
			}
			ident := tc.identity
			if ident == "" {
				ident = identity(t)
			}
			plain, err := Decrypt([]byte(tc.file), ident)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil && (plain != nil || strings.Contains(err.Error(), "NOT-REAL")) {
				t.Errorf("a refused file gave %q, %v", plain, err)
			}
		})
	}
}

func TestSealRefuses(t *testing.T) {
	t.Parallel()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, doc string
		want      error
	}{
		{"a null value", "kind: Secret\nmetadata:\n    labels: null\n", ErrUnsupported},
		{"already encrypted", string(testdata(t, "secret.sops.yaml")), ErrMalformed},
		{"not a mapping", "just text\n", ErrMalformed},
		{"a key that is a number", "data:\n    1: one\n", ErrUnsupported},
	}
	for _, tc := range cases {
		if _, err := seal([]byte(tc.doc), []string{id.Recipient().String()}, time.Now()); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}
