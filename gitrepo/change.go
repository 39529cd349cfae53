package gitrepo

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Change is desired content for a set of paths, with the commit message that explains it.
// Applying it again on another head is correct: it says what the paths must hold, not how
// to edit them.
type Change struct {
	// Files maps a slash-separated path to its content; nil content deletes the path.
	// Deleting a directory's last file removes the directory.
	Files map[string][]byte
	// Subject is the commit's one-line summary; Body explains it.
	Subject string
	Body    string
	// Trailers end the message ("Key: value" lines), e.g. Magnum-Event-ID.
	Trailers []Trailer
	// Branch, when set and different from Options.Branch, is a review branch: the change
	// is pushed there (created from Options.Branch) and the main branch is left alone.
	Branch string
}

// Trailer is one "Key: value" line at the end of a commit message.
type Trailer struct{ Key, Value string }

var trailerKeyRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// validate checks paths, message and branch.
func (c *Change) validate() error {
	bad := func(f string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidChange, fmt.Sprintf(f, a...))
	}
	if len(c.Files) == 0 {
		return bad("no files")
	}
	for p := range c.Files {
		if p == "" || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." {
			return bad("path %q must be relative and clean", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || strings.EqualFold(seg, ".git") {
				return bad("path %q may not contain %q", p, seg)
			}
		}
	}
	if c.Subject == "" || strings.ContainsAny(c.Subject, "\r\n") {
		return bad("subject must be one non-empty line")
	}
	for _, t := range c.Trailers {
		if !trailerKeyRE.MatchString(t.Key) || strings.ContainsAny(t.Value, "\r\n") {
			return bad("trailer %q must be a token key and a one-line value", t.Key)
		}
	}
	if c.Branch != "" {
		if err := validBranch(c.Branch); err != nil {
			return bad("%v", err)
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
	out := Change{Files: map[string][]byte{}, Branch: changes[0].Branch}
	var body strings.Builder
	for i, c := range changes {
		if c.Branch != out.Branch {
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
