package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler/internal/magnumdiff"
)

// MagnumView is one cluster as Magnum's API shows it now: a desired state, as an event
// is, which serve --source magnum's poll hands over (Converge). The cluster's reconcile
// derives from it, against the cluster's record, the driver calls Git lacks.
type MagnumView struct {
	Cluster    v1alpha1.Cluster
	Template   v1alpha1.ClusterTemplate
	NodeGroups []v1alpha1.NodeGroup
	// Gone says Magnum no longer has the cluster: Git's record, unless deleted already,
	// gets its delete_cluster. Only a caller that sees every project may say so.
	Gone bool
	// AuthURL is the public identity endpoint written into the events' context when the
	// record names none.
	AuthURL string
	// Credential is the application credential a derived create_cluster carries (Secret
	// material: it reaches Git only encrypted).
	Credential *v1alpha1.ApplicationCredential
}

// Converge queues clusters with Magnum's view of each as its desired state, all at once,
// and waits. Each cluster's reconcile derives in its prologue what Git lacks of the view
// (magnumdiff.Diff: the driver calls that would have made the difference, one commit each,
// in order) and commits it with the cluster's other operations; a derived operation is
// not committed once the one before it was refused or failed to render, and the next
// Converge derives it again.
// It returns, for each view in order, the summaries of its derived operations: none when
// Git holds the view already, which is a silent success.
func (r *Reconciler) Converge(ctx context.Context, views []MagnumView) [][]Summary {
	out := make([][]Summary, len(views))
	ops := make([]*operation, len(views))
	at, arrived := r.Now(), time.Now()
	for i := range views {
		ops[i] = &operation{ctx: ctx, view: &views[i], at: at, arrived: arrived,
			answer: make(chan Summary, 1), expanded: make(chan []*operation, 1)}
	}
	if !r.desired.put(ops...) {
		for i, op := range ops {
			out[i] = []Summary{viewSummary(op, errShuttingDown)}
		}
		return out
	}
	for i, op := range ops {
		var derived []*operation
		select {
		case derived = <-op.expanded:
		case sum := <-op.answer: // left waiting when Run stopped
			out[i] = []Summary{viewSummary(op, sum.Err())}
			continue
		case <-ctx.Done():
			out[i] = []Summary{viewSummary(op, stepError("accept", ctx.Err()))}
			continue
		}
		out[i] = make([]Summary, len(derived))
		r.wait(ctx, derived, out[i])
	}
	return out
}

// viewSummary is the answer to a view that derived nothing because of err.
func viewSummary(op *operation, err error) Summary {
	sum := NewSummary(nil, nil, err)
	sum.ClusterUUID = op.key()
	return sum
}

// errNoIndex refuses a view when the Reconciler has no cluster index to read the record from:
// every view would otherwise look like a new cluster.
var errNoIndex = &failure{Kind: KindInvalid, Step: "accept", Err: errors.New("a Magnum view needs the reconciler's Clusters")}

// derive is the prologue of a view's reconcile: the operations Git lacks of it, in order,
// handed to whoever waits for them. A derived event the event API would refuse is
// answered in the prologue (refused), and nothing after it is derived.
func (r *Reconciler) derive(op *operation) []*operation {
	v := op.view
	var derived []*operation
	defer func() { op.expanded <- derived }()
	if r.Clusters == nil {
		derived = []*operation{{ctx: op.ctx, ev: &v1alpha1.ClusterEvent{Cluster: v.Cluster}, refused: errNoIndex, answer: make(chan Summary, 1)}}
		return derived
	}
	var rec *v1alpha1.ClusterEvent
	if cr, ok := r.Clusters.Get(v.Cluster.UUID); ok {
		rec = cr.Event
	}
	var steps []magnumdiff.Step
	switch {
	case !v.Gone:
		steps = magnumdiff.Diff(rec, magnumdiff.State{Cluster: v.Cluster, Template: v.Template, NodeGroups: v.NodeGroups})
	case rec != nil && rec.Operation != v1alpha1.DeleteCluster:
		steps = []magnumdiff.Step{magnumdiff.Gone(rec)}
	}
	for i, st := range steps {
		ev := magnumdiff.Event(rec, st, v.AuthURL)
		d := &operation{ctx: op.ctx, ev: ev, at: op.at, arrived: op.arrived, answer: make(chan Summary, 1), follows: i > 0}
		if d.refused = wellFormed(ev); d.refused == nil && st.Op == v1alpha1.CreateCluster && v.Credential != nil {
			ev.Secrets = &v1alpha1.SecretMaterial{ApplicationCredential: v.Credential}
		}
		d.digest = eventDigest(ev)
		if derived = append(derived, d); d.refused != nil {
			break
		}
	}
	return derived
}

// wellFormed checks that a derived event is one the event API would take (Magnum's
// strings are not checked as the API checks a document), so that its record reads back
// after a restart.
func wellFormed(ev *v1alpha1.ClusterEvent) error {
	b, err := json.Marshal(ev)
	if err == nil {
		_, err = v1alpha1.DecodeEvent(b)
	}
	if err != nil {
		return &failure{Kind: KindInvalid, Step: "accept", Err: fmt.Errorf("event %s: %w", ev.ID, err)}
	}
	return nil
}
