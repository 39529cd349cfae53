package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
)

// Split publishes parts of Options.Branch on branches of their own, each holding only its
// part's directories, at the same paths. A reader that follows a published branch fetches
// one part, and only when that part changed: a Flux GitRepository that follows
// Options.Branch fetches the whole tree whenever the branch moves (go-git, which
// source-controller uses, has no partial clone), so a thousand of them, one per part, fetch
// a thousand whole trees for one commit.
//
// A published branch's head is one commit without a parent whose dates are fixed: its id
// is a pure function of what the part holds. So the remote's list of refs alone says
// whether a published branch is current, publishing the same content again is a no-op,
// and the history stays on Options.Branch, where changes are reviewed and reverted.
type Split struct {
	// Prefix starts every published branch's name: part p is published on Prefix+p.
	// Options.Branch must not start with it.
	Prefix string
	// Part names the part that holds a path of Options.Branch; "" when none does.
	Part func(path string) string
	// Dirs are the directories a part holds.
	Dirs func(part string) []string
}

// publishedAt dates every published commit: any fixed date keeps the ids a function of the
// content; this one says plainly that the date means nothing.
var publishedAt = time.Unix(0, 0).UTC()

// validate checks the split against the branch it publishes.
func (s *Split) validate(branch string) error {
	if s.Part == nil || s.Dirs == nil {
		return errors.New("split: part and dirs are required")
	}
	if err := validBranch(s.Prefix + "part"); err != nil || s.Prefix == "" {
		return fmt.Errorf("split.prefix: %q does not start branch names", s.Prefix)
	}
	if strings.HasPrefix(branch, s.Prefix) {
		return fmt.Errorf("split.prefix: %q would publish on branch %q itself", s.Prefix, branch)
	}
	return nil
}

// publication is the head a published branch must have: zero when its part holds nothing,
// and the branch goes.
type publication struct {
	ref    plumbing.ReferenceName
	commit plumbing.Hash
}

// parts are the parts that hold paths, each once, sorted.
func (s *Split) parts(paths []string) []string {
	var out []string
	for _, p := range paths {
		if part := s.Part(p); part != "" {
			out = append(out, part)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// publish returns the heads of the branches that publish parts as commit holds them. With
// tb set, the objects they need are stored and recorded there for the push; without, their
// ids are only computed. Callers hold st.
func (r *Repo) publish(tb *treeBuilder, commit plumbing.Hash, parts []string) ([]publication, error) {
	s := r.opts.Split
	tree, err := r.treeOf(commit)
	if err != nil {
		return nil, err
	}
	out := make([]publication, 0, len(parts))
	for _, part := range parts {
		held := map[string]plumbing.Hash{}
		for _, dir := range s.Dirs(part) {
			e, found, err := lookup(r.store, tree, dir)
			if err != nil {
				return nil, err
			}
			if found && e.Mode == filemode.Dir {
				held[dir] = e.Hash
			}
		}
		p := publication{ref: plumbing.NewBranchReferenceName(s.Prefix + part)}
		if len(held) > 0 {
			w := &publisher{r: r, tb: tb}
			root, err := w.tree(held)
			if err != nil {
				return nil, err
			}
			if p.commit, err = w.commit(root, part); err != nil {
				return nil, err
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// publisher writes (with tb) or hashes (without) the objects of a published commit.
type publisher struct {
	r  *Repo
	tb *treeBuilder
}

// tree is the tree holding each directory of held (path → tree id) at its path, and
// nothing else.
func (w *publisher) tree(held map[string]plumbing.Hash) (plumbing.Hash, error) {
	sub := map[string]map[string]plumbing.Hash{}
	var entries []object.TreeEntry
	for p, h := range held {
		name, rest, nested := strings.Cut(p, "/")
		if !nested {
			entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
			continue
		}
		if sub[name] == nil {
			sub[name] = map[string]plumbing.Hash{}
		}
		sub[name][rest] = h
	}
	for name, inner := range sub {
		h, err := w.tree(inner)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	slices.SortFunc(entries, compareEntries)
	return w.put(plumbing.TreeObject, encodeTree(entries))
}

// commit is the published commit of tree: no parent, fixed dates, the author's name, and
// signed when commits are. The signature is dated when the key and its subkeys were made
// (the earliest date they are all valid at), so it is as stable as the key's algorithm
// (Ed25519 and RSA sign the same content the same way). Its id is remembered by tree and
// part: ContainsIn hashes the part at each commit it walks, and a signature costs
// milliseconds.
func (w *publisher) commit(tree plumbing.Hash, part string) (plumbing.Hash, error) {
	r := w.r
	key := publishedKey{tree, part}
	if id, ok := r.publishedIDs[key]; ok && w.tb == nil {
		return id, nil
	}
	sig := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: publishedAt}
	c := &object.Commit{Author: sig, Committer: sig, TreeHash: tree,
		Message: fmt.Sprintf("Publish %s of %s\n", part, r.opts.Branch)}
	var signedAt func() time.Time
	if k := r.opts.SigningKey; k != nil {
		made := k.PrimaryKey.CreationTime
		for _, sub := range k.Subkeys {
			if sub.PublicKey.CreationTime.After(made) {
				made = sub.PublicKey.CreationTime
			}
		}
		signedAt = func() time.Time { return made }
	}
	data, err := r.encodeCommit(c, signedAt)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	id, err := w.put(plumbing.CommitObject, data)
	if err == nil {
		if len(r.publishedIDs) >= maxPublishedIDs || r.publishedIDs == nil {
			r.publishedIDs = map[publishedKey]plumbing.Hash{}
		}
		r.publishedIDs[key] = id
	}
	return id, err
}

// publishedKey is what a published commit's id depends on, besides the Repo's options.
type publishedKey struct {
	tree plumbing.Hash
	part string
}

// maxPublishedIDs bounds Repo.publishedIDs: one entry per part and content seen lately.
const maxPublishedIDs = 4096

// put stores an object for the push, or only hashes it.
func (w *publisher) put(typ plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	if w.tb == nil {
		return plumbing.ComputeHash(typ, data), nil
	}
	// Always in the pack, even when the store holds it: an earlier push of it may have failed.
	obj, err := w.tb.object(typ, data)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return w.tb.store(obj, data, plumbing.ZeroHash)
}

// publications are the heads of the branches that publish what the batch changed (and
// its republish paths) as its tip holds them; their objects join the batch's pack.
func (b *Batch) publications() ([]publication, error) {
	s := b.r.opts.Split
	if s == nil || b.tg.review {
		return nil, nil
	}
	paths := slices.Clone(b.republish)
	for _, j := range b.jobs {
		if j.err == nil && !j.commit.IsZero() {
			for p := range j.planned.Change.Files {
				paths = append(paths, p)
			}
		}
	}
	parts := s.parts(paths)
	if len(parts) == 0 {
		return nil, nil
	}
	tb := &treeBuilder{s: b.r.store}
	var pubs []publication
	err := b.r.locked(func() error {
		// Hashes first: a part the remote holds already costs no object and no command.
		heads, err := b.r.publish(nil, b.tip, parts)
		if err != nil {
			return err
		}
		var behind []string
		for i, p := range heads {
			if at, ok := b.r.published[p.ref]; !ok || at != p.commit {
				behind = append(behind, parts[i])
			}
		}
		pubs, err = b.r.publish(tb, b.tip, behind)
		return err
	})
	if err != nil {
		return nil, &localError{err}
	}
	b.pk.add(tb.created)
	return pubs, nil
}

// notePublished records the published branches' heads the remote advertised (refs), or
// those a push just set (cmds). Callers hold mu.
func (r *Repo) notePublished(refs map[plumbing.ReferenceName]plumbing.Hash, cmds []*packp.Command) {
	s := r.opts.Split
	if s == nil {
		return
	}
	if r.published == nil {
		r.published = map[plumbing.ReferenceName]plumbing.Hash{}
	}
	prefix := plumbing.NewBranchReferenceName(s.Prefix).String()
	if refs != nil {
		clear(r.published)
		for name, h := range refs {
			if strings.HasPrefix(name.String(), prefix) {
				r.published[name] = h
			}
		}
	}
	for _, c := range cmds {
		if strings.HasPrefix(c.Name.String(), prefix) {
			r.published[c.Name] = c.New
		}
	}
}

// Publish brings the branches that publish the parts holding paths (Options.Split) to
// what Options.Branch holds, as far as this clone knows it (Fetch first): for what no push
// of this Repo published, such as a merged review, or a part whose branch was deleted.
// A part already current costs nothing but the remote's list of refs.
func (r *Repo) Publish(ctx context.Context, paths ...string) error {
	if r.opts.Split == nil || len(paths) == 0 {
		return nil
	}
	b, err := r.Begin(ctx, "")
	if err != nil {
		return err
	}
	defer b.Close()
	// What the remote holds now, not at the last push: someone may have moved a branch.
	sess, _, _, err := r.receivePack(ctx)
	if err != nil {
		return err
	}
	sess.Close()
	b.republish = paths
	_, err = b.Push(ctx)
	return err
}
