package config

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"filippo.io/age"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// reloadCheck is how often a reloading file is looked at: at most one stat of each file
// a second, however many requests ask.
const reloadCheck = time.Second

// watched is a set of files read together, read again once any of them changes:
// Kubernetes updates a mounted Secret in place (a new ..data directory, the file a symbolic
// link into it), so a rotated Secret reaches the process without a restart. load turns the
// files' contents into the value; when it fails on new contents, the last good value stays,
// and onInvalid is told once per change.
type watched[T any] struct {
	files     []string
	load      func(contents [][]byte) (T, error)
	onInvalid func(err error)
	now       func() time.Time

	mu      sync.Mutex
	value   T
	stamps  []os.FileInfo
	checked time.Time
}

// open reads the files and loads them once: an error here is the start's to refuse.
func (w *watched[T]) open() error {
	w.now = time.Now
	stamps, value, err := w.read()
	if err != nil {
		return err
	}
	w.stamps, w.value, w.checked = stamps, value, w.now()
	return nil
}

// get returns the value, loaded again first when a file changed since the last look.
func (w *watched[T]) get() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := w.now(); now.Sub(w.checked) >= reloadCheck {
		w.checked = now
		if w.changed() {
			stamps, value, err := w.read()
			switch {
			case err != nil && w.onInvalid != nil:
				w.onInvalid(err)
				fallthrough
			case err != nil:
				w.stamps = stamps // told once; the next change is read again
			default:
				w.stamps, w.value = stamps, value
			}
		}
	}
	return w.value
}

// changed reports whether a file is not the one last read (another file, size or time).
func (w *watched[T]) changed() bool {
	for i, f := range w.files {
		fi, err := os.Stat(f)
		switch last := w.stamps[i]; {
		case err != nil:
			if last != nil {
				return true // gone since: told once, then left until it is back
			}
		case last == nil, !os.SameFile(fi, last), !fi.ModTime().Equal(last.ModTime()), fi.Size() != last.Size():
			return true
		}
	}
	return false
}

// read stats and reads every file, then loads them. The stamps are taken before the
// contents, so a change during the read is seen again at the next look.
func (w *watched[T]) read() ([]os.FileInfo, T, error) {
	var zero T
	stamps := make([]os.FileInfo, len(w.files))
	contents := make([][]byte, len(w.files))
	for i, f := range w.files {
		fi, err := os.Stat(f)
		if err != nil {
			return stamps, zero, err
		}
		stamps[i] = fi
		if contents[i], err = os.ReadFile(f); err != nil {
			return stamps, zero, err
		}
	}
	v, err := w.load(contents)
	return stamps, v, err
}

// Refused hears of a changed file that did not load: what names the file's kind (the
// label of serve's magnum_gitops_reload_errors_total), and the returned function is told
// the error. A nil Refused says nothing.
type Refused func(what string) func(error)

// Of is the function told of what's refusals; nil when r is.
func (r Refused) Of(what string) func(error) {
	if r == nil {
		return nil
	}
	return r(what)
}

// SecretFile is one credential file (git.auth.token_file, a forge's token_file, its
// webhook_secret_file), read again when it changes: a Secret rotated in place is used from
// the next request on. A change to an empty or unreadable file keeps the last good value.
type SecretFile struct{ w watched[string] }

// OpenSecretFile reads a credential file, an error naming field when it is empty or
// unreadable (an empty credential would mean anonymous access unnoticed).
func OpenSecretFile(field, path string, onInvalid func(error)) (*SecretFile, error) {
	s := &SecretFile{w: watched[string]{files: []string{path}, onInvalid: onInvalid, load: func(contents [][]byte) (string, error) {
		v := strings.TrimSpace(string(contents[0]))
		if v == "" {
			return "", fmt.Errorf("%s: %s is empty", field, path)
		}
		return v, nil
	}}}
	if err := s.w.open(); err != nil {
		return nil, &v1alpha1.FieldError{Field: field, Message: strings.TrimPrefix(err.Error(), field+": ")}
	}
	return s, nil
}

// Value is the credential as the file holds it now.
func (s *SecretFile) Value() string { return s.w.get() }

// RecipientsFile is sops.age_recipients_file, read again when it changes: a new recipient
// is encrypted to from the next Secret written on, and an old one dropped.
type RecipientsFile struct{ w watched[[]string] }

// OpenRecipientsFile reads the recipients file; an error names the field and the line of
// a recipient that is not an age X25519 one (age1...), or says the file holds none. Later,
// a change into such a file keeps the recipients read last, and onInvalid is told.
func OpenRecipientsFile(path string, onInvalid func(error)) (*RecipientsFile, error) {
	const field = "sops.age_recipients_file"
	r := &RecipientsFile{w: watched[[]string]{files: []string{path}, onInvalid: onInvalid, load: func(contents [][]byte) ([]string, error) {
		var out []string
		for i, line := range strings.Split(string(contents[0]), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if _, err := age.ParseX25519Recipient(line); err != nil {
				return nil, fmt.Errorf("%s: %s line %d: not an age X25519 recipient (age1...)", field, path, i+1)
			}
			out = append(out, line)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: %s holds no recipient", field, path)
		}
		return out, nil
	}}}
	if err := r.w.open(); err != nil {
		return nil, prefixed(field, err)
	}
	return r, nil
}

// Recipients are the recipients as the file holds them now; the same slice until it
// changes.
func (r *RecipientsFile) Recipients() []string { return r.w.get() }

// TokenFiles are the API's bearer tokens, one per file (serve.token_files), read again
// when a file changes: a token rotated in its Secret is accepted at once, the old one
// refused. To rotate without refusing a client in between, list two files (two keys of
// the Secret): add the new token as the second, move the clients to it, then empty the
// first one's place (docs/service.md, "Rotating secrets").
type TokenFiles struct{ w watched[[][]byte] }

// OpenTokenFiles reads the token files; an empty or unreadable one is an error naming it
// (an empty token would let anyone in). Later, a file that changes into one of those keeps
// the tokens read last, and onInvalid (when set) is told.
func OpenTokenFiles(files []string, onInvalid func(error)) (*TokenFiles, error) {
	t := &TokenFiles{w: watched[[][]byte]{files: files, onInvalid: onInvalid, load: func(contents [][]byte) ([][]byte, error) {
		out := make([][]byte, len(contents))
		for i, b := range contents {
			tok := strings.TrimSpace(string(b))
			if tok == "" {
				return nil, fmt.Errorf("serve.token_files: %s is empty", files[i])
			}
			out[i] = []byte(tok)
		}
		return out, nil
	}}}
	if err := t.w.open(); err != nil {
		return nil, prefixed("serve.token_files", err)
	}
	return t, nil
}

// Tokens returns the accepted tokens, as the files hold them now.
func (t *TokenFiles) Tokens() [][]byte { return t.w.get() }

// keyPair is the API's TLS certificate and key (serve.tls), read again when either file
// changes: cert-manager renews the Certificate's Secret in place, and new connections get
// the new certificate without a restart.
type keyPair struct{ w watched[*tls.Certificate] }

func openKeyPair(certFile, keyFile string, onInvalid func(error)) (*keyPair, error) {
	k := &keyPair{w: watched[*tls.Certificate]{files: []string{certFile, keyFile}, onInvalid: onInvalid,
		load: func(contents [][]byte) (*tls.Certificate, error) {
			c, err := tls.X509KeyPair(contents[0], contents[1])
			if err != nil {
				return nil, fmt.Errorf("serve.tls.cert_file/key_file: %w", err)
			}
			// An expired certificate would make every client refuse serve: keep serving the
			// last good one (on a rotation), or do not start.
			switch now := time.Now(); {
			case now.After(c.Leaf.NotAfter):
				return nil, fmt.Errorf("serve.tls.cert_file: %s expired at %s", certFile, c.Leaf.NotAfter.UTC().Format(time.RFC3339))
			case now.Before(c.Leaf.NotBefore):
				return nil, fmt.Errorf("serve.tls.cert_file: %s is not valid before %s", certFile, c.Leaf.NotBefore.UTC().Format(time.RFC3339))
			}
			return &c, nil
		}}}
	if err := k.w.open(); err != nil {
		return nil, prefixed("serve.tls.cert_file/key_file", err)
	}
	return k, nil
}

// certificate is tls.Config.GetCertificate.
func (k *keyPair) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) { return k.w.get(), nil }

// prefixed names the option in err unless err names it already.
func prefixed(option string, err error) error {
	if strings.HasPrefix(err.Error(), option) {
		return err
	}
	return fmt.Errorf("%s: %w", option, err)
}
