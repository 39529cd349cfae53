package generator

import (
	"encoding/pem"
	"fmt"
	"slices"
)

// The PEM block types checkPEM accepts for certificates and for private keys. They are
// variables so that no call builds the list again.
var (
	pemCertificate = []string{"CERTIFICATE"}
	pemPrivateKey  = []string{"PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY"}
)

// checkPEM checks that s holds PEM blocks of one of the wanted types, without ever putting
// the value into the message. The blocks are those encoding/pem.Decode finds, one after the
// other.
func checkPEM(p *problems, field, s string, types ...string) {
	n := 0
	for rest := []byte(s); ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if !slices.Contains(types, b.Type) {
			p.add(field, "PEM block %d is a %q, want %s", n+1, b.Type, fmt.Sprint(types))
			return
		}
		n++
	}
	if n == 0 {
		p.add(field, "must be PEM (%s)", types[0])
	}
}
