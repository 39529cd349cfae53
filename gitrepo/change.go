package gitrepo

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Change is desired content for a set of paths, with the commit message that explains it.
// Applying it again on another head is correct: it says what the paths must hold, not how
// to edit them.
type Change struct {
	// Files maps a slash-separated path (see ValidPath) to its content; nil content
	// deletes the file. Deleting a directory's last file removes the directory. Paths
	// name files: a path that is a directory in the tree, or that goes through a file, is
	// refused (ErrInvalidChange) rather than replaced, and no path of a change may be a
	// directory of another.
	Files map[string][]byte
	// Subject is the commit's one-line summary; Body explains it.
	Subject string
	Body    string
	// Trailers end the message ("Key: value" lines), e.g. Magnum-Event-ID.
	Trailers []Trailer
	// Review sends the change to the review branch Branch instead of Options.Branch: the
	// branch is created from Options.Branch, and a pull request is opened when
	// Options.PullRequests is set. Branch may then never be Options.Branch, empty, or a
	// protected branch. A non-empty Branch implies Review, so a branch name computed from
	// a template can never silently mean the configured branch.
	Review bool
	// Branch is the review branch.
	Branch string
}

// Trailer is one "Key: value" line at the end of a commit message.
type Trailer struct{ Key, Value string }

var trailerKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// review reports whether the change goes to a review branch.
func (c *Change) review() bool { return c.Review || c.Branch != "" }

// validate checks paths, message and branch. Errors wrap ErrInvalidChange and name the
// part of the change at fault, never its content.
func (c *Change) validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidChange, fmt.Sprintf(f, a...))
	}
	if len(c.Files) == 0 {
		return bad("no files")
	}
	paths := make([]string, 0, len(c.Files))
	for p := range c.Files {
		if err := ValidPath(p); err != nil {
			return bad("files: %v", err)
		}
		paths = append(paths, p)
	}
	// A path that is also a directory of another path of the same change would be both a
	// file and a tree: sorted, such a pair is adjacent or separated only by paths
	// sharing the same directory prefix.
	sort.Strings(paths)
	for i, p := range paths {
		for _, q := range paths[i+1:] {
			if !strings.HasPrefix(q, p) {
				break
			}
			if q[len(p)] == '/' {
				return bad("files: %q is both a file and a directory of %q", p, q)
			}
		}
	}
	if c.Subject == "" || strings.ContainsAny(c.Subject, "\r\n") {
		return bad("subject must be one non-empty line")
	}
	if err := validText("subject", c.Subject); err != nil {
		return bad("%v", err)
	}
	if err := validText("body", c.Body); err != nil {
		return bad("%v", err)
	}
	for i, t := range c.Trailers {
		if !trailerKeyRE.MatchString(t.Key) || strings.ContainsAny(t.Value, "\r\n\x00") {
			return bad("trailers[%d] (%q) must be a token key and a one-line value without NUL", i, t.Key)
		}
	}
	if c.Branch != "" {
		if err := validBranch(c.Branch); err != nil {
			return bad("branch: %v", err)
		}
	}
	return nil
}

// message formats subject, body and trailers as Git expects them.
func (c *Change) message() string {
	var b strings.Builder
	b.WriteString(c.Subject)
	b.WriteString("\n")
	if body := strings.TrimSpace(c.Body); body != "" {
		b.WriteString("\n" + body + "\n")
	}
	if len(c.Trailers) > 0 {
		b.WriteString("\n")
		for _, t := range c.Trailers {
			b.WriteString(t.Key + ": " + t.Value + "\n")
		}
	}
	return b.String()
}

// combine merges a batch of changes into one, later changes winning on a shared path.
func combine(changes []Change) (Change, error) {
	if len(changes) == 1 {
		return changes[0], nil
	}
	out := Change{Files: map[string][]byte{}, Branch: changes[0].Branch, Review: changes[0].review()}
	var body strings.Builder
	for i, c := range changes {
		if c.Branch != out.Branch || c.review() != out.Review {
			return Change{}, fmt.Errorf("%w: a batch must target one branch (%q and %q)", ErrInvalidChange, out.Branch, c.Branch)
		}
		for p, b := range c.Files {
			out.Files[p] = b
		}
		if i > 0 {
			body.WriteString("\n")
		}
		body.WriteString("* " + c.Subject + "\n")
		for _, l := range strings.Split(strings.TrimSpace(c.Body), "\n") {
			if l != "" {
				body.WriteString("  " + l + "\n")
			}
		}
		out.Trailers = append(out.Trailers, c.Trailers...)
	}
	out.Subject = fmt.Sprintf("%s (and %d more)", changes[0].Subject, len(changes)-1)
	out.Body = body.String()
	sort.SliceStable(out.Trailers, func(i, j int) bool { return out.Trailers[i].Key < out.Trailers[j].Key })
	return out, nil
}
