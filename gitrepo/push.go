package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// push sends exactly the objects a change created and moves one ref from old to new over
// a receive-pack session. go-git's Repository.Push would first walk the whole tree to find
// what the remote lacks; here the cost is O(changed objects). The ref only moves if the
// remote still has old, so a concurrent writer can never be overwritten.
func (r *Repo) push(ctx context.Context, ref plumbing.ReferenceName, old, new plumbing.Hash, objects []plumbing.Hash) error {
	cl, err := client.NewClient(r.ep)
	if err != nil {
		return classify(err)
	}
	sess, err := cl.NewReceivePackSession(r.ep, r.auth)
	if err != nil {
		return classify(err)
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return classify(err)
	}
	if adv != nil {
		refs, err := adv.AllReferences()
		if err != nil {
			return classify(err)
		}
		current := plumbing.ZeroHash
		if cur, ok := refs[ref]; ok {
			current = cur.Hash()
		}
		if current != old {
			return errStale
		}
	}
	var pack bytes.Buffer
	if _, err := packfile.NewEncoder(&pack, r.store, false).Encode(objects, 0); err != nil {
		return fmt.Errorf("gitrepo: packing %d objects: %w", len(objects), err)
	}
	req := packp.NewReferenceUpdateRequest()
	if adv != nil {
		req = packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
	}
	req.Commands = []*packp.Command{{Name: ref, Old: old, New: new}}
	req.Packfile = io.NopCloser(&pack)
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return classify(err)
	}
	if report != nil {
		if err := report.Error(); err != nil {
			// The ref moved between the advertisement and the update.
			return fmt.Errorf("%w: %v", errStale, err)
		}
	}
	return nil
}
