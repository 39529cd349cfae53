package status

import (
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// A chained upgrade (reconciler/upgrade.go) deploys one Kubernetes minor version at a time,
// each step's HelmRelease (in Argo mode its Application) annotated with the version the
// chain goes to: between its steps the cluster is rolled out at a version Magnum did not
// ask for, and the upgrade is still in progress.

// upgradeStep is the Kubernetes version (X.Y.Z) the HelmRelease, or in Argo mode the
// cluster's Application, deploys and the one the chain goes on to when it deploys a step of
// a chained upgrade (magnum.AnnotationUpgradeTarget), once Flux or Argo CD has applied the
// view's commit (pending is revisionPending's answer); "" otherwise.
//
// The step's version is the chart's kubernetesVersion value: a HelmRelease's spec.values, a
// Helm-source Application's values (applicationValues). An Application with a kustomize
// source (a cluster with chart patches) holds no values: they are in the chart
// kustomization in Git (generator.ChartDir), which is not on the management cluster. There
// the version is the KubeadmControlPlane's spec.version, which the chart renders from
// kubernetesVersion: once the parent Application has synced the step's commit (the
// annotation is on the object that commit changed) and the cluster's Application has
// synced, it is the step's. Until the cluster's Application has synced, the control plane
// may still name the version before the step: the status then waits on that sync
// (argoChain), and only its wording names the older version.
func upgradeStep(v View, o Objects, pending string) (at, target string) {
	if pending != "" || v.Status.Action() != v1alpha1.ActionUpdate {
		return "", ""
	}
	switch {
	case o.HelmRelease != nil:
		target = o.HelmRelease.GetAnnotations()[magnum.AnnotationUpgradeTarget]
		at = stringAt(o.HelmRelease, "spec", "values", "kubernetesVersion")
	case o.Application != nil:
		target = o.Application.GetAnnotations()[magnum.AnnotationUpgradeTarget]
		switch {
		case target == "":
		case stringAt(o.Application, "spec", "source", "path") != "":
			at = stringAt(o.ControlPlane, "spec", "version") // a kustomize source: no values here
		default:
			at, _ = applicationValues(o.Application)["kubernetesVersion"].(string)
		}
	}
	if target == "" {
		return "", ""
	}
	return trimV(at), target
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
