package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// tlsSet reports whether serve.tls names a key pair (TLSConfig refuses half of one).
func (c *Serve) tlsSet() bool { return c.TLS.CertFile != "" || c.TLS.KeyFile != "" }

// CheckListen decides whether the API may listen on addr (what --listen, else
// serve.listen, else the default gave; fromFlag says it was --listen, so the error names
// it). Events carry CA private keys and application credential secrets, so plain HTTP is
// served only where nobody else can read it, on loopback, unless serve.allow_plain_http
// says a TLS-terminating proxy or ingress is in front: then plainOutside is true, for the
// one warning serve logs. An address that is not host:port, or plain HTTP on an address
// other than loopback without that key, is an error naming the keys to set. The ops
// listener carries no secret and is not checked.
func (c *Serve) CheckListen(addr string, fromFlag bool) (plainOutside bool, err error) {
	key := "serve.listen"
	if fromFlag {
		key = "--listen"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not host:port (127.0.0.1:8080, :8443): %w", key, addr, err)
	}
	switch {
	case c.tlsSet() || loopback(host):
		return false, nil
	case c.AllowPlainHTTP:
		return true, nil
	}
	return false, fmt.Errorf("%s: %q is not a loopback address and serve.tls is not set: events (CA private keys, application credentials) "+
		"would cross the network in plain HTTP; set serve.tls.cert_file and key_file (the chart's tls.enabled), "+
		"listen on 127.0.0.1, or set serve.allow_plain_http: true when a TLS-terminating proxy or ingress is in front", key, addr)
}

// loopback reports whether host only reaches this machine: localhost, 127.0.0.0/8 or ::1.
// An empty host is every address of the machine, and a name other than localhost may
// resolve anywhere: neither is loopback.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
