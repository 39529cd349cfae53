package poller

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// pollerDriver names the poller as the events' origin (the record's magnum.driver).
const pollerDriver = "magnum-gitops-poller"

// pollEventID is the id of a polled event: "poll-<cluster uuid>-<operation>-<hash>", the
// hash taken over the event without its id and Secret material. The same difference
// between Git and Magnum therefore always gets the same id, in this process or the next.
func pollEventID(ev *v1alpha1.ClusterEvent) string {
	e := *ev
	e.ID, e.Secrets = "", nil
	b, err := json.Marshal(&e)
	if err != nil {
		panic("reconciler: poll event id: " + err.Error()) // plain data: cannot happen
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("poll-%s-%s-%s", ev.Cluster.UUID, ev.Operation, hex.EncodeToString(sum[:6]))
}

// pollEvent builds the event of one step. Resolved is left for the pipeline's resolvers
// (the OpenStack facts are looked up at every render, as the driver does), except for a
// delete, which renders no values and keeps what Git recorded.
func (p *Poller) pollEvent(rec *v1alpha1.ClusterEvent, st step) *v1alpha1.ClusterEvent {
	s := st.State
	ev := &v1alpha1.ClusterEvent{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.EventKind,
		Operation: st.Op, NodeGroup: st.NodeGroup,
		Context: v1alpha1.RequestContext{ProjectID: s.Cluster.ProjectID, UserID: s.Cluster.UserID, AuthURL: p.AuthURL},
		Cluster: s.Cluster, ClusterTemplate: s.Template, NodeGroups: s.NodeGroups, Params: st.Params,
		Magnum: &v1alpha1.Origin{Driver: pollerDriver}}
	if rec != nil {
		ev.Context.AuthURL = cmp.Or(rec.Context.AuthURL, p.AuthURL)
		if st.Op == v1alpha1.DeleteCluster {
			ev.Resolved = rec.Resolved
		}
	}
	ev.ID = pollEventID(ev)
	return ev
}

// submit commits one step and records it.
func (p *Poller) submit(ctx context.Context, c openstack.Cluster, rec *v1alpha1.ClusterEvent, st step) error {
	ev := p.pollEvent(rec, st)
	// The event must be one the event API would take (Magnum's strings are not checked
	// as the API checks a document), so that its record reads back after a restart.
	if b, err := json.Marshal(ev); err != nil {
		return err
	} else if _, err := v1alpha1.DecodeEvent(b); err != nil {
		return fmt.Errorf("event %s: %w", ev.ID, err)
	}
	if st.Op == v1alpha1.CreateCluster && p.Credentials != nil {
		cred := p.creds[c.UUID]
		if cred == nil {
			var err error
			if cred, err = p.Credentials(ctx, c); err != nil {
				return fmt.Errorf("application credential: %w", err)
			}
			p.creds[c.UUID] = cred
		}
		ev.Secrets = &v1alpha1.SecretMaterial{ApplicationCredential: cred}
	}
	sum := p.Submit(ctx, ev)
	log := p.log().With("event_id", ev.ID, "operation", ev.Operation, "cluster", ev.Cluster.UUID,
		"nodegroup", ev.NodeGroup, "outcome", sum.Outcome)
	if sum.Error != "" {
		log.Warn("magnum poll: event failed", "error", sum.Error)
		return fmt.Errorf("%s %s: %w", ev.Operation, ev.ID, cmp.Or(sum.Err(), errors.New(sum.Error)))
	}
	log.Info("magnum poll: event", "stack_id", sum.StackID, "commit", sum.Revision)
	if st.Op == v1alpha1.CreateCluster {
		delete(p.creds, c.UUID)
	}
	if r, ok := p.Clusters.Get(ev.Cluster.UUID); !ok || r.Event.ID != ev.ID {
		p.Clusters.Observe(ev, sum, p.now())
	}
	return nil
}

// ServiceCredentials is a Poller.Credentials creating each new cluster's application
// credential through a (openstack.AppCredentials) with the service's own identity.
// Keystone lets a user create credentials only for itself, on the project of its token, so
// the credential belongs to the service's user and project, not to the cluster's owner:
// Cluster API's OpenStack provider then creates the cluster's servers, networks and load
// balancers there. The driver, which acts with the requesting user's token, makes the
// owner's credential instead; only the event API (the driver shim) can do that.
func ServiceCredentials(a *openstack.AppCredentials) func(context.Context, openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
	return func(ctx context.Context, c openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
		cred, err := a.Create(ctx, openstack.CredentialRequest{ClusterUUID: c.UUID, ClusterName: c.Name})
		if err != nil {
			return nil, err
		}
		return cred.Event(), nil
	}
}
