package gitrepo

import "context"

// GroupResult says what became of one change of ApplyGroup.
type GroupResult struct {
	// Result holds the change's commit (zero with NoOp when it was already there), the
	// branch, and the group's push attempts.
	Result
	// Err is the change's own failure: an invalid change (ErrInvalidChange), a
	// *ConflictError, or ErrStale when its plan no longer holds. Such a change was left
	// out; the others landed.
	Err error
}

// ApplyGroup commits the planned changes as one chain, in order (change i goes on the
// tree left by changes 0..i-1), and pushes the whole chain at once to Options.Branch: many
// changes cost one push instead of one each. A change already there makes no commit
// (NoOp); one that is invalid, goes to a review branch, conflicts with a remote change
// (the rule of ApplyPlanned) or whose plan no longer holds where it would go (ErrStale) is
// left out with its own Err while the rest land. When the remote moved, the chain is
// built again on the new head, by the same rules. The returned error is for the group as
// a whole (authentication, too many attempts, a cancelled context, a rejected push); then
// nothing was pushed.
func (r *Repo) ApplyGroup(ctx context.Context, planned []Planned) ([]GroupResult, error) {
	b, err := r.Begin(ctx, "")
	if err != nil {
		return nil, err
	}
	defer b.Close()
	ids, err := b.Add(ctx, planned...)
	if err != nil {
		return nil, err
	}
	if err := b.pushAll(ctx); err != nil {
		return nil, err
	}
	out := make([]GroupResult, len(ids))
	for i, id := range ids {
		out[i] = b.Result(id)
	}
	return out, nil
}

// pushAll pushes the chain, leaving out what went stale on a moved remote.
func (b *Batch) pushAll(ctx context.Context) error {
	for {
		stale, err := b.Push(ctx)
		if err != nil || len(stale) == 0 {
			return err
		}
	}
}
