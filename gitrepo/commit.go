package gitrepo

import (
	"bytes"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// commit writes a commit object (signed when a key is configured) and records it.
func (r *Repo) commit(b *treeBuilder, tree, parent plumbing.Hash, message string) (plumbing.Hash, error) {
	now := r.opts.Now()
	author := object.Signature{Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: now}
	committer := author
	if c := r.opts.Committer; c != nil {
		committer = object.Signature{Name: c.Name, Email: c.Email, When: now}
	}
	c := &object.Commit{Author: author, Committer: committer, Message: message, TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if key := r.opts.SigningKey; key != nil {
		unsigned := r.store.NewEncodedObject()
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return plumbing.ZeroHash, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		var sig bytes.Buffer
		if err := openpgp.ArmoredDetachSign(&sig, key, rd, nil); err != nil {
			return plumbing.ZeroHash, err
		}
		rd.Close()
		c.PGPSignature = strings.TrimSpace(sig.String()) + "\n"
	}
	obj := r.store.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.store(obj, data, plumbing.ZeroHash) // commits are small: no delta
}
