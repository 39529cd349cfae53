package gitrepo

import (
	"fmt"
	"net/http"
	"os"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// authMethod turns Auth into a go-git transport.AuthMethod. Both kinds that read a file
// or a function read it again per connection, so a rotated credential needs no restart.
func (a Auth) authMethod(ep *transport.Endpoint, refused func(error)) (transport.AuthMethod, error) {
	switch {
	case a.SSHKeyFile != "":
		user := a.Username
		if user == "" {
			user = ep.User
		}
		if user == "" {
			user = "git"
		}
		k := &sshKeys{user: user, keyFile: a.SSHKeyFile, passphrase: a.SSHKeyPassphrase, knownHosts: a.KnownHostsFile, refused: refused}
		if err := k.load(); err != nil {
			return nil, err
		}
		return k, nil
	case a.Credential != nil:
		user := a.Username
		if user == "" {
			user = "git"
		}
		return &credentialAuth{user: user, credential: a.Credential}, nil
	case a.Token != "":
		user := a.Username
		if user == "" {
			user = "git"
		}
		return &githttp.BasicAuth{Username: user, Password: a.Token}, nil
	case a.Password != "" || a.Username != "":
		return &githttp.BasicAuth{Username: a.Username, Password: a.Password}, nil
	}
	return nil, nil
}

// credentialAuth is HTTP basic auth whose password is asked for at each request.
type credentialAuth struct {
	user       string
	credential func() string
}

func (c *credentialAuth) Name() string { return "http-basic-auth" }

// String never shows the credential: go-git prints auth methods in some errors.
func (c *credentialAuth) String() string { return fmt.Sprintf("%s - %s:*******", c.Name(), c.user) }

func (c *credentialAuth) SetAuth(r *http.Request) { r.SetBasicAuth(c.user, c.credential()) }

var _ githttp.AuthMethod = (*credentialAuth)(nil)

// sshKeys is a private key and known hosts file, loaded again when either file changes
// (Kubernetes replaces a mounted Secret's files in place). A new pair that does not load
// keeps the last good one, told once per change to refused.
type sshKeys struct {
	user, keyFile, passphrase, knownHosts string
	refused                               func(error)

	mu     sync.Mutex
	stamps [2]os.FileInfo
	keys   *gitssh.PublicKeys
}

func (k *sshKeys) Name() string { return gitssh.PublicKeysName }

func (k *sshKeys) String() string {
	return fmt.Sprintf("user: %s, name: %s", k.user, k.Name())
}

// ClientConfig is ssh.AuthMethod's: go-git asks it at each connection.
func (k *sshKeys) ClientConfig() (*ssh.ClientConfig, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.changed() {
		if err := k.load(); err != nil && k.refused != nil {
			k.refused(err)
		}
	}
	return k.keys.ClientConfig()
}

var _ gitssh.AuthMethod = (*sshKeys)(nil)

// changed reports whether either file is not the one last loaded.
func (k *sshKeys) changed() bool {
	for i, f := range []string{k.keyFile, k.knownHosts} {
		fi, err := os.Stat(f)
		last := k.stamps[i]
		if err != nil || last == nil {
			if err == nil || last != nil {
				return true
			}
			continue
		}
		if !os.SameFile(fi, last) || !fi.ModTime().Equal(last.ModTime()) || fi.Size() != last.Size() {
			return true
		}
	}
	return false
}

// load reads both files; the stamps move even when they do not load, so a bad pair is
// told once and the next change is read again.
func (k *sshKeys) load() error {
	for i, f := range []string{k.keyFile, k.knownHosts} {
		k.stamps[i], _ = os.Stat(f)
	}
	keys, err := gitssh.NewPublicKeysFromFile(k.user, k.keyFile, k.passphrase)
	if err != nil {
		return fmt.Errorf("auth.ssh_key_file: %w", err)
	}
	if _, err := os.Stat(k.knownHosts); err != nil {
		return fmt.Errorf("auth.known_hosts_file: %w", err)
	}
	cb, err := knownhosts.New(k.knownHosts)
	if err != nil {
		return fmt.Errorf("auth.known_hosts_file: %w", err)
	}
	keys.HostKeyCallback = cb
	k.keys = keys
	return nil
}

// authRefused is whom a rotated credential that does not load is told to.
func (o *Options) authRefused() func(error) {
	switch {
	case o.AuthRefused != nil:
		return o.AuthRefused
	case o.Warn != nil:
		return func(err error) {
			o.Warn("the changed SSH key or known hosts file does not load; the last good one stays in use: " + err.Error())
		}
	}
	return nil
}
