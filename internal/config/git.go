package config

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/gitrepo/forge"
)

// Git is the --config "git:" section. Credentials are read from files, so they
// never sit in the configuration or in process arguments.
type Git struct {
	URL      string  `json:"url"`
	Branch   string  `json:"branch,omitempty"`
	CacheDir string  `json:"cache_dir,omitempty"`
	Auth     GitAuth `json:"auth,omitempty"`
	Author   struct {
		Name  string `json:"name"`
		Email string `json:"email"`
	} `json:"author"`
	// SigningKeyFile is an armored OpenPGP private key (unencrypted) that signs commits.
	SigningKeyFile string    `json:"signing_key_file,omitempty"`
	MaxAttempts    int       `json:"max_attempts,omitempty"`
	Review         GitReview `json:"review,omitempty"`
	// History bounds the history the clone fetches, which is all serve reads back after a
	// start; DefaultHistory when absent.
	History *GitHistory `json:"history,omitempty"`
}

// GitHistory is the "git.history:" section (gitrepo.History): the newest commits of the
// branch, more while the oldest is younger than since, up to max_commits. commits: 0 is
// the whole history.
type GitHistory struct {
	Commits    int                `json:"commits"`
	Since      generator.Duration `json:"since,omitempty"`
	MaxCommits int                `json:"max_commits,omitempty"`
}

// DefaultHistory is what serve needs of the history after a start: the event ids a client
// may still retry (the driver shim retries an event for 25 s at most), with a wide margin,
// and the commits of the clusters' last operations, which Flux applied long before
// anything older. MaxCommits is what the reconciler's ledger reads back (its ledgerHistory,
// which a test of package reconciler holds equal).
var DefaultHistory = GitHistory{Commits: 1000, Since: generator.Duration{Duration: 10 * time.Minute}, MaxCommits: 20000}

// GitAuth is the "git.auth:" section: a user name, and files holding the password, token or
// SSH key.
type GitAuth struct {
	Username       string `json:"username,omitempty"`
	PasswordFile   string `json:"password_file,omitempty"`
	TokenFile      string `json:"token_file,omitempty"`
	SSHKeyFile     string `json:"ssh_key_file,omitempty"`
	KnownHostsFile string `json:"known_hosts_file,omitempty"`
}

// GitReview is the "git.review:" section: review branches and the forge that opens their
// pull requests.
type GitReview struct {
	// ProtectedBranches (path.Match patterns, e.g. "release/*") can never be a review
	// branch; the configured branch never is.
	ProtectedBranches []string `json:"protected_branches,omitempty"`
	// GitHub opens a pull request per review branch (REST v3; url is the API root, e.g.
	// https://api.github.com or https://HOST/api/v3 for GitHub Enterprise).
	GitHub *Forge `json:"github,omitempty"`
	// BranchTemplate turns on review mode: each event goes to its own branch, e.g.
	// "magnum/{{.StackID}}/{{.EventID}}", and main is left alone.
	BranchTemplate string `json:"branch_template,omitempty"`
	// Gitea opens a pull request per review branch (Gitea or Forgejo API v1; url is the
	// server, e.g. https://gitea.example.org).
	Gitea *Forge `json:"gitea,omitempty"`
	// PollInterval is how long serve trusts a pull request's state before asking the
	// forge again (default 30s): the fallback when a webhook is lost.
	PollInterval generator.Duration `json:"poll_interval,omitempty"`
}

// ReviewForge is review mode's forge, its files read.
type ReviewForge struct {
	// Kind is "gitea" or "github".
	Kind string
	// Client opens, reads and closes pull requests.
	Client interface {
		gitrepo.PullRequester
		gitrepo.PullRequestTracker
		// Check reads the repository with the token (forge.Gitea.Check).
		Check(ctx context.Context) error
	}
	// WebhookSecret signs the forge's webhook deliveries; nil without webhook_secret_file.
	WebhookSecret *SecretFile
}

// OpenForge reads the token and webhook secret files of the forge git.review names, and
// reads each again when it changes (refused hears of a change that does not load); nil
// when it names none.
func (r GitReview) OpenForge(refused Refused) (*ReviewForge, error) {
	var f *Forge
	out := &ReviewForge{}
	switch {
	case r.Gitea != nil && r.GitHub != nil:
		return nil, &v1alpha1.FieldError{Field: "git.review", Message: "names both gitea and github: a repository has one forge"}
	case r.Gitea != nil:
		f, out.Kind = r.Gitea, "gitea"
	case r.GitHub != nil:
		f, out.Kind = r.GitHub, "github"
	default:
		return nil, nil
	}
	field := "git.review." + out.Kind
	if f.TokenFile == "" {
		return nil, &v1alpha1.FieldError{Field: field + ".token_file", Message: "required"}
	}
	tok, err := OpenSecretFile(field+".token_file", f.TokenFile, refused.Of("forge_token"))
	if err != nil {
		return nil, err
	}
	if f.WebhookSecretFile != "" {
		if out.WebhookSecret, err = OpenSecretFile(field+".webhook_secret_file", f.WebhookSecretFile, refused.Of("webhook_secret")); err != nil {
			return nil, err
		}
	}
	if out.Kind == "gitea" {
		out.Client = &forge.Gitea{BaseURL: f.URL, Owner: f.Owner, Repo: f.Repo, TokenFunc: tok.Value}
	} else {
		out.Client = &forge.GitHub{BaseURL: f.URL, Owner: f.Owner, Repo: f.Repo, TokenFunc: tok.Value}
	}
	return out, nil
}

// checkGitURL refuses a repository URL that carries a user, password or token (see
// generator.URLCarriesCredentials): credentials come from files (git.auth), never from the
// configuration, where they would reach logs, error messages and the on-disk cache's
// config. No error quotes the URL.
func checkGitURL(raw string) error {
	if !strings.Contains(raw, "://") {
		return nil // scp-like user@host:path has no password
	}
	u, err := url.Parse(raw)
	if err != nil {
		return &v1alpha1.FieldError{Field: "git.url", Message: "not a valid URL"}
	}
	if generator.URLCarriesCredentials(u) {
		return &v1alpha1.FieldError{Field: "git.url", Message: "must not carry a user, password, token or query: use git.auth.username and git.auth.password_file or git.auth.token_file"}
	}
	return nil
}

// Options builds gitrepo.Options from the section, reading the credentials its files hold.
func (g *Git) Options(refused Refused) (gitrepo.Options, error) {
	if g.URL == "" {
		return gitrepo.Options{}, &v1alpha1.FieldError{Field: "git.url", Message: "required to commit (see docs/configuration.md)"}
	}
	if err := checkGitURL(g.URL); err != nil {
		return gitrepo.Options{}, err
	}
	for field, v := range map[string]string{"git.author.name": g.Author.Name, "git.author.email": g.Author.Email} {
		if strings.ContainsAny(v, "<>\n\r\x00") || strings.ContainsFunc(v, unicode.IsControl) {
			return gitrepo.Options{}, &v1alpha1.FieldError{Field: field, Message: "must not contain '<', '>' or control characters (they would corrupt the commit header)"}
		}
	}
	h := cmp.Or(g.History, &DefaultHistory)
	o := gitrepo.Options{URL: g.URL, Branch: g.Branch, CacheDir: g.CacheDir, MaxAttempts: g.MaxAttempts,
		Author: gitrepo.Signature{Name: g.Author.Name, Email: g.Author.Email}, MaxBackoff: 10 * time.Second,
		History: gitrepo.History{Commits: h.Commits, Since: h.Since.Duration, MaxCommits: h.MaxCommits}}
	if o.Author.Name == "" {
		o.Author = gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@localhost"}
	}
	o.Auth.Username, o.Auth.SSHKeyFile, o.Auth.KnownHostsFile = g.Auth.Username, g.Auth.SSHKeyFile, g.Auth.KnownHostsFile
	// The password or token is read again when its file changes: the credential rotated
	// in its Secret is used from the next fetch or push on.
	for _, c := range []struct{ field, path string }{{"git.auth.password_file", g.Auth.PasswordFile}, {"git.auth.token_file", g.Auth.TokenFile}} {
		if c.path == "" {
			continue
		}
		if o.Auth.Credential != nil {
			return o, &v1alpha1.FieldError{Field: "git.auth", Message: "set one of password_file, token_file and ssh_key_file"}
		}
		f, err := OpenSecretFile(c.field, c.path, refused.Of("git_auth"))
		if err != nil {
			return o, err
		}
		o.Auth.Credential = f.Value
	}
	if g.SigningKeyFile != "" {
		b, err := os.ReadFile(g.SigningKeyFile)
		if err != nil {
			return o, Invalid(fmt.Errorf("git.signing_key_file: %w", err))
		}
		keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(b))
		if err != nil || len(keys) == 0 || keys[0].PrivateKey == nil {
			return o, Invalid(errors.New("git.signing_key_file: not an armored OpenPGP private key"))
		}
		o.SigningKey = keys[0]
	}
	o.ProtectedBranches = g.Review.ProtectedBranches
	if f, err := g.Review.OpenForge(refused); err != nil {
		return o, err
	} else if f != nil {
		o.PullRequests = f.Client
	}
	// Validate fills in defaults: it must run before o is copied into the return values.
	if err := o.Validate(); err != nil {
		// gitrepo names its options as this section does ("history: …"): say which section.
		var named []error
		for line := range strings.SplitSeq(err.Error(), "\n") {
			named = append(named, errors.New("git."+line))
		}
		return o, Invalid(errors.Join(named...))
	}
	return o, nil
}

// Forge names a repository on a forge and the file holding its API token.
type Forge struct {
	URL       string `json:"url,omitempty"`
	Owner     string `json:"owner"`
	Repo      string `json:"repo"`
	TokenFile string `json:"token_file"`
	// WebhookSecretFile holds the secret the forge signs its webhook deliveries with
	// (POST /hooks/pull-requests); without it serve only polls.
	WebhookSecretFile string `json:"webhook_secret_file,omitempty"`
}
