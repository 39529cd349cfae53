package status

import (
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// A chained upgrade (reconciler/upgrade.go) deploys one Kubernetes minor version at a time,
// each step's HelmRelease annotated with the version the chain goes to: between its steps
// the cluster is rolled out at a version Magnum did not ask for, and the upgrade is still
// in progress.

// upgradeStep is the Kubernetes version (X.Y.Z) the HelmRelease deploys and the one the
// chain goes on to when the HelmRelease deploys a step of a chained upgrade
// (magnum.AnnotationUpgradeTarget), once Flux has applied the view's commit (pending is
// revisionPending's answer); "" otherwise.
func upgradeStep(v View, o Objects, pending string) (at, target string) {
	if pending != "" || v.Status.Action() != v1alpha1.ActionUpdate || o.HelmRelease == nil {
		return "", ""
	}
	target = o.HelmRelease.GetAnnotations()[magnum.AnnotationUpgradeTarget]
	if target == "" {
		return "", ""
	}
	return trimV(stringAt(o.HelmRelease, "spec", "values", "kubernetesVersion")), target
}

// chained rephrases the judgement of a step of a chained upgrade at version at: its
// completion is not the upgrade's, and its failure stops the chain.
func chained(b *blocker, target, at string) *blocker {
	switch {
	case b == nil:
		return &blocker{reason: fmt.Sprintf("upgrading to Kubernetes %s one minor version at a time: %s rolled out, the next step follows", target, at)}
	case b.failed:
		return &blocker{failed: true, reason: fmt.Sprintf("upgrade to Kubernetes %s stopped at %s: %s", target, at, b.reason)}
	}
	return &blocker{reason: fmt.Sprintf("upgrading to Kubernetes %s one minor version at a time, now to %s: %s", target, at, b.reason)}
}

// RolledOut reports whether Cluster API runs a cluster at Kubernetes version (X.Y.Z)
// everywhere: the control plane and every MachineDeployment want it, and each is done (up
// to date, ready, nothing rolling out or scaling). A chained upgrade commits its next step
// only then.
func RolledOut(v View, o Objects, opts Options, version string) bool {
	cc := conditionCache{}
	kcp := o.ControlPlane
	if kcp == nil || trimV(stringAt(kcp, "spec", "version")) != version || controlPlaneDone(v, o, opts, cc) != nil {
		return false
	}
	if at := trimV(stringAt(kcp, "status", "version")); at != "" && at != version {
		return false // status.version is the oldest version a control-plane machine runs
	}
	for _, md := range o.MachineDeployments {
		if trimV(stringAt(md, "spec", "template", "spec", "version")) != version || !machineDeploymentDone(md, cc) {
			return false
		}
	}
	return true
}

func trimV(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), "v") }
