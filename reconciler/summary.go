package reconciler

import (
	"errors"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
)

// Summary is the one account of what happened to an event: what the CLI prints, what the
// service answers and logs. It never holds a secret value.
type Summary struct {
	EventID          string             `json:"id,omitempty"`
	Operation        v1alpha1.Operation `json:"operation,omitempty"`
	ClusterUUID      string             `json:"cluster_uuid,omitempty"`
	StackID          string             `json:"stack_id,omitempty"`
	StackIDGenerated bool               `json:"stack_id_generated"`
	Namespace        string             `json:"namespace,omitempty"`
	// ManagementCluster is where the cluster goes (empty without management_clusters), and
	// Root its directory in the repository (generator.Result.Root).
	ManagementCluster string `json:"management_cluster,omitempty"`
	Root              string `json:"-"`
	// Outcome is "committed", "unchanged", or the Kind of the failure.
	Outcome string `json:"outcome"`
	// Revision is the commit that carries the event; empty when nothing changed.
	Revision string `json:"revision,omitempty"`
	NoOp     bool   `json:"no_op"`
	Branch   string `json:"branch,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	// Replayed is set when the event id was already carried by Revision: a retry.
	Replayed       bool   `json:"replayed,omitempty"`
	PullRequestURL string `json:"pull_request,omitempty"`
	// Paths are the changed paths, or the conflicting ones.
	Paths []string `json:"paths,omitempty"`
	// Error and Fields explain a failure; Fields name each bad input field.
	Error  string                 `json:"error,omitempty"`
	Fields []*v1alpha1.FieldError `json:"fields,omitempty"`
	// Timings are the steps' durations (metrics only).
	Timings Timings `json:"-"`
	kind    Kind
	err     error
}

// Outcome names of a success.
const (
	OutcomeCommitted = "committed"
	OutcomeUnchanged = "unchanged"
)

// Kind is the failure's class; meaningful only when Error is set.
func (s *Summary) Kind() Kind { return s.kind }

// Err is the failure, for errors.Is; nil on success.
func (s *Summary) Err() error { return s.err }

// NewSummary turns what a sink wrote, and its error, into a Summary: the one every caller
// uses, so that the CLI, the service and the logs agree.
func NewSummary(ev *v1alpha1.ClusterEvent, o *Written, err error) Summary {
	var s Summary
	if ev != nil {
		s.EventID, s.Operation, s.ClusterUUID = ev.ID, ev.Operation, ev.Cluster.UUID
	}
	if o != nil && o.Plan != nil {
		r := o.Plan.Result
		s.StackID, s.StackIDGenerated, s.Namespace = r.ReleaseName, r.ReleaseNameGenerated, r.Namespace
		s.ManagementCluster, s.Root = r.ManagementCluster, r.Root
		s.Paths = o.Plan.Paths()
	}
	if err != nil {
		s.kind, s.err = kindOf(err), err
		s.Outcome = s.kind.String()
		s.Error = err.Error()
		s.Fields = v1alpha1.FieldErrors(err)
		var ce *gitrepo.ConflictError
		if errors.As(err, &ce) {
			s.Paths = ce.Paths
		}
		return s
	}
	s.Revision, s.Branch, s.Attempts, s.PullRequestURL = o.Commit, o.Branch, o.Attempts, o.PullRequestURL
	s.Timings = o.Timings
	s.NoOp = o.NoOp()
	s.Outcome = OutcomeCommitted
	if s.NoOp {
		s.Outcome = OutcomeUnchanged
	}
	return s
}
