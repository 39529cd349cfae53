package gitrepo_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestOptionsHistory: a History bound is counts and a duration, none negative, and a time
// bound needs a count to start from.
func TestOptionsHistory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		history gitrepo.History
		err     string
	}{
		{gitrepo.History{}, ""},
		{gitrepo.History{Commits: 1000}, ""},
		{gitrepo.History{Commits: 1000, Since: time.Hour, MaxCommits: 20000}, ""},
		{gitrepo.History{Commits: -1}, "history: must not be negative"},
		{gitrepo.History{Commits: 10, Since: -time.Second}, "history: must not be negative"},
		{gitrepo.History{Since: time.Hour, MaxCommits: 10}, "history: since and max_commits need commits"},
	} {
		o := testOptions("https://git.example.org/r.git")
		o.History = tc.history
		err := o.Validate()
		if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("History %+v: Validate() = %v, want %q", tc.history, err, tc.err)
		}
	}
}

// sshGitServer serves git-upload-pack and git-receive-pack over SSH (x/crypto/ssh),
// accepting one client key, the way a forge's SSH endpoint does.
type sshGitServer struct {
	addr    string
	hostKey ssh.Signer
}

func newSSHGitServer(t *testing.T, root string, clientKey ssh.PublicKey) *sshGitServer {
	t.Helper()
	return newSSHGitServerFunc(t, root, func(k ssh.PublicKey) bool { return string(k.Marshal()) == string(clientKey.Marshal()) })
}

// newSSHGitServerFunc is newSSHGitServer accepting the client keys accept says yes to.
func newSSHGitServerFunc(t *testing.T, root string, accept func(ssh.PublicKey) bool) *sshGitServer {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostKey, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
		if accept(k) {
			return nil, nil
		}
		return nil, errors.New("unknown key")
	}}
	cfg.AddHostKey(hostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(c, cfg, root)
		}
	}()
	return &sshGitServer{addr: ln.Addr().String(), hostKey: hostKey}
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig, root string) {
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for req := range requests {
				if req.Type != "exec" {
					req.Reply(req.Type == "env", nil)
					continue
				}
				n := binary.BigEndian.Uint32(req.Payload[:4])
				command := string(req.Payload[4 : 4+n])
				verb, arg, _ := strings.Cut(command, " ")
				if verb != "git-upload-pack" && verb != "git-receive-pack" {
					req.Reply(false, nil)
					return
				}
				req.Reply(true, nil)
				repo := filepath.Join(root, filepath.Base(strings.Trim(arg, "'\"")))
				cmd := exec.Command(verb, repo)
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				status := uint32(0)
				if err := cmd.Run(); err != nil {
					status = 1
				}
				ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, status))
				return
			}
		}()
	}
}

func TestSSHRemote(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bareRepo(t, filepath.Join(root, "r.git"))
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	clientPub, _ := ssh.NewPublicKey(pub)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "id_ed25519")
	os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600)
	srv := newSSHGitServer(t, root, clientPub)
	knownHosts := filepath.Join(dir, "known_hosts")
	host, port, _ := net.SplitHostPort(srv.addr)
	line := fmt.Sprintf("[%s]:%s %s", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(srv.hostKey.PublicKey()))))
	os.WriteFile(knownHosts, []byte(line+"\n"), 0o600)

	o := testOptions(fmt.Sprintf("ssh://git@%s/r.git", srv.addr))
	o.Auth = gitrepo.Auth{SSHKeyFile: keyFile, KnownHostsFile: knownHosts}
	r := open(t, o)
	if _, err := r.Apply(context.Background(), change("over ssh", map[string]string{"a/b.yaml": "ssh: true\n"})); err != nil {
		t.Fatal(err)
	}
	checkRepo(t, filepath.Join(root, "r.git"))
	if got, ok := fileAt(t, filepath.Join(root, "r.git"), "main", "a/b.yaml"); !ok || string(got) != "ssh: true\n" {
		t.Errorf("content = %q", got)
	}

	// A host key that is not the known one is refused: no trust on first use.
	_, otherPriv, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewSignerFromKey(otherPriv)
	bad := filepath.Join(dir, "known_hosts_wrong")
	os.WriteFile(bad, []byte(fmt.Sprintf("[%s]:%s %s\n", host, port, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(other.PublicKey()))))), 0o600)
	o.Auth.KnownHostsFile = bad
	if _, err := gitrepo.Open(context.Background(), o); err == nil || !strings.Contains(err.Error(), "key") {
		t.Errorf("a wrong host key was accepted: %v", err)
	}
	// A key the server does not know is refused.
	_, strangerPriv, _ := ed25519.GenerateKey(rand.Reader)
	sb, _ := ssh.MarshalPrivateKey(strangerPriv, "")
	stranger := filepath.Join(dir, "stranger")
	os.WriteFile(stranger, pem.EncodeToMemory(sb), 0o600)
	o.Auth = gitrepo.Auth{SSHKeyFile: stranger, KnownHostsFile: knownHosts}
	if _, err := gitrepo.Open(context.Background(), o); err == nil {
		t.Error("an unknown client key was accepted")
	}
}
