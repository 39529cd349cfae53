package gitrepo

import (
	"errors"
	"fmt"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Options configures a Repo.
type Options struct {
	// URL of the remote: https://, http://, ssh://, user@host:path or file://.
	URL string
	// Branch that changes go to, unless a change names a review branch. Default "main".
	// It is always protected: no review branch can be it.
	Branch string
	// ProtectedBranches are path.Match patterns (e.g. "release/*") of branches that a
	// review branch may never be.
	ProtectedBranches []string
	// Auth holds the credentials for URL.
	Auth Auth
	// CacheDir keeps a bare clone on disk between runs; empty keeps it in memory.
	CacheDir string
	// History, when set, makes the clone shallow: it bounds what a start costs and holds,
	// whatever the length of the history, to the history its readers need.
	History History
	// Author of the commits; Committer defaults to Author.
	Author    Signature
	Committer *Signature
	// SigningKey, when set, signs every commit (OpenPGP).
	SigningKey *openpgp.Entity
	// MaxAttempts bounds the push attempts of one Batch (or Apply) (default 10).
	MaxAttempts int
	// Backoff is the first retry delay; it doubles per attempt up to MaxBackoff, with
	// jitter. Defaults 100ms and 5s.
	Backoff, MaxBackoff time.Duration
	// Split, when set, publishes parts of Branch on branches of their own with every push
	// to Branch (see Split).
	Split *Split
	// PullRequests, when set, opens a pull request for every change pushed to a review
	// branch.
	PullRequests PullRequester
	// Now stamps commits; time.Now when nil.
	Now func() time.Time
	// Warn, when set, hears about problems the Repo recovered from by itself, such as a
	// corrupt CacheDir that was discarded and cloned again. The package logs nothing
	// itself. It is called with the Repo's locks held: it must not call the Repo.
	Warn func(msg string)
	// AuthRefused, when set, hears of an SSH key or known hosts file that changed into one
	// that does not load (the last good one stays in use), instead of Warn.
	AuthRefused func(err error)
}

// History is how much of Branch's history a clone holds. Its first fetch takes the newest
// Commits commits, then four times as many, up to MaxCommits, while the oldest it holds is
// younger than Since; later fetches add what is new. Walk ends at the oldest commit held.
// The zero History is the whole history.
type History struct {
	Commits    int
	Since      time.Duration
	MaxCommits int
}

// Signature is a commit author or committer.
type Signature struct {
	Name  string
	Email string
}

// Auth holds the credentials of one remote. Set at most one of Password, Token and
// SSHKeyFile (with Credential counting as a Password). An SSH key or known hosts file
// that changes is read again at the next connection; a new one that does not load keeps
// the last good one, and Options.AuthRefused (or Warn) hears of it.
type Auth struct {
	// Username for basic auth (default "git" with a Token).
	Username string
	Password string
	// Token is an access token, sent as the basic-auth password.
	Token string
	// Credential, when set, gives the password or token at each request instead of
	// Password and Token: a credential rotated where the caller reads it (a mounted Secret)
	// is used from the next fetch or push on, without reopening the Repo.
	Credential func() string
	// SSHKeyFile is a private key for ssh remotes; KnownHostsFile is required with it.
	SSHKeyFile       string
	SSHKeyPassphrase string
	KnownHostsFile   string
}

// Validate checks the options and fills in defaults. Errors name the option.
func (o *Options) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("url: required"))
	} else if _, err := transport.NewEndpoint(o.URL); err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	}
	if o.Branch == "" {
		o.Branch = "main"
	}
	if err := validBranch(o.Branch); err != nil {
		errs = append(errs, fmt.Errorf("branch: %w", err))
	}
	if o.Split != nil {
		if err := o.Split.validate(o.Branch); err != nil {
			errs = append(errs, err)
		}
	}
	if err := validPatterns(o.ProtectedBranches); err != nil {
		errs = append(errs, err)
	}
	n := 0
	for _, s := range []string{o.Auth.Password, o.Auth.Token, o.Auth.SSHKeyFile} {
		if s != "" {
			n++
		}
	}
	if o.Auth.Credential != nil {
		n++
	}
	if n > 1 {
		errs = append(errs, errors.New("auth: set one of password, token and ssh_key_file"))
	}
	if o.Auth.SSHKeyFile != "" && o.Auth.KnownHostsFile == "" {
		errs = append(errs, errors.New("auth.known_hosts_file: required with ssh_key_file (host keys are always verified)"))
	}
	if err := validSignature("author", o.Author); err != nil {
		errs = append(errs, err)
	}
	if o.Committer != nil {
		if err := validSignature("committer", *o.Committer); err != nil {
			errs = append(errs, err)
		}
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 10
	}
	if o.MaxAttempts < 1 {
		errs = append(errs, errors.New("max_attempts: must be at least 1"))
	}
	if h := o.History; h.Commits < 0 || h.Since < 0 || h.MaxCommits < 0 {
		errs = append(errs, errors.New("history: must not be negative"))
	} else if h.Commits == 0 && (h.Since > 0 || h.MaxCommits > 0) {
		errs = append(errs, errors.New("history: since and max_commits need commits"))
	}
	if o.Backoff == 0 {
		o.Backoff = 100 * time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return errors.Join(errs...)
}
