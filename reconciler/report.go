package reconciler

// Report is what one group of reconciles did beyond the answers their clients got, for
// the caller that runs them (serve, through Reconciler.Reports): which namespaces to ask
// Flux to fetch, what to count, what to tell Kubernetes and the log.
type Report struct {
	// Events is the group's size, events answered without a commit (retried ids) included.
	Events int
	// Pushes counts the pushes that landed: one for a group that committed something, or
	// in review mode one per event committed to its branch.
	Pushes int
	// Retries counts the push attempts beyond the first (the remote moved, or failed
	// transiently) of the pushes that landed or found nothing left to push.
	Retries int
	// Results are the clusters whose reconcile pushed to the configured branch, or moved
	// or failed a delete or an upgrade chain; a cluster with nothing of that is left out.
	Results []Result
}

// Result is what one cluster's reconcile did, beyond its answers.
type Result struct {
	ClusterUUID string
	// Pushed are its commits that a push to the configured branch carried (not to a
	// review branch), in order.
	Pushed []Push
	// Delete and Upgrade are what its delete's or its upgrade chain's step did, when it
	// committed or failed; a step that had to wait reports nothing.
	Delete  *DeleteProgress
	Upgrade *UpgradeProgress
}

// Push is one commit a push carried to the configured branch: the cluster's namespace and
// the paths it changed (nil when not known), what serve asks Flux to fetch.
type Push struct {
	Namespace string
	Paths     []string
}
