package service

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/status"
	"github.com/magnum-gitops/magnum-gitops/status/report"
)

// ManagementCluster is how the service reaches one management cluster: where it reads
// status, finishes deletes and asks Flux to fetch.
type ManagementCluster struct {
	// Name is its management_clusters entry's name; empty when the configuration has none
	// and the repository feeds one management cluster through flux.path.
	Name string
	// Status reads it; Kustomization names the Flux Kustomization that applies its path.
	// Without Status, its clusters' status answers 503 and their deletes wait.
	Status        status.Source
	Kustomization string
	// Kube deletes a deleted cluster's Secrets once they left Git (they carry the prune
	// guard, so Flux does not). Without it the Secrets stay and a warning is logged.
	Kube client.Client
	// ReconcileRequest, when it names a GitRepository, is annotated through Kube after
	// every push that changed its path, so that Flux fetches the commit at once
	// (fluxnotify.go).
	ReconcileRequest ReconcileRequest
	// Events, when set, records Kubernetes Events on each cluster's HelmRelease there
	// (events.go).
	Events EventRecorder
}

// managed is a management cluster with the service's reader and requester of it; root is
// its directory in the repository.
type managed struct {
	ManagementCluster
	root      string
	judge     *judge              // nil without Status
	requester *reconcileRequester // nil without a reconcile request
}

// manage pairs the configured roots with the Options' management clusters by name. A root
// without one is served without status; a management cluster the configuration does not
// name is an error.
func manage(cfg *generator.Config, given []ManagementCluster, log *slog.Logger) ([]*managed, error) {
	byName := map[string]ManagementCluster{}
	for _, m := range given {
		byName[m.Name] = m
	}
	var out []*managed
	for _, root := range cfg.Roots() {
		name := ""
		if mc := cfg.ManagementClusterAt(root); mc != nil {
			name = mc.Name
		}
		m := &managed{ManagementCluster: byName[name], root: root}
		m.Name = name
		delete(byName, name)
		if m.ReconcileRequest.Enabled() {
			if m.Kube == nil {
				return nil, fmt.Errorf("serve: a reconcile request of %s needs a client of management cluster %q", m.ReconcileRequest, name)
			}
			m.requester = newReconcileRequester(m.Kube, m.ReconcileRequest, root, cfg, log)
		}
		out = append(out, m)
	}
	if len(byName) > 0 {
		return nil, fmt.Errorf("serve: management clusters %q are not in management_clusters", slices.Sorted(maps.Keys(byName)))
	}
	return out, nil
}

// at is the management cluster whose path is root; nil for a root the configuration
// no longer names.
func (s *Service) at(root string) *managed {
	for _, m := range s.managed {
		if m.root == root {
			return m
		}
	}
	return nil
}

// judgeOf is the judge of a cluster's management cluster; nil when it has no Status.
func (s *Service) judgeOf(rec reconciler.ClusterRecord) *judge {
	if m := s.at(rec.Root); m != nil {
		return m.judge
	}
	return nil
}

// judged reports whether any management cluster has a status reader.
func (s *Service) judged() bool {
	for _, m := range s.managed {
		if m.judge != nil {
			return true
		}
	}
	return false
}

// lookup is the status of one cluster by Magnum UUID (report.Lookup), from its
// management cluster.
func (s *Service) lookup(uuid string) (status.Report, error) {
	rec, ok := s.clusters.Get(uuid)
	if !ok {
		if gone, ok := s.clusters.Gone(uuid); ok {
			// The delete completed: the objects and the repository directory are gone.
			return status.Report{ClusterUUID: uuid, StackID: gone.StackID, Status: v1alpha1.DeleteComplete,
				HealthStatus: v1alpha1.UnknownHealth, SecretsRemovable: true}, nil
		}
		return status.Report{}, report.ErrNotFound
	}
	j := s.judgeOf(rec)
	if j == nil {
		return status.Report{}, fmt.Errorf("no status reader of management cluster %q", s.nameOf(rec))
	}
	return j.evaluate(context.Background(), rec), nil
}

// applied is what Flux last applied to a cluster's namespace on its management cluster,
// and whether that includes revision (httpapi.Server.Applied).
func (s *Service) applied(rec reconciler.ClusterRecord, revision string) (applied string, includes, known bool) {
	if j := s.judgeOf(rec); j != nil {
		return j.applied(rec, revision)
	}
	return "", false, false
}

// nameOf names a cluster's management cluster, for messages.
func (s *Service) nameOf(rec reconciler.ClusterRecord) string {
	if m := s.at(rec.Root); m != nil && m.Name != "" {
		return m.Name
	}
	return rec.Root
}

// requestUnapplied asks Flux to fetch for every namespace holding a cluster whose last
// commit the Kustomization that applies it has not applied (status.Applied, the one
// answer), on that cluster's management cluster. A push is followed by such a request
// (pushed); one lost with a replica stopped between its push and the request would leave
// the commit to the GitRepository's interval, even for the event's retry, which finds
// its commit in Git and pushes nothing. The service calls it when it starts and when it
// takes the lease; it returns the namespaces asked for.
func (s *Service) requestUnapplied() int {
	asked := map[*managed]map[string]bool{}
	n := 0
	for _, rec := range s.clusters.All() {
		m := s.at(rec.Root)
		if m == nil || m.requester == nil || m.judge == nil || rec.Revision == "" || asked[m][rec.Namespace] {
			continue
		}
		_, includes, known := m.judge.applied(rec, rec.Revision)
		if includes {
			continue
		}
		if asked[m] == nil {
			asked[m] = map[string]bool{}
		}
		asked[m][rec.Namespace] = true
		if known {
			m.requester.request(rec.Namespace, nil)
		} else {
			// No Kustomization applies the namespace yet (a new one in the per-namespace
			// layouts): the root GitRepository brings it.
			m.requester.request("", nil)
		}
		n++
	}
	if n > 0 {
		s.o.Log.Info("asking Flux to fetch commits it has not applied", "namespaces", n)
	}
	return n
}

// pushed asks the Flux of each management cluster whose path a commit changed to fetch
// it (reconciler.Result.Pushed); paths nil (not known) asks every one.
func (s *Service) pushed(namespace string, paths []string) {
	for _, m := range s.managed {
		if m.requester == nil {
			continue
		}
		if paths == nil {
			m.requester.request(namespace, nil)
			continue
		}
		var mine []string
		for _, p := range paths {
			if strings.HasPrefix(p, m.root+"/") {
				mine = append(mine, p)
			}
		}
		if len(mine) > 0 {
			m.requester.request(namespace, mine)
		}
	}
}

// management answers the delete and upgrade steps of a cluster from its management
// cluster: the judge's snapshot and the Kubernetes API.
type management struct{ s *Service }

func (m management) ClusterGone(ctx context.Context, rec reconciler.ClusterRecord) bool {
	j := m.s.judgeOf(rec)
	return j != nil && j.evaluate(ctx, rec).SecretsRemovable
}

func (m management) Applied(rec reconciler.ClusterRecord, commit string) bool {
	_, includes, _ := m.s.applied(rec, commit)
	return includes
}

// RolledOut answers the upgrade step from a snapshot taken after the cluster's last step
// was committed (status.RolledOut).
func (m management) RolledOut(ctx context.Context, rec reconciler.ClusterRecord, version string) bool {
	j := m.s.judgeOf(rec)
	if j == nil {
		return false
	}
	v := View(rec)
	snap, err := j.snapshotAfter(ctx, rec.At)
	if err != nil {
		return false
	}
	return status.RolledOut(v, snap.Objects(v), status.OptionsFor(rec.Event, j.options(time.Now())), version)
}

// DeleteSecrets deletes a removed cluster's Secrets by name on its management cluster
// (absent ones are fine), then what OnSecretsRemoved deletes.
func (m management) DeleteSecrets(ctx context.Context, rec reconciler.ClusterRecord, names []string) error {
	o := m.s.o
	var kube client.Client
	if mc := m.s.at(rec.Root); mc != nil {
		kube = mc.Kube
	}
	if kube == nil && len(names) > 0 {
		o.Log.Warn("no management cluster client: the deleted cluster's Secrets stay", "stack_id", rec.StackID, "secrets", names)
	}
	for _, name := range names {
		if kube == nil {
			break
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rec.Namespace}}
		if err := kube.Delete(ctx, sec); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("secret %s/%s: %w", rec.Namespace, name, err)
		}
	}
	if o.OnSecretsRemoved != nil {
		if err := o.OnSecretsRemoved(ctx, rec); err != nil {
			return fmt.Errorf("after its Secrets: %w", err)
		}
	}
	return nil
}
