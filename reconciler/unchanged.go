package reconciler

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"path"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// A plan changes a path when the bytes it would write differ from the tree's (Plan). This
// file is the one rule for which bytes those are when the tree holds the same thing
// already: a file whose input (the object, or the Secret under the same encoding) the tree
// holds keeps the tree's bytes, so that an unchanged cluster is a plan of no change. It
// matters beyond speed for what cannot be written twice the same way: a Secret encrypted
// again has a new data key and nonce, and a record in an older encoding (YAML) would be
// rewritten for its encoding alone. The evidence comes from the tree: the gate (a cache)
// names the file an input became, and is checked against the tree's bytes; a SOPS file
// carries a keyed digest of its plaintext (sopsenc.Encrypter.Unchanged); a record holds its
// event (sameRecord). Everything else is serialised and compared.

// encode serialises a layout into the files of a change, writing anew only what tree
// does not hold already (file).
func (p *Pipeline) encode(l *generator.Layout, tree gitrepo.Tree) (*generator.FileSet, error) {
	fs := &generator.FileSet{Files: make(map[string][]byte, len(l.Files)), Deletes: l.Deletes}
	encoding := p.Secrets.encoding()
	for _, f := range l.Files {
		b, err := p.file(f, tree, encoding)
		if err != nil {
			return nil, f.Wrap(err)
		}
		fs.Files[f.Path] = b
	}
	return fs, nil
}

// file is the content of f: the tree's file at f.Path when that holds f's input, else f
// serialised (a manifest) or encoded as the Secret policy says (a Secret; encoding names
// the policy's way, SecretPolicy.encoding).
func (p *Pipeline) file(f generator.File, tree gitrepo.Tree, encoding string) ([]byte, error) {
	if f.Secret != nil {
		return p.secretFile(f, tree, encoding)
	}
	j, err := json.Marshal(f.Object)
	if err != nil {
		return nil, err
	}
	in := sha256.Sum256(j)
	b, ok := p.Gate.Held(tree, f.Path, in)
	if !ok {
		if b, err = generator.MarshalObjectJSON(j); err != nil {
			return nil, err
		}
		p.Gate.Remember(in, b)
	}
	if base := path.Base(f.Path); base == generator.HelmReleaseFile || base == generator.ApplicationFile {
		p.Gate.RememberJSON(b, j)
	}
	return b, nil
}

// secretFile is the content of a Secret's file: the tree's when the gate knows it holds
// this Secret under the policy's encoding, or when the SOPS file there says it holds the
// same plaintext for the same recipients; else the Secret encoded anew.
func (p *Pipeline) secretFile(f generator.File, tree gitrepo.Tree, encoding string) ([]byte, error) {
	j, err := json.Marshal(f.Secret)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(j)
	h.Write([]byte("\x00" + encoding))
	var in [sha256.Size]byte
	h.Sum(in[:0])
	if b, ok := p.Gate.Held(tree, f.Path, in); ok {
		return b, nil
	}
	b, err := p.Secrets.encodeOver(f.Secret, tree, f.Path)
	if err == nil {
		p.Gate.Remember(in, b)
	}
	return b, err
}

// recordFile is the record file to write at f: the tree's bytes when they hold the same
// event (sameRecord), so that a record written in an older encoding (YAML) is not
// rewritten for its encoding alone, else want.
func (p *Pipeline) recordFile(tree gitrepo.Tree, f string, want []byte) ([]byte, error) {
	in := sha256.Sum256(want)
	if have, ok := p.Gate.Held(tree, f, in); ok {
		return have, nil
	}
	have, ok, err := tree.ReadFile(f)
	if err != nil {
		return nil, err
	}
	// A record the gate wrote (in the current encoding) whose bytes differ holds another
	// event: each event of a cluster finds the record of the one before it, and deciding
	// that by decoding it costs a tenth of a plan.
	if ok && !bytes.Equal(have, want) && !p.Gate.Wrote(have) && sameRecord(have, want) {
		want = have
	}
	p.Gate.Remember(in, want)
	return want, nil
}
