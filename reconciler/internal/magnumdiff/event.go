package magnumdiff

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// Driver names the poller as the origin of the events derived from Magnum's view (the
// record's magnum.driver).
const Driver = "magnum-gitops-poller"

// EventID is the id of a derived event: "poll-<cluster uuid>-<operation>-<hash>", the hash
// taken over the event without its id and Secret material. The same difference between
// Git and Magnum therefore always gets the same id, in this process or the next, and the
// ledger answers a difference already committed as a retry.
func EventID(ev *v1alpha1.ClusterEvent) string {
	e := *ev
	e.ID, e.Secrets = "", nil
	b, err := json.Marshal(&e)
	if err != nil {
		panic("magnumdiff: event id: " + err.Error()) // plain data: cannot happen
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("poll-%s-%s-%s", ev.Cluster.UUID, ev.Operation, hex.EncodeToString(sum[:6]))
}

// Event builds the event of one step; rec is the event Git holds for the cluster (nil when
// none) and authURL the identity endpoint written into the event's context when rec names
// none. Resolved is left for the pipeline's resolvers (the OpenStack facts are looked up
// at every render, as the driver does), except for a delete, which renders no values and
// keeps what Git recorded.
func Event(rec *v1alpha1.ClusterEvent, st Step, authURL string) *v1alpha1.ClusterEvent {
	s := st.State
	ev := &v1alpha1.ClusterEvent{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.EventKind,
		Operation: st.Op, NodeGroup: st.NodeGroup,
		Context: v1alpha1.RequestContext{ProjectID: s.Cluster.ProjectID, UserID: s.Cluster.UserID, AuthURL: authURL},
		Cluster: s.Cluster, ClusterTemplate: s.Template, NodeGroups: s.NodeGroups, Params: st.Params,
		Magnum: &v1alpha1.Origin{Driver: Driver}}
	if rec != nil {
		ev.Context.AuthURL = cmp.Or(rec.Context.AuthURL, authURL)
		if st.Op == v1alpha1.DeleteCluster {
			ev.Resolved = rec.Resolved
		}
	}
	ev.ID = EventID(ev)
	return ev
}

// Gone is the step of a cluster Magnum no longer has, whose record rec Git still holds as
// not deleted: its delete_cluster.
func Gone(rec *v1alpha1.ClusterEvent) Step {
	s := RecordState(rec)
	s.Cluster.Status = v1alpha1.DeleteInProgress
	return Step{Op: v1alpha1.DeleteCluster, State: s}
}
