package gitrepo

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// validSignature checks a name and email that go into a commit's author or committer
// header: '<' or '>' would end the email early and a newline would start a header of our
// choosing, both of which git fsck --strict refuses (badName, badEmail, badDate). field
// names the option, e.g. "author".
func validSignature(field string, s Signature) error {
	var errs []error
	for _, f := range []struct{ name, v string }{{field + ".name", s.Name}, {field + ".email", s.Email}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			errs = append(errs, fmt.Errorf("%s: required", f.name))
		case strings.ContainsAny(f.v, "<>\n\r\x00"):
			errs = append(errs, fmt.Errorf("%s: may not contain '<', '>', a newline or NUL", f.name))
		}
	}
	return errors.Join(errs...)
}

// validBranch checks a branch name with Git's ref-format rules.
func validBranch(b string) error {
	if b == "" {
		return errors.New("empty branch name")
	}
	if err := checkRefName(b); err != nil {
		return fmt.Errorf("%q is not a valid branch name: %s", b, err)
	}
	if err := plumbing.NewBranchReferenceName(b).Validate(); err != nil {
		return fmt.Errorf("%q is not a valid branch name", b)
	}
	return nil
}

// checkRefName applies git check-ref-format's rules to a branch name (the part after
// refs/heads/), plus a leading '-' which the git CLI would read as an option.
func checkRefName(b string) error {
	switch {
	case strings.HasPrefix(b, "-"):
		return errors.New("starts with '-'")
	case b == "@":
		return errors.New("is \"@\"")
	case strings.Contains(b, "@{"):
		return errors.New("contains \"@{\"")
	case strings.Contains(b, ".."):
		return errors.New("contains \"..\"")
	case strings.HasSuffix(b, "."):
		return errors.New("ends with '.'")
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return fmt.Errorf("contains %q", c)
		}
	}
	for _, seg := range strings.Split(b, "/") {
		switch {
		case seg == "":
			return errors.New("has an empty component")
		case strings.HasPrefix(seg, "."):
			return errors.New("has a component starting with '.'")
		case strings.HasSuffix(seg, ".lock"):
			return errors.New("has a component ending in \".lock\"")
		}
	}
	return nil
}

// validPatterns checks Options.ProtectedBranches.
func validPatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return errors.New("protected_branches: empty pattern")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("protected_branches: %q: %w", p, err)
		}
	}
	return nil
}

// protected reports whether branch is Options.Branch or matches a protected pattern.
func (o *Options) protected(branch string) bool {
	if branch == o.Branch {
		return true
	}
	for _, p := range o.ProtectedBranches {
		if ok, _ := path.Match(p, branch); ok {
			return true
		}
	}
	return false
}

// validText refuses NUL, which Git's C string handling would cut a message at.
func validText(field, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s may not contain NUL", field)
	}
	return nil
}
