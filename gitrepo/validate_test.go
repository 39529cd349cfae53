package gitrepo_test

import (
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
