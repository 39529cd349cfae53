package sopsenc_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
)

func newKey(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func testSecret() *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "r-cloud-credentials", Namespace: "magnum-p",
			Labels:      map[string]string{"magnum.openstack.org/cluster-uuid": "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"},
			Annotations: map[string]string{"kustomize.toolkit.fluxcd.io/prune": "disabled"}},
		StringData: map[string]string{"clouds.yaml": "clouds:\n  openstack:\n    auth:\n      application_credential_secret: s3cr3t-value-9f\n",
			"cacert": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"},
	}
}

var digestKey = bytes.Repeat([]byte{7}, 32)

func encrypter(t *testing.T, o sopsenc.Options) *sopsenc.Encrypter {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	}
	e, err := sopsenc.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// decryptAge decrypts with sopsenc.Decrypt, which opens files the sops library wrote
// (format_test.go); Flux's kustomize-controller decrypts ours in make e2e.
func decryptAge(t *testing.T, id *age.X25519Identity, data []byte) (*corev1.Secret, error) {
	t.Helper()
	plain, err := sopsenc.Decrypt(data, id.String())
	if err != nil {
		return nil, err
	}
	var s corev1.Secret
	if err := yaml.UnmarshalStrict(plain, &s); err != nil {
		t.Fatalf("decrypted document is not a Secret: %v\n%s", err, plain)
	}
	return &s, nil
}

func TestRoundTrip(t *testing.T) {
	id := newKey(t)
	for _, mode := range []string{"digest", "identity"} {
		t.Run(mode, func(t *testing.T) {
			o := sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}}
			if mode == "digest" {
				o.DigestKey = digestKey
			} else {
				o.Identity = id.String()
			}
			e := encrypter(t, o)
			orig := testSecret()
			enc, err := e.Encrypt(orig)
			if err != nil {
				t.Fatal(err)
			}
			for _, leak := range []string{"s3cr3t-value-9f", "MIIB", "application_credential_secret"} {
				if bytes.Contains(enc, []byte(leak)) {
					t.Errorf("%q appears in clear:\n%s", leak, enc)
				}
			}
			for _, clear := range []string{"kind: Secret", "name: r-cloud-credentials", "encrypted_regex: ^(data|stringData)$", "recipient: age1"} {
				if !bytes.Contains(enc, []byte(clear)) {
					t.Errorf("%q must stay readable for Flux:\n%s", clear, enc)
				}
			}
			got, err := decryptAge(t, id, enc)
			if err != nil {
				t.Fatal(err)
			}
			if mode == "digest" {
				if !strings.HasPrefix(got.Annotations[sopsenc.DigestAnnotation], "hmac-sha256:") {
					t.Errorf("digest annotation = %q", got.Annotations[sopsenc.DigestAnnotation])
				}
				delete(got.Annotations, sopsenc.DigestAnnotation)
			}
			want, _ := yaml.Marshal(orig)
			have, _ := yaml.Marshal(got)
			if !bytes.Equal(want, have) {
				t.Errorf("round trip changed the Secret:\nwant %s\ngot  %s", want, have)
			}
		})
	}
}

func TestTamperedMACFailsToDecrypt(t *testing.T) {
	id := newKey(t)
	e := encrypter(t, sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}, DigestKey: digestKey})
	enc, err := e.Encrypt(testSecret())
	if err != nil {
		t.Fatal(err)
	}
	// metadata is in clear but covered by the MAC: changing it must break decryption.
	tampered := bytes.Replace(enc, []byte("name: r-cloud-credentials"), []byte("name: r-other-credentials"), 1)
	if bytes.Equal(tampered, enc) {
		t.Fatal("tamper did not apply")
	}
	if _, err := decryptAge(t, id, tampered); err == nil || !strings.Contains(strings.ToLower(err.Error()), "mac") {
		t.Errorf("decrypting a tampered file: %v, want a MAC mismatch", err)
	}
	other := newKey(t)
	if _, err := decryptAge(t, other, enc); err == nil {
		t.Error("a stranger's key decrypted the file")
	}
}

// encryptOver is the file the reconciler writes for s where old is: old when it holds s
// for the current recipients (Unchanged), else s encrypted anew.
func encryptOver(e *sopsenc.Encrypter, old []byte, s *corev1.Secret) ([]byte, error) {
	same, err := e.Unchanged(old, s)
	if err != nil || same {
		return old, err
	}
	return e.Encrypt(s)
}

func TestIdempotentAndChanges(t *testing.T) {
	t.Parallel()
	id := newKey(t)
	for _, mode := range []string{"digest", "identity"} {
		o := sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}}
		if mode == "digest" {
			o.DigestKey = digestKey
		} else {
			o.Identity = id.String()
		}
		e := encrypter(t, o)
		first, err := e.Encrypt(testSecret())
		if err != nil {
			t.Fatal(err)
		}
		again, err := encryptOver(e, first, testSecret())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Errorf("%s: re-rendering an unchanged Secret changed the file", mode)
		}
		changed := testSecret()
		changed.StringData["cacert"] += "x"
		b, err := encryptOver(e, first, changed)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(first, b) {
			t.Errorf("%s: a changed value kept the old ciphertext", mode)
		}
		relabel := testSecret()
		relabel.Labels["magnum.openstack.org/user-id"] = "u2"
		if b, _ := encryptOver(e, first, relabel); bytes.Equal(first, b) {
			t.Errorf("%s: changed metadata kept the old file", mode)
		}
	}
}

func TestRecipientRotation(t *testing.T) {
	old, next := newKey(t), newKey(t)
	e1 := encrypter(t, sopsenc.Options{AgeRecipients: []string{old.Recipient().String()}, DigestKey: digestKey})
	first, err := e1.Encrypt(testSecret())
	if err != nil {
		t.Fatal(err)
	}
	e2 := encrypter(t, sopsenc.Options{AgeRecipients: []string{old.Recipient().String(), next.Recipient().String()}, DigestKey: digestKey})
	rotated, err := encryptOver(e2, first, testSecret())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, rotated) {
		t.Fatal("adding a recipient kept the old ciphertext")
	}
	for _, id := range []*age.X25519Identity{old, next} {
		if _, err := decryptAge(t, id, rotated); err != nil {
			t.Errorf("recipient cannot decrypt after rotation: %v", err)
		}
	}
	if again, _ := encryptOver(e2, rotated, testSecret()); !bytes.Equal(again, rotated) {
		t.Error("the rotated file is not stable on the next render")
	}
}

// TestRecipientsFuncRotation: with RecipientsFunc one Encrypter follows a rotation as two
// Encrypters do in TestRecipientRotation: the next Secret written is for the new
// recipients, the unchanged file is rewritten once and then kept, and .sops.yaml names them.
func TestRecipientsFuncRotation(t *testing.T) {
	old, next := newKey(t), newKey(t)
	recipients := []string{old.Recipient().String()}
	e := encrypter(t, sopsenc.Options{RecipientsFunc: func() []string { return recipients }, DigestKey: digestKey})
	first, err := e.Encrypt(testSecret())
	if err != nil {
		t.Fatal(err)
	}
	recipients = []string{next.Recipient().String(), old.Recipient().String()}
	rotated, err := encryptOver(e, first, testSecret())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(first, rotated) {
		t.Fatal("adding a recipient kept the old ciphertext")
	}
	for _, id := range []*age.X25519Identity{old, next} {
		if _, err := decryptAge(t, id, rotated); err != nil {
			t.Errorf("recipient cannot decrypt after rotation: %v", err)
		}
	}
	if again, _ := encryptOver(e, rotated, testSecret()); !bytes.Equal(again, rotated) {
		t.Error("the rotated file is not stable on the next render")
	}
	if rules := string(e.CreationRules("clusters/magnum")); !strings.Contains(rules, next.Recipient().String()) {
		t.Errorf(".sops.yaml does not follow the rotation:\n%s", rules)
	}
	if got := e.Recipients(); len(got) != 2 || got[0] > got[1] {
		t.Errorf("Recipients() = %v, want both, sorted", got)
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	id := newKey(t)
	r := id.Recipient().String()
	cases := []struct {
		o    sopsenc.Options
		want string
	}{
		{sopsenc.Options{}, "age_recipients is empty"},
		{sopsenc.Options{AgeRecipients: []string{"age1notakey"}, DigestKey: digestKey}, "sops.age_recipients[0]"},
		{sopsenc.Options{AgeRecipients: []string{r}}, "digest_key_file"},
		{sopsenc.Options{AgeRecipients: []string{r}, DigestKey: []byte("short")}, "at least 32 bytes"},
		{sopsenc.Options{AgeRecipients: []string{r}, Identity: "AGE-SECRET-KEY-1BOGUS"}, "not an age identity"},
	}
	for _, tc := range cases {
		_, err := sopsenc.New(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o.AgeRecipients, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "BOGUS") {
			t.Error("error quotes key material")
		}
	}
	if _, err := sopsenc.New(sopsenc.Options{}); !errors.Is(err, sopsenc.ErrNoRecipients) {
		t.Errorf("want ErrNoRecipients, got %v", err)
	}
}

func TestCreationRules(t *testing.T) {
	t.Parallel()
	id := newKey(t)
	e := encrypter(t, sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}, DigestKey: digestKey})
	var doc struct {
		CreationRules []map[string]string `json:"creation_rules"`
	}
	if err := yaml.Unmarshal(e.CreationRules("clusters/magnum"), &doc); err != nil {
		t.Fatal(err)
	}
	r := doc.CreationRules[0]
	if r["path_regex"] != `^clusters/magnum/.*\.sops\.yaml$` || r["encrypted_regex"] != sopsenc.EncryptedRegex || r["age"] != id.Recipient().String() {
		t.Errorf("rules = %v", r)
	}
}
