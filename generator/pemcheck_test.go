package generator

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/fixtures"
)

// checkPEMReference is checkPEM as first written, over encoding/pem.Decode.
func checkPEMReference(p *problems, field, s string, types ...string) {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		ok := false
		for _, t := range types {
			ok = ok || b.Type == t
		}
		if !ok {
			p.add(field, "PEM block %d is a %q, want %s", n+1, b.Type, fmt.Sprint(types))
			return
		}
		n++
	}
	if n == 0 {
		p.add(field, "must be PEM (%s)", types[0])
	}
}

const testCert = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUKoyoWAsFSbBENDUqarVvyIzB+MAwCgYIKoZIzj0EAwIw
IzEhMB8GA1UEAwwYbWFnbnVtLWdpdG9wcy1maXh0dXJlLWNhMB4XDTI2MTEyMjE2
lBqkeR9ySQTqTni0L7GErubhVVPtSPnPY37xk+30pQ==
-----END CERTIFICATE-----
`

var pemCases = []string{
	"",
	"not pem",
	testCert,
	testCert + testCert,
	"junk before\n" + testCert + "junk after",
	strings.ReplaceAll(testCert, "\n", "\r\n"),
	strings.Replace(testCert, "CERTIFICATE-----\n", "CERTIFICATE----- \t\n", 1),
	strings.Replace(testCert, "MIIB", "MI IB\t", 1),
	strings.Replace(testCert, "pQ==", "pQ=", 1),  // bad padding: Decode skips the block
	strings.Replace(testCert, "pQ==", "p!==", 1), // bad base64
	strings.Replace(testCert, "-----END CERTIFICATE-----", "-----END CERTIFICATE----", 1),
	strings.Replace(testCert, "-----END CERTIFICATE-----", "-----END CERT-----", 1),
	strings.Replace(testCert, "-----END CERTIFICATE-----", "-----END CERTIFICATE----- x", 1),
	strings.Replace(testCert, "-----BEGIN CERTIFICATE-----", "-----BEGIN CERTIFICATE----", 1),
	strings.Replace(testCert, "-----BEGIN CERTIFICATE-----\n", "-----BEGIN CERTIFICATE-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: x\n\n", 1),
	"-----BEGIN A-----\nK: v\n-----END A-----\n",
	"-----BEGIN A-----\n-----END A-----\n",
	"-----BEGIN A-----\n\n-----END A-----\n",
	"-----BEGIN A-----\n-----END A-----",
	"-----BEGIN A-----\n-----BEGIN B-----\nAAAA\n-----END B-----\n",
	"-----BEGIN A-----\nAAAA\n-----BEGIN B-----\nAAAA\n-----END B-----\n-----END A-----\n",
	"x-----BEGIN A-----\nAAAA\n-----END A-----\n",
	"\n-----BEGIN A-----\nAAAA\n-----END A-----\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
	"-----BEGIN -----BEGIN A-----\nAAAA\n-----END A-----\n",
	"-----BEGIN A-----\nAAAA\n-----END \n-----END A-----\n",
	"-----BEGIN A-----",
	"-----BEGIN A-----\n",
	"-----BEGIN A-----\nK: v",
	"\n-----END A-----\n",
}

// pemBlocks lists the blocks of data as decode finds them one after the other: each
// block's type and the length of the rest after it.
func pemBlocks(data []byte, decode func([]byte) (string, []byte, bool)) []string {
	var out []string
	for {
		typ, rest, ok := decode(data)
		if !ok {
			return out
		}
		out = append(out, fmt.Sprintf("%q rest %d", typ, len(rest)))
		data = rest
	}
}

func checkPEMEqual(t *testing.T, data []byte) {
	t.Helper()
	got := pemBlocks(data, func(b []byte) (string, []byte, bool) {
		typ, rest, ok := pemBlockType(string(b))
		return typ, []byte(rest), ok
	})
	want := pemBlocks(data, func(b []byte) (string, []byte, bool) {
		blk, rest := pem.Decode(b)
		if blk == nil {
			return "", rest, false
		}
		return blk.Type, rest, true
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blocks in %q: pemBlockType against pem.Decode (-want +got):\n%s", data, diff)
	}
	for _, types := range [][]string{pemCertificate, pemPrivateKey, {"A", "B"}} {
		var gotP, wantP problems
		checkPEM(&gotP, "f", string(data), types...)
		checkPEMReference(&wantP, "f", string(data), types...)
		if g, w := fmt.Sprint(gotP.list), fmt.Sprint(wantP.list); g != w {
			t.Errorf("checkPEM(%q, %v) = %s, the reference gives %s", data, types, g, w)
		}
	}
}

func TestPEMBlockType(t *testing.T) {
	t.Parallel()
	for _, s := range pemCases {
		checkPEMEqual(t, []byte(s))
	}
	// The fixture's real material, alone and concatenated.
	all := ""
	for _, s := range fixturePEM(t) {
		checkPEMEqual(t, []byte(s))
		all += s
	}
	checkPEMEqual(t, []byte(all))
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

func TestLastIndex(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "aa", "aaa", "abab", "xaaay", "ba", "-----BEGIN -----BEGIN x"} {
		for _, sep := range []string{"a", "aa", "ab", "-----BEGIN "} {
			if got, want := lastIndex(s, sep), strings.LastIndex(s, sep); got != want {
				t.Errorf("lastIndex(%q, %q) = %d, want %d", s, sep, got, want)
			}
		}
	}
}

var base64Cases = []string{
	"", "\n", "\r\n", " \t", "AAAA", "AAA", "AA", "A", "AAAAA", "AAA=", "AA==", "A===", "AAAA====",
	"AA=", "AA=\n=", "AA= =", "AA=\n", "AA==\r\n", "AA==A", "AA==\nA", "AAA=A", "AAAA=", "=", "==",
	"AB+/", "AB-_", "AB\x00C", "AB\xffC", "A\nA\rA A\tA", "AAAA\nAAAA\nAAAA\nAAAA", "AAAAAAAAAAA=",
	"AAAAAAAAAA==", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAA!AA", "QUJD", "QUI=", "QQ==",
	"QR==", "QUJ=", // unused bits set: accepted, the encoding is not strict
}

// checkBase64 compares isBase64 with what encoding/pem does to a body: remove spaces and
// tabs, then base64.StdEncoding.Decode.
func checkBase64(t *testing.T, s string) {
	t.Helper()
	body := strings.NewReplacer(" ", "", "\t", "").Replace(s)
	_, err := base64.StdEncoding.Decode(make([]byte, base64.StdEncoding.DecodedLen(len(body))), []byte(body))
	if got, want := isBase64(s), err == nil; got != want {
		t.Errorf("isBase64(%q) = %t, base64 says %v", s, got, err)
	}
}

func TestIsBase64(t *testing.T) {
	t.Parallel()
	for _, s := range base64Cases {
		checkBase64(t, s)
	}
	for c := range 256 {
		for _, s := range []string{"AAA", "AA", "AAAA", "AA="} {
			checkBase64(t, s+string([]byte{byte(c)}))
		}
	}
}

// FuzzIsBase64 holds isBase64 equal to base64.StdEncoding.Decode.
func FuzzIsBase64(f *testing.F) {
	for _, s := range base64Cases {
		f.Add(s)
	}
	f.Fuzz(checkBase64)
}

// FuzzPEMBlockType holds pemBlockType and checkPEM equal to encoding/pem.Decode and the
// checkPEM written over it.
//
//	go test ./generator -run '^$' -fuzz FuzzPEMBlockType -fuzztime 60s
func FuzzPEMBlockType(f *testing.F) {
	for _, s := range pemCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkPEMEqual(t, data) })
}

// BenchmarkCheckPEM checks the nine PEM values of the fixture event, as every render of
// it does: with checkPEM, and with checkPEMReference over encoding/pem side by side.
func BenchmarkCheckPEM(b *testing.B) {
	values := fixturePEM(b)
	for _, impl := range []struct {
		name  string
		check func(p *problems, field, s string, types ...string)
	}{{"checkPEM", checkPEM}, {"encoding-pem", checkPEMReference}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var p problems
				impl.check(&p, "f", values[0], pemCertificate...)
				for i := 1; i < len(values); i += 2 {
					impl.check(&p, "f", values[i], pemCertificate...)
					impl.check(&p, "f", values[i+1], pemPrivateKey...)
				}
				if len(p.list) > 0 {
					b.Fatal(p.list)
				}
			}
		})
	}
}
