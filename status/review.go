package status

import "fmt"

// Pull request states as a forge reports them (gitrepo.PullRequestState): the caller reads
// them from the forge, status only judges them.
const (
	ReviewOpen   = "open"
	ReviewMerged = "merged"
	ReviewClosed = "closed" // closed without merge
)

// Review is the pull request that carries a cluster's operation in review mode, as the
// forge last reported it; the zero Review is an operation committed to the branch Flux
// applies. Until Flux has applied the operation, the pull request is what it waits for,
// and one closed without merge will never be applied: the operation has failed.
type Review struct {
	// URL is the pull request's web address, as the forge gave it when it was opened.
	URL string
	// State is ReviewOpen, ReviewMerged or ReviewClosed; empty when not read yet.
	State string
	// By is who merged or closed it.
	By string
	// Unmergeable: the forge cannot merge it as it stands (a conflict with main, most
	// often), so the reviewer has more to do than approve.
	Unmergeable bool
}

// pending phrases what an operation not yet applied waits for (wait, revisionPending's
// words) when a pull request carries it, and whether it never will be applied.
func (r Review) pending(wait string) (reason string, refused bool) {
	switch {
	case r.URL == "":
		return wait, false
	case r.State == ReviewClosed:
		return fmt.Sprintf("pull request %s was closed without merge%s", r.URL, by(r.By)), true
	case r.State == ReviewMerged:
		return fmt.Sprintf("pull request %s merged%s; %s", r.URL, by(r.By), wait), false
	}
	if r.Unmergeable {
		return "waiting for review of pull request " + r.URL + ", which the forge cannot merge as it stands (a conflict with main?)", false
	}
	return "waiting for review of pull request " + r.URL, false
}

func by(who string) string {
	if who == "" {
		return ""
	}
	return " by " + who
}
