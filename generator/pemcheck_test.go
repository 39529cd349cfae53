package generator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

const testCert = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUKoyoWAsFSbBENDUqarVvyIzB+MAwCgYIKoZIzj0EAwIw
IzEhMB8GA1UEAwwYbWFnbnVtLWdpdG9wcy1maXh0dXJlLWNhMB4XDTI2MTEyMjE2
lBqkeR9ySQTqTni0L7GErubhVVPtSPnPY37xk+30pQ==
-----END CERTIFICATE-----
`

const testKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"

func TestCheckPEM(t *testing.T) {
	t.Parallel()
	notPEM := "f: must be PEM (CERTIFICATE)"
	cases := []struct {
		name, in string
		types    []string
		want     string // the problems, "" for none
	}{
		{"empty", "", pemCertificate, notPEM},
		{"not PEM", "not pem", pemCertificate, notPEM},
		{"a certificate", testCert, pemCertificate, ""},
		{"a chain", testCert + testCert, pemCertificate, ""},
		{"text around the block", "junk before\n" + testCert + "junk after", pemCertificate, ""},
		{"CRLF line breaks", strings.ReplaceAll(testCert, "\n", "\r\n"), pemCertificate, ""},
		{"bad padding", strings.Replace(testCert, "pQ==", "pQ=", 1), pemCertificate, notPEM},
		{"bad base64", strings.Replace(testCert, "pQ==", "p!==", 1), pemCertificate, notPEM},
		{"END of another type", strings.Replace(testCert, "-----END CERTIFICATE-----", "-----END CERT-----", 1), pemCertificate, notPEM},
		{"a key where a certificate goes", testKey, pemCertificate, `f: PEM block 1 is a "PRIVATE KEY", want [CERTIFICATE]`},
		{"a key", testKey, pemPrivateKey, ""},
		{"a certificate after the key", testKey + testCert, pemPrivateKey,
			`f: PEM block 2 is a "CERTIFICATE", want [PRIVATE KEY RSA PRIVATE KEY EC PRIVATE KEY]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p problems
			checkPEM(&p, "f", tc.in, tc.types...)
			got := ""
			if err := p.err(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("checkPEM = %q, want %q", got, tc.want)
			}
			if tc.want != "" && strings.Contains(got, "AAAA") {
				t.Errorf("the problem quotes the value: %s", got)
			}
		})
	}
	// The fixture's real material passes as the render checks it.
	values := fixturePEM(t)
	var p problems
	checkPEM(&p, "ca", values[0], pemCertificate...)
	for i := 1; i < len(values); i += 2 {
		checkPEM(&p, fmt.Sprintf("cert %d", i), values[i], pemCertificate...)
		checkPEM(&p, fmt.Sprintf("key %d", i), values[i+1], pemPrivateKey...)
	}
	if err := p.err(); err != nil {
		t.Error(err)
	}
}

// fixturePEM returns the PEM values of the fixture event 01-prod-a-create: the CA bundle,
// then each key pair's certificate and key.
func fixturePEM(t testing.TB) []string {
	t.Helper()
	data, err := fixtures.Events.ReadFile("events/01-prod-a-create.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{ev.Secrets.CABundle.Reveal()}
	for _, c := range certSecrets {
		if kp := c.pick(ev.Secrets.Certificates); kp != nil {
			out = append(out, kp.Cert, kp.Key.Reveal())
		}
	}
	if len(out) != 9 {
		t.Fatalf("%d PEM values in the fixture, want 9", len(out))
	}
	return out
}
