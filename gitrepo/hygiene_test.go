package gitrepo_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// TestOptionsRefuseHeaderInjection: a name or email that would end the email early or
// start a new header of the commit (what git fsck --strict calls badName, badEmail,
// badDate) is refused by Validate, naming the option.
func TestOptionsRefuseHeaderInjection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		author    gitrepo.Signature
		committer *gitrepo.Signature
		field     string
	}{
		{"email closes early", gitrepo.Signature{Name: "m", Email: "m@example.org> 0 +0000"}, nil, "author.email"},
		{"email opens", gitrepo.Signature{Name: "m", Email: "<m@example.org"}, nil, "author.email"},
		{"newline in email", gitrepo.Signature{Name: "m", Email: "m@example.org\ncommitter evil <e> 0 +0000"}, nil, "author.email"},
		{"newline in name", gitrepo.Signature{Name: "m\nx", Email: "m@example.org"}, nil, "author.name"},
		{"CR in name", gitrepo.Signature{Name: "m\rx", Email: "m@example.org"}, nil, "author.name"},
		{"NUL in name", gitrepo.Signature{Name: "m\x00", Email: "m@example.org"}, nil, "author.name"},
		{"angle in name", gitrepo.Signature{Name: "m <x@y>", Email: "m@example.org"}, nil, "author.name"},
		{"blank name", gitrepo.Signature{Name: "  ", Email: "m@example.org"}, nil, "author.name"},
		{"missing email", gitrepo.Signature{Name: "m"}, nil, "author.email"},
		{"committer email", gitrepo.Signature{Name: "m", Email: "m@example.org"}, &gitrepo.Signature{Name: "c", Email: "c>"}, "committer.email"},
		{"committer name", gitrepo.Signature{Name: "m", Email: "m@example.org"}, &gitrepo.Signature{Name: "c\n", Email: "c@example.org"}, "committer.name"},
		{"empty committer", gitrepo.Signature{Name: "m", Email: "m@example.org"}, &gitrepo.Signature{}, "committer.name"},
	} {
		o := testOptions("https://git.example.org/r.git")
		o.Author, o.Committer = tc.author, tc.committer
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("%s: Validate() = %v, want an error naming %s", tc.name, err, tc.field)
		}
	}
	o := testOptions("https://git.example.org/r.git")
	o.ProtectedBranches = []string{"release/["}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "protected_branches") {
		t.Errorf("bad pattern: %v", err)
	}
}

// TestChangeRefusesWhatFsckWould: NUL in a message part, a trailer breaking its line, and
// tree entry names git fsck --strict rejects are refused with ErrInvalidChange naming the
// part (never quoting the content), and nothing reaches the remote.
func TestChangeRefusesWhatFsckWould(t *testing.T) {
	t.Parallel()
	s := newGitServer(t)
	r := open(t, testOptions(s.newRepo("hygiene", true)))
	before := strings.TrimSpace(git(t, s.dir("hygiene"), "rev-parse", "main"))
	const secret = "s3cr3t-value"
	ok := map[string][]byte{"a": []byte(secret)}
	for _, tc := range []struct {
		name string
		c    gitrepo.Change
		part string
	}{
		{"NUL in subject", gitrepo.Change{Subject: "x\x00y", Files: ok}, "subject"},
		{"newline in subject", gitrepo.Change{Subject: "x\ny", Files: ok}, "subject"},
		{"NUL in body", gitrepo.Change{Subject: "x", Body: "a\x00b", Files: ok}, "body"},
		{"NUL in trailer value", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K", Value: "v\x00"}}}, "trailers[0]"},
		{"newline in trailer value", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K", Value: "v\nEvil: 1"}}}, "trailers[0]"},
		{"bad trailer key", gitrepo.Change{Subject: "x", Files: ok, Trailers: []gitrepo.Trailer{{Key: "K:", Value: "v"}}}, "trailers[0]"},
		{"empty segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a//b": []byte(secret)}}, "files"},
		{"dot segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/./b": []byte(secret)}}, "files"},
		{"dotdot segment", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/../b": []byte(secret)}}, "files"},
		{"NUL in name", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a\x00b": []byte(secret)}}, "files"},
		{"trailing slash", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a/": []byte(secret)}}, "files"},
		{"hidden .git", gitrepo.Change{Subject: "x", Files: map[string][]byte{"c/.g\u200cit/hooks/post-checkout": []byte(secret)}}, "files"},
		{"file and directory", gitrepo.Change{Subject: "x", Files: map[string][]byte{"a": []byte(secret), "a/b": nil}}, "files"},
	} {
		_, err := r.Apply(context.Background(), tc.c)
		if !errors.Is(err, gitrepo.ErrInvalidChange) || !strings.Contains(err.Error(), tc.part) {
			t.Errorf("%s: err = %v, want ErrInvalidChange naming %s", tc.name, err, tc.part)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error quotes the content: %v", tc.name, err)
		}
	}
	if after := strings.TrimSpace(git(t, s.dir("hygiene"), "rev-parse", "main")); after != before {
		t.Error("an invalid change reached the remote")
	}
}
