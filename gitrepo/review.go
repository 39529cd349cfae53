package gitrepo

import "fmt"

// checkReview refuses a review branch that is empty or protected: review mode must never
// write Options.Branch or a branch matching Options.ProtectedBranches, whatever a branch
// template renders to. The branch name itself was checked by Change.validate.
func (r *Repo) checkReview(c *Change) error {
	switch {
	case c.Branch == "":
		return fmt.Errorf("%w: review branch: empty", ErrInvalidChange)
	case r.opts.protected(c.Branch):
		return fmt.Errorf("%w: review branch %q is protected", ErrInvalidChange, c.Branch)
	}
	return nil
}
