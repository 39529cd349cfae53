package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

// push sends a pack of exactly the objects a change created and moves one ref from old to
// new over a receive-pack session. go-git's Repository.Push would first walk the whole
// tree to find what the remote lacks; here the cost is O(changed objects). The ref only
// moves if the remote still has prev, so a concurrent writer can never be overwritten;
// prev equal to next leaves it alone. The published branches (Split) move in the same
// session, atomically with the ref where the remote offers it, to whatever their heads
// must be: each head is a function of its content, so there is nothing to overwrite.
// Callers hold mu, not st.
func (r *Repo) push(ctx context.Context, ref plumbing.ReferenceName, prev, next plumbing.Hash, pack []byte, pubs []publication) error {
	sess, adv, refs, err := r.receivePack(ctx)
	if err != nil {
		return err
	}
	defer sess.Close()
	if adv != nil && prev != next && refs[ref] != prev {
		return errStale
	}
	var cmds []*packp.Command
	if prev != next {
		cmds = append(cmds, &packp.Command{Name: ref, Old: prev, New: next})
	}
	for _, p := range pubs {
		if cur := refs[p.ref]; cur != p.commit {
			cmds = append(cmds, &packp.Command{Name: p.ref, Old: cur, New: p.commit})
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	req := packp.NewReferenceUpdateRequest()
	remote := &boundedBuffer{max: 2048}
	if adv != nil {
		req = packp.NewReferenceUpdateRequestFromCapabilities(adv.Capabilities)
		if adv.Capabilities.Supports(capability.Sideband64k) {
			// Hooks print why they refused a push on the side band.
			if err := req.Capabilities.Set(capability.Sideband64k); err == nil {
				req.Progress = remote
			}
		}
	}
	if len(cmds) > 1 && adv != nil && adv.Capabilities.Supports(capability.Atomic) {
		// The branch and its published parts land together or not at all.
		_ = req.Capabilities.Set(capability.Atomic)
	}
	req.Commands = cmds
	req.Packfile = io.NopCloser(bytes.NewReader(pack))
	report, err := sess.ReceivePack(ctx, req)
	if report != nil {
		// go-git also returns the report's first failure as err; the report says more.
		err = checkReport(report, remote.String())
	} else {
		err = classify(err)
	}
	if err == nil {
		r.notePublished(nil, cmds)
	}
	return err
}

// receivePack opens a receive-pack session and reads the remote's refs (adv is nil for an
// empty repository); it records the published branches' heads among them. Callers hold mu
// and close the session.
func (r *Repo) receivePack(ctx context.Context) (transport.ReceivePackSession, *packp.AdvRefs, map[plumbing.ReferenceName]plumbing.Hash, error) {
	cl, err := client.NewClient(r.ep)
	if err != nil {
		return nil, nil, nil, classify(err)
	}
	sess, err := cl.NewReceivePackSession(r.ep, r.auth)
	if err != nil {
		return nil, nil, nil, classify(err)
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		sess.Close()
		return nil, nil, nil, classify(err)
	}
	refs := map[plumbing.ReferenceName]plumbing.Hash{}
	if adv != nil {
		all, err := adv.AllReferences()
		if err != nil {
			sess.Close()
			return nil, nil, nil, classify(err)
		}
		for name, at := range all {
			refs[name] = at.Hash()
		}
	}
	r.notePublished(refs, nil)
	return sess, adv, refs, nil
}

// checkReport reads receive-pack's report-status. A ref that moved under us (the update's
// old value no longer holds, or the ref was locked by a concurrent push) is stale and
// retried; any other refusal of the ref is permanent.
func checkReport(report *packp.ReportStatus, remoteSaid string) error {
	if report.UnpackStatus != "ok" {
		return fmt.Errorf("gitrepo: the remote could not unpack the push: %s", Sanitize(report.UnpackStatus))
	}
	for _, cs := range report.CommandStatuses {
		if cs.Status == "ok" {
			continue
		}
		if staleReason(cs.Status) {
			return fmt.Errorf("%w: %s", errStale, Sanitize(cs.Status))
		}
		return &PushRejectedError{Ref: cs.ReferenceName.String(), Reason: Sanitize(cs.Status), Message: Sanitize(remoteSaid)}
	}
	return nil
}

// staleReasons are receive-pack's words for a ref that changed between our read and our
// update, in Git and in the forges that reimplement it.
var staleReasons = []string{
	"non-fast-forward", "fetch first", "stale info", "failed to update ref", "failed to lock",
	"cannot lock ref", "but expected", "incorrect old value", "reference already exists",
	"reference does not exist",
}

func staleReason(status string) bool {
	s := strings.ToLower(status)
	for _, r := range staleReasons {
		if strings.Contains(s, r) {
			return true
		}
	}
	return false
}

// Sanitize makes text a remote (a Git server, a forge) sent safe to put in an error: one
// line, no control characters, bounded.
func Sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 512 {
		s = strings.ToValidUTF8(s[:512], "") + "…"
	}
	return s
}

// boundedBuffer keeps the first max bytes written to it.
type boundedBuffer struct {
	max int
	buf bytes.Buffer
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string { return b.buf.String() }
