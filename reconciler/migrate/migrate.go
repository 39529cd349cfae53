// Package migrate tells an operator, before a cluster magnum-capi-helm created is switched
// to magnum-gitops, what the switch would change: it compares the values magnum-gitops
// renders for the cluster (as adopted) with those of the Helm release the driver
// installed, and renders the chart with both to see whether Cluster API would replace
// machines. It reads the release from the management cluster and writes nothing.
package migrate

import (
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/release"

	"github.com/magnum-gitops/magnum-gitops/generator"
)

// Verdict is what comparing a cluster with its release found.
type Verdict string

const (
	// Identical means the values are the release's; adopting the cluster changes nothing.
	Identical Verdict = "identical"
	// Differs means the values differ from the release's; Rollout says whether machines would
	// be replaced.
	Differs Verdict = "differs"
	// Refused means the cluster cannot be compared or rendered (Reason says why).
	Refused Verdict = "refused"
)

// ErrNoRelease is returned when the management cluster has no deployed release of the
// cluster: the driver never installed it, or it is in another namespace.
var ErrNoRelease = errors.New("no deployed Helm release")

// Report is one cluster's comparison.
type Report struct {
	ClusterUUID string  `json:"cluster_uuid"`
	ClusterName string  `json:"cluster_name"`
	Namespace   string  `json:"namespace"`
	Release     string  `json:"stack_id"`
	Outcome     Verdict `json:"outcome"`
	// Reason says why a cluster was refused.
	Reason string `json:"reason,omitempty"`
	// Chart is the chart version of the live release, and ours.
	Chart struct {
		Live string `json:"live"`
		Ours string `json:"ours"`
	} `json:"chart"`
	// Changes are the value paths whose values differ, sorted.
	Changes []string `json:"changes,omitempty"`
	// Rollout names each object whose change makes Cluster API replace machines, with the
	// reason; empty when adopting replaces none.
	Rollout []string `json:"rollout,omitempty"`
	// Deviations and Warnings are the render's: what differs from the driver on purpose,
	// and the features held back on the adopted cluster.
	Deviations []generator.Deviation `json:"deviations,omitempty"`
	Warnings   []string              `json:"warnings,omitempty"`
}

// ReplacesMachines reports whether adopting the cluster as rendered would replace machines.
func (r *Report) ReplacesMachines() bool { return len(r.Rollout) > 0 }

// Refuse is the report of a cluster that could not be compared.
func Refuse(uuid, name string, err error) Report {
	return Report{ClusterUUID: uuid, ClusterName: name, Outcome: Refused, Reason: err.Error()}
}

// Compare compares a rendered, adopted cluster with the release the driver installed: its
// values, and the objects that own machines in the release's manifest (as Helm stored it,
// post-rendered if it was) against the release's chart rendered with our values and our
// post-renderers. When ours is another chart version, the templates are assumed to change
// (the upgrade is a rollout of its own).
func Compare(live *release.Release, res *generator.Result) Report {
	rep := Report{ClusterUUID: res.ClusterUUID, ClusterName: res.ClusterName, Namespace: res.Namespace,
		Release: res.ReleaseName, Deviations: res.Deviations, Warnings: res.Warnings}
	rep.Chart.Ours = res.Chart.Version
	if live.Chart != nil && live.Chart.Metadata != nil {
		rep.Chart.Live = live.Chart.Metadata.Version
	}
	ours, err := plain(res.Values)
	if err != nil {
		return refused(rep, fmt.Errorf("our values: %w", err))
	}
	theirs, err := plain(live.Config)
	if err != nil {
		return refused(rep, fmt.Errorf("the release's values: %w", err))
	}
	rep.Changes = changedPaths(theirs, ours)
	if len(rep.Changes) == 0 && rep.Chart.Live == rep.Chart.Ours && !postRendered(res) {
		// The same chart with the same values renders what the release holds.
		rep.Outcome = Identical
		return rep
	}
	if rep.Chart.Live != rep.Chart.Ours {
		rep.Outcome = Differs
		rep.Rollout = []string{fmt.Sprintf("chart %s → %s: the chart's templates change (not rendered; an upgrade of its own)", rep.Chart.Live, rep.Chart.Ours)}
		return rep
	}
	rollout, err := rollouts(live, theirs, ours, res)
	if err != nil {
		return refused(rep, fmt.Errorf("rendering chart %s: %w", rep.Chart.Live, err))
	}
	rep.Rollout = rollout
	rep.Outcome = Differs
	if len(rep.Changes) == 0 && len(rep.Rollout) == 0 {
		rep.Outcome = Identical // our post-renderers change nothing that owns machines
	}
	return rep
}

func refused(rep Report, err error) Report {
	rep.Outcome, rep.Reason = Refused, err.Error()
	return rep
}

// postRendered reports whether our HelmRelease changes the chart's output after rendering
// (scale-from-zero annotations, site post-renderers): equal values then do not prove
// equal objects.
func postRendered(res *generator.Result) bool {
	return res.Objects.HelmRelease != nil && len(res.Objects.HelmRelease.Spec.PostRenderers) > 0
}
