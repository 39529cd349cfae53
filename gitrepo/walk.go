package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitInfo is one commit of the branch's history.
type CommitInfo struct {
	Hash plumbing.Hash
	// Subject is the message's first line; Body the rest without the trailers.
	Subject, Body string
	// Trailers are the "Key: value" lines that end the message, in order.
	Trailers []Trailer
	// Author and Committer, with the commit's dates.
	Author, Committer Signature
	AuthorTime        time.Time
	CommitTime        time.Time
	// Parents are the commit's parents; Walk follows the first.
	Parents []plumbing.Hash
}

// Trailer returns the value of the first trailer with the key (case-insensitive).
func (c *CommitInfo) Trailer(key string) (string, bool) {
	for _, t := range c.Trailers {
		if strings.EqualFold(t.Key, key) {
			return t.Value, true
		}
	}
	return "", false
}

// Walk calls fn for each commit of Options.Branch's first-parent history, newest first,
// as last fetched or pushed, down to the oldest commit the clone holds (Options.Depth). fn returning ErrStopWalk ends the walk early with no error;
// any other error ends it with that error. Walk holds no lock while fn runs, so fn may
// use the Repo; the walk goes on through the history it started from.
func (r *Repo) Walk(ctx context.Context, fn func(c CommitInfo) error) error {
	s, err := r.Snapshot()
	if err != nil {
		return err
	}
	return s.Walk(ctx, fn)
}

// Walk is Repo.Walk from the snapshot's commit: a reader that also reads the snapshot's
// files sees the history of exactly the tree it reads, however the branch moved since.
func (s *Snapshot) Walk(ctx context.Context, fn func(c CommitInfo) error) error {
	r, h := s.r, s.commit
	var shallow []plumbing.Hash // a shallow clone's oldest commits, or were before it deepened
	if err := r.locked(func() (err error) { shallow, err = r.store.Shallow(); return err }); err != nil {
		return fmt.Errorf("gitrepo: reading the shallow boundary: %w", err)
	}
	var child plumbing.Hash
	for !h.IsZero() {
		if err := ctx.Err(); err != nil {
			return err
		}
		var c *object.Commit
		var beyond bool
		err := r.locked(func() (err error) {
			c, err = object.GetCommit(r.store, h)
			if beyond = errors.Is(err, plumbing.ErrObjectNotFound) && slices.Contains(shallow, child); beyond {
				return nil // not damage: a shallow clone does not hold it
			}
			return r.noteDamage(err)
		})
		if beyond {
			return nil // the history goes on beyond what the clone holds
		}
		if err != nil {
			return fmt.Errorf("gitrepo: reading commit %s: %w", h, err)
		}
		info := commitInfo(c)
		if err := fn(info); errors.Is(err, ErrStopWalk) {
			return nil
		} else if err != nil {
			return err
		}
		h, child = plumbing.ZeroHash, c.Hash
		if len(c.ParentHashes) > 0 {
			h = c.ParentHashes[0]
		}
	}
	return nil
}

func commitInfo(c *object.Commit) CommitInfo {
	info := CommitInfo{
		Hash:       c.Hash,
		Author:     Signature{Name: c.Author.Name, Email: c.Author.Email},
		Committer:  Signature{Name: c.Committer.Name, Email: c.Committer.Email},
		AuthorTime: c.Author.When, CommitTime: c.Committer.When,
		Parents: append([]plumbing.Hash(nil), c.ParentHashes...),
	}
	info.Subject, info.Body, info.Trailers = parseMessage(c.Message)
	return info
}

var trailerLineRE = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]*):[ \t]*(.*)$`)

// parseMessage splits a commit message into subject, body and trailers. The trailers are
// the last paragraph when it follows the subject and all its lines are "Key: value" (a
// line starting with whitespace continues the value before it), as Change.message writes
// them and git interpret-trailers reads them.
func parseMessage(msg string) (subject, body string, trailers []Trailer) {
	msg = strings.TrimRight(strings.ReplaceAll(msg, "\r\n", "\n"), "\n")
	subject, rest, _ := strings.Cut(msg, "\n")
	rest = strings.Trim(rest, "\n")
	paras := strings.Split(rest, "\n\n")
	last := paras[len(paras)-1]
	if last == "" {
		return subject, "", nil
	}
	for _, line := range strings.Split(last, "\n") {
		if m := trailerLineRE.FindStringSubmatch(line); m != nil {
			trailers = append(trailers, Trailer{Key: m[1], Value: strings.TrimSpace(m[2])})
			continue
		}
		if (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && len(trailers) > 0 {
			t := &trailers[len(trailers)-1]
			t.Value = strings.TrimSpace(t.Value + " " + strings.TrimSpace(line))
			continue
		}
		return subject, rest, nil // not a trailer block: it is all body
	}
	return subject, strings.TrimRight(strings.Join(paras[:len(paras)-1], "\n\n"), "\n"), trailers
}
