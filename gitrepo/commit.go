package gitrepo

import (
	"bytes"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
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
	data, err := r.encodeCommit(c, nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	obj, err := b.object(plumbing.CommitObject, data)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.store(obj, data, plumbing.ZeroHash) // commits are small: no delta
}

// encodeCommit encodes c, signed when a key is configured; signedAt, when set, dates the
// signature and makes it reproducible (nil: now, salted as go-crypto salts by default).
func (r *Repo) encodeCommit(c *object.Commit, signedAt func() time.Time) ([]byte, error) {
	if key := r.opts.SigningKey; key != nil {
		unsigned := r.store.NewEncodedObject()
		if err := c.EncodeWithoutSignature(unsigned); err != nil {
			return nil, err
		}
		rd, err := unsigned.Reader()
		if err != nil {
			return nil, err
		}
		defer rd.Close()
		var sig bytes.Buffer
		cfg := &packet.Config{Time: signedAt}
		if signedAt != nil {
			// A signature dated by the caller is meant to be reproducible: no random salt.
			deterministic := false
			cfg.NonDeterministicSignaturesViaNotation = &deterministic
		}
		if err := openpgp.ArmoredDetachSign(&sig, key, rd, cfg); err != nil {
			return nil, err
		}
		c.PGPSignature = strings.TrimSpace(sig.String()) + "\n"
	}
	obj := r.store.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}
