package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// DefaultOptions are the defaults of the judgement.
func DefaultOptions(now time.Time) Options {
	return Options{Now: now, CreateTimeout: time.Hour, UpdateTimeout: time.Hour, DeleteTimeout: time.Hour,
		MachineFailureDeadline: 15 * time.Minute,
		ControlPlaneConditions: []string{"MachinesReady", "Ready", "EtcdClusterHealthy", "ControlPlaneComponentsHealthy"}}
}

// conditionCache keeps each object's parsed conditions for one Evaluate call: several rules read the
// same object.
type conditionCache map[*unstructured.Unstructured]Conditions

func (cc conditionCache) conditions(o *unstructured.Unstructured) Conditions {
	if c, ok := cc[o]; ok {
		return c
	}
	c := ReadConditions(o)
	cc[o] = c
	return c
}

// blocker is the first thing standing between an operation and its completion.
type blocker struct {
	reason string
	failed bool
}

// Evaluate judges one cluster: a pure function of what Magnum knows and what the management
// cluster holds. It follows magnum-capi-helm's algorithm (docs/driver-rules.md, "Status")
// where that is right, reads both CAPI condition layouts with their polarity, puts the
// GitOps chain (Git → Flux → Helm) first, and fails an operation for a real reason or a
// deadline, never merely for being slow.
func Evaluate(v View, o Objects, opts Options) Report {
	cc := conditionCache{}
	r := Report{ClusterUUID: v.ClusterUUID, StackID: v.StackID, Status: v.Status}
	if o.Cluster != nil {
		if host := stringAt(o.Cluster, "spec", "controlPlaneEndpoint", "host"); host != "" {
			port, _ := intAt(o.Cluster, fieldPath("spec", "controlPlaneEndpoint", "port"))
			if port == 0 {
				port = 6443
			}
			r.APIAddress = fmt.Sprintf("https://%s:%d", host, port)
		}
	}
	r.COEVersion = cmp.Or(stringAt(o.ControlPlane, "status", "version"), stringAt(o.ControlPlane, "spec", "version"))
	// Whether Flux has applied the operation's commit is asked once and decides for the
	// cluster and its node groups alike.
	pending, refused := revisionPending(v, o, opts)
	gitops := gitopsChain(v, o, opts, pending, cc)
	stepAt, target := upgradeStep(v, o, pending)
	r.NodeGroups, r.NodeCount, r.MasterCount = nodeGroups(v, o, opts, cc, groupsHeld(v, pending, gitops, stepAt))
	for _, ng := range v.NodeGroups {
		if ng.Role != v1alpha1.RoleMaster && ng.Status.Action() != v1alpha1.ActionDelete {
			r.WorkerGroups++
			r.DesiredNodeCount += ng.NodeCount
		}
	}
	r.HealthStatus, r.HealthReason = health(v, o, cc)
	r.LeftOver = leftOver(v, o, gitops)

	action := v.Status.Action()
	switch {
	case refused && v.Status.Outcome() == v1alpha1.InProgress:
		// A pull request closed without merge: Git will never carry the operation.
		r.Status, r.StatusReason = v1alpha1.StatusOf(action, v1alpha1.Failed), pending
	case action == v1alpha1.ActionDelete:
		r.Status, r.StatusReason, r.SecretsRemovable = deleting(v, o, opts, cc, pending)
	case v.Status == v1alpha1.CreateInProgress || v.Status == v1alpha1.UpdateInProgress:
		b := progress(v, o, opts, cc, gitops)
		if stepAt != "" {
			b = chained(b, target, stepAt)
		}
		switch {
		case b == nil:
			r.Status = v1alpha1.StatusOf(action, v1alpha1.Complete)
		case b.failed:
			r.Status, r.StatusReason = v1alpha1.StatusOf(action, v1alpha1.Failed), b.reason
		default:
			r.Status, r.StatusReason = v.Status, b.reason
			if timeout := deadline(action, opts); timeout > 0 && !v.Since.IsZero() && opts.Now.Sub(v.Since) > timeout {
				r.Status = v1alpha1.StatusOf(action, v1alpha1.Failed)
				r.StatusReason = fmt.Sprintf("not complete after %s: %s", timeout, b.reason)
			}
		}
	}
	if helmReleaseSuspended(o) {
		r.StatusReason = suspendedReason(v.StackID, r.StatusReason)
	}
	return r
}

// groupsHeld says why no node group's create or update may complete yet, "" when they
// may: Flux has not applied the operation's commit (pending), Helm has not applied its
// values (gitops: the objects still show the state before them), or the HelmRelease
// deploys a step of a chained upgrade (stepAt). Until then a group's objects can look done
// at the old state.
func groupsHeld(v View, pending string, gitops *blocker, stepAt string) string {
	if held := cmp.Or(pending, stepAt); held != "" {
		return held
	}
	if a := v.Status.Action(); gitops != nil && (a == v1alpha1.ActionCreate || a == v1alpha1.ActionUpdate) {
		return gitops.reason
	}
	return ""
}

// deadline is how long an action may take before it is FAILED.
func deadline(a v1alpha1.Action, opts Options) time.Duration {
	switch a {
	case v1alpha1.ActionCreate:
		return opts.CreateTimeout
	case v1alpha1.ActionUpdate:
		return opts.UpdateTimeout
	}
	return opts.DeleteTimeout
}

// uninstalling is what a delete waits for before Cluster API deletes the Cluster: Flux to
// uninstall the HelmRelease, or in Argo mode (the cluster's Application, or the
// repository's, is there) Argo CD to delete the Application, whose resources finalizer
// deletes the chart's objects.
func uninstalling(v View, o Objects) string {
	if o.HelmRelease == nil && (o.Application != nil || isApplication(o.Kustomization)) {
		return "waiting for Argo CD to delete Application " + v.StackID + " and prune its resources"
	}
	return "waiting for Flux to uninstall HelmRelease " + v.StackID
}

// deleting: DELETE_IN_PROGRESS while the CAPI Cluster exists, DELETE_COMPLETE once it is
// gone (and Flux has dropped the HelmRelease), which is when Secrets may go. Neither
// before Flux has applied the delete's revision: a create that Flux has not applied yet
// has no HelmRelease and no Cluster either, and would make them once it is (pending is
// revisionPending's answer).
func deleting(v View, o Objects, opts Options, cc conditionCache, pending string) (v1alpha1.ClusterStatus, string, bool) {
	if v.Status != v1alpha1.DeleteInProgress {
		return v.Status, "", o.Cluster == nil && o.HelmRelease == nil && o.Application == nil && pending == ""
	}
	var reason string
	switch {
	case pending != "" && (o.Cluster == nil || o.Cluster.GetDeletionTimestamp() == nil):
		// The delete is not applied yet: in review mode, not even merged.
		reason = pending
	case o.Cluster != nil:
		c := cc.conditions(o.Cluster)
		d := c.V1Beta2("Deleting")
		reason = "Cluster " + v.StackID + " is being deleted"
		if d.Status == True {
			reason = "Cluster " + v.StackID + ": " + oneLine(cmp.Or(d.Message, d.Reason))
		} else if o.Cluster.GetDeletionTimestamp() == nil {
			reason = uninstalling(v, o)
		}
		// What else holds a Cluster being deleted: CAPI's own finalizer is what its Deleting
		// condition describes; any other (another controller's, or an operator's) keeps the
		// object, and the delete, for as long as it stays, and nothing else would say so.
		if o.Cluster.GetDeletionTimestamp() != nil {
			others := slices.DeleteFunc(slices.Clone(o.Cluster.GetFinalizers()), func(f string) bool { return f == clusterv1.ClusterFinalizer })
			if len(others) > 0 {
				reason += "; held by finalizers " + strings.Join(others, ", ")
			}
		}
	case o.HelmRelease != nil || o.Application != nil:
		reason = uninstalling(v, o)
	default:
		return v1alpha1.DeleteComplete, "", true
	}
	if opts.DeleteTimeout > 0 && !v.Since.IsZero() && opts.Now.Sub(v.Since) > opts.DeleteTimeout {
		return v1alpha1.DeleteFailed, fmt.Sprintf("not deleted after %s: %s", opts.DeleteTimeout, reason), false
	}
	return v1alpha1.DeleteInProgress, reason, false
}

// progress returns what blocks a create or update, nil when it is done; gitops is
// gitopsChain's answer.
func progress(v View, o Objects, opts Options, cc conditionCache, gitops *blocker) *blocker {
	if gitops != nil {
		return gitops
	}
	if o.Cluster == nil {
		return &blocker{reason: "waiting for Cluster " + v.StackID + " to be created"}
	}
	if b := failures(v, o, opts, cc); b != nil {
		return b
	}
	// Completion, in the driver's order: the Cluster, then each node group, then addons.
	if c := cc.conditions(o.Cluster); !c.ClusterReady() {
		return &blocker{reason: clusterBlocker(v.StackID, c)}
	}
	if b := controlPlaneDone(v, o, opts, cc); b != nil {
		return b
	}
	for _, ng := range v.NodeGroups {
		if ng.Role == v1alpha1.RoleMaster || ng.Status.Action() == v1alpha1.ActionDelete {
			continue
		}
		name := magnum.ChartComponentName(v.StackID, magnum.SanitizedName(ng.Name))
		md := find(o.MachineDeployments, name)
		if md == nil {
			return &blocker{reason: "waiting for MachineDeployment " + name}
		}
		if !machineDeploymentDone(md, cc) {
			return &blocker{reason: machineDeploymentBlocker(name, md, cc)}
		}
	}
	// A MachineDeployment no node group wants any more (a deleted group's) is done only once
	// it is gone: until then CAPI is still deleting its machines (in Argo mode, once serve
	// has deleted it: leftOver).
	wanted := wantedMachineDeployments(v)
	for _, md := range o.MachineDeployments {
		if !wanted[md.GetName()] {
			return &blocker{reason: fmt.Sprintf("waiting for MachineDeployment %s to be deleted (%d machines left)",
				md.GetName(), machinesOf(o, label(md, magnum.LabelChartNodeGroup)))}
		}
	}
	if o.AddonsUnknown {
		return &blocker{reason: "addon state unknown: the addons.stackhpc.com CRDs are not installed"}
	}
	for _, a := range o.Addons {
		phase := stringAt(a, "status", "phase")
		if phase != "Deployed" {
			return &blocker{reason: fmt.Sprintf("addon %s: %s", a.GetName(), cmp.Or(phase, "Unknown (no phase yet)"))}
		}
	}
	return nil
}

// gitopsChain reports what stands between the commit and Helm: Flux not having applied
// the revision (pending, revisionPending's answer), the HelmRelease not yet reconciled, or
// Helm failing.
func gitopsChain(v View, o Objects, opts Options, pending string, cc conditionCache) *blocker {
	if pending != "" {
		return &blocker{reason: pending}
	}
	hr := o.HelmRelease
	if hr == nil && o.Application != nil {
		return argoChain(v, o.Application, opts)
	}
	if hr == nil {
		return &blocker{reason: "waiting for Flux to create HelmRelease " + v.StackID}
	}
	gen := hr.GetGeneration()
	observed, _ := intAt(hr, fieldPath("status", "observedGeneration"))
	c := cc.conditions(hr)
	if stalled := c.V1Beta2("Stalled"); stalled.Status == True {
		return &blocker{failed: true, reason: "HelmRelease " + v.StackID + " stalled: " + helmMessage(stalled)}
	}
	if observed < gen {
		return &blocker{reason: fmt.Sprintf("waiting for helm-controller to reconcile HelmRelease %s generation %d", v.StackID, gen)}
	}
	ready := c.V1Beta2("Ready")
	switch ready.Status {
	case True:
		return nil
	case False:
		return &blocker{reason: "HelmRelease " + v.StackID + ": " + helmMessage(ready)}
	}
	return &blocker{reason: "HelmRelease " + v.StackID + ": " + cmp.Or(ready.Message, "Helm release in progress")}
}

// revisionPending says what the operation waits for while Flux has not applied the commit
// that carries it ("" once it has, or when the Kustomization or the commit is unknown):
// until then the objects describe the state before the operation. The cluster (gitopsChain,
// deleting) and each of its node groups (nodeGroups) wait on this one rule. In review
// mode the pull request that carries the commit is what it waits for first; refused is
// set when that pull request was closed without merge.
func revisionPending(v View, o Objects, opts Options) (pending string, refused bool) {
	k := o.Kustomization
	if k == nil || v.Revision == "" {
		return "", false
	}
	if applied, ok := Applied(k, v.Revision, opts); !ok {
		if isApplication(k) {
			return opts.Review.pending(fmt.Sprintf("waiting for Argo CD to sync revision %s (Application %s synced: %s)", short(v.Revision), k.GetName(), cmp.Or(short(applied), "none")))
		}
		return opts.Review.pending(fmt.Sprintf("waiting for Flux to apply revision %s (applied: %s)", short(v.Revision), cmp.Or(short(applied), "none")))
	}
	return "", false
}

// helmMessage phrases a Flux condition: "Helm upgrade failed: <message>". helm-controller's
// own failure messages already say what failed ("Helm upgrade failed for release ns/name
// with chart name@version: <error>") and are kept as they are, not said twice.
func helmMessage(c Condition) string {
	verb := map[string]string{"InstallFailed": "Helm install failed", "UpgradeFailed": "Helm upgrade failed",
		"RetriesExceeded": "Helm retries exceeded", "ArtifactFailed": "chart not available",
		"UninstallFailed": "Helm uninstall failed"}[c.Reason]
	if verb == "" {
		verb = c.Reason
	}
	if verb != "" && strings.HasPrefix(c.Message, verb+" ") {
		return c.Message
	}
	return strings.TrimPrefix(verb+": "+c.Message, ": ")
}

// failures finds a reason to declare the operation FAILED now.
func failures(v View, o Objects, opts Options, cc conditionCache) *blocker {
	for _, a := range o.Addons {
		if stringAt(a, "status", "phase") == "Failed" {
			return &blocker{failed: true, reason: fmt.Sprintf("addon %s failed: %s", a.GetName(), stringAt(a, "status", "failureMessage"))}
		}
	}
	if ic := o.InfraCluster; ic != nil {
		if fr := stringAt(ic, "status", "failureReason"); fr != "" {
			return &blocker{failed: true, reason: fmt.Sprintf("%s %s: %s: %s", kindOf(ic), ic.GetName(), fr, stringAt(ic, "status", "failureMessage"))}
		}
		if ready := cc.conditions(ic).V1Beta2("Ready"); ready.Status == False && ready.Severity == "Error" {
			return &blocker{failed: true, reason: fmt.Sprintf("%s %s: %s: %s", kindOf(ic), ic.GetName(), ready.Reason, ready.Message)}
		}
	}
	// A Machine whose infrastructure reports an error: FAILED past the deadline (quota
	// errors heal when quota frees), and until then the reason of the wait, in place of
	// the MachineSet's "Scaling up", which says nothing of why.
	deadline := opts.MachineFailureDeadline
	var erring *blocker
	for _, machine := range o.Machines {
		c := cc.conditions(machine)
		infra := c.V1Beta1("InfrastructureReady")
		if infra.Status == Unknown {
			infra = c.V1Beta2("InfrastructureReady")
		}
		if infra.Status != False || infra.Message == "" || !looksLikeError(infra) {
			continue
		}
		what := fmt.Sprintf("Machine %s: InfrastructureReady False", machine.GetName())
		if infra.Reason != "" {
			what += " (" + infra.Reason + ")"
		}
		what += ": " + infra.Message
		age := opts.Now.Sub(machine.GetCreationTimestamp().Time)
		if deadline > 0 && age > deadline {
			return &blocker{failed: true, reason: what}
		}
		if erring == nil {
			erring = &blocker{reason: what}
			if deadline > 0 {
				erring.reason += fmt.Sprintf(" (the operation fails if it lasts %s)", deadline)
			}
		}
	}
	return erring
}

// looksLikeError tells an infrastructure error from plain waiting.
func looksLikeError(c Condition) bool {
	if c.Severity == "Error" {
		return true
	}
	r := strings.ToLower(c.Reason + " " + c.Message)
	for _, w := range []string{"error", "failed", "quota", "exceeded", "invalid", "not found", "conflict", "forbidden"} {
		if strings.Contains(r, w) {
			return true
		}
	}
	return false
}

func controlPlaneDone(v View, o Objects, opts Options, cc conditionCache) *blocker {
	kcp := o.ControlPlane
	name := magnum.ChartComponentName(v.StackID, "control-plane")
	if kcp == nil {
		return &blocker{reason: "waiting for KubeadmControlPlane " + name}
	}
	if gen, stale := unobserved(kcp); stale {
		return &blocker{reason: fmt.Sprintf("waiting for Cluster API to reconcile KubeadmControlPlane %s generation %d", name, gen)}
	}
	c := cc.conditions(kcp)
	spec, _ := intAt(kcp, fieldPath("spec", "replicas"))
	replicas, _ := intAt(kcp, fieldPath("status", "replicas"))
	upToDate, _ := intAt(kcp, fieldPath("status", "upToDateReplicas"), fieldPath("status", "v1beta2", "upToDateReplicas"), fieldPath("status", "updatedReplicas"))
	ready, _ := intAt(kcp, fieldPath("status", "v1beta2", "readyReplicas"), fieldPath("status", "readyReplicas"))
	condsOK := false
	if c.HasV1Beta1() {
		condsOK = c.AllV1Beta1True(opts.ControlPlaneConditions...)
	} else {
		condsOK = c.V1Beta2("Available").Status == True
	}
	if !condsOK || spec != replicas || replicas != upToDate || upToDate != ready {
		reason := describe("KubeadmControlPlane", name, c)
		if condsOK {
			reason = fmt.Sprintf("KubeadmControlPlane %s: %d/%d replicas up to date and ready", name, min(upToDate, ready), spec)
		}
		return &blocker{reason: reason}
	}
	return nil
}

// machineDeploymentDone: the right number of machines, all up to date and ready, nothing
// rolling out or scaling.
func machineDeploymentDone(md *unstructured.Unstructured, cc conditionCache) bool {
	if _, stale := unobserved(md); stale {
		return false
	}
	c := cc.conditions(md)
	spec, replicas, upToDate, ready := machineDeploymentCounts(md)
	for _, t := range []string{"RollingOut", "ScalingUp", "ScalingDown"} {
		if c.V1Beta2(t).Status == True {
			return false
		}
	}
	phase := stringAt(md, "status", "phase")
	return spec == replicas && replicas == upToDate && upToDate == ready && (phase == "" || phase == "Running")
}

// unobserved reports whether a Cluster API object's status speaks of an older spec than its
// own (status.observedGeneration below metadata.generation), and the generation waited
// for: right after Helm changes a MachineDeployment's template its status still counts
// every replica up to date, until the controller has seen the change. An object without
// observedGeneration is judged by its other fields.
func unobserved(u *unstructured.Unstructured) (generation int64, stale bool) {
	observed, found, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return u.GetGeneration(), found && observed < u.GetGeneration()
}

// machineDeploymentCounts reads a MachineDeployment's wanted, current, up-to-date and ready
// replicas; ready is the v1beta2 count (a Machine whose Ready condition is True) when there
// is one.
func machineDeploymentCounts(md *unstructured.Unstructured) (spec, replicas, upToDate, ready int64) {
	spec, _ = intAt(md, fieldPath("spec", "replicas"))
	replicas, _ = intAt(md, fieldPath("status", "replicas"))
	upToDate, _ = intAt(md, fieldPath("status", "upToDateReplicas"), fieldPath("status", "v1beta2", "upToDateReplicas"), fieldPath("status", "updatedReplicas"))
	ready, _ = intAt(md, fieldPath("status", "v1beta2", "readyReplicas"), fieldPath("status", "readyReplicas"))
	return spec, replicas, upToDate, ready
}

// machineDeploymentBlocker says why a MachineDeployment is not done: its most telling
// condition, or its counts when every condition is in its normal state (CAPI counts a
// Machine ready in v1beta2 only once its Ready condition is True, shortly after its node is,
// and its v1beta1 conditions are all True by then).
func machineDeploymentBlocker(name string, md *unstructured.Unstructured, cc conditionCache) string {
	if gen, stale := unobserved(md); stale {
		return fmt.Sprintf("waiting for Cluster API to reconcile MachineDeployment %s generation %d", name, gen)
	}
	c := cc.conditions(md)
	if len(c.Waiting()) > 0 || len(c.Busy()) > 0 {
		return describe("MachineDeployment", name, c)
	}
	spec, _, upToDate, ready := machineDeploymentCounts(md)
	return fmt.Sprintf("MachineDeployment %s: %d/%d replicas up to date and ready", name, min(upToDate, ready), spec)
}

// clusterBlocker names the first required Cluster condition that is not True, in causal
// order (infrastructure, control plane, summary); a missing one is Unknown.
func clusterBlocker(name string, c Conditions) string {
	say := func(cond Condition) string {
		msg := fmt.Sprintf("Cluster %s: %s %s", name, cond.Type, cond.Status)
		if cond.Message != "" {
			msg += ": " + oneLine(cond.Message)
		}
		return msg
	}
	// v1beta2 Available aggregates the others with a message naming the culprits; when it
	// has none, the v1beta1 conditions say more.
	if avail := c.V1Beta2("Available"); c.HasV1Beta2() && avail.Status != True && (avail.Message != "" || !c.HasV1Beta1()) {
		return say(avail)
	}
	for _, t := range []string{"InfrastructureReady", "ControlPlaneReady", "Ready"} {
		if cond := c.V1Beta1(t); cond.Status != True {
			return say(cond)
		}
	}
	return describe("Cluster", name, c)
}

// describe names a blocking object and its most telling condition. When every condition
// of the layout Waiting reads is in its normal state, what the object is doing says why it
// is not done: a MachineDeployment replacing its machines reports that only in its v1beta2
// RollingOut condition, its v1beta1 conditions all True.
func describe(kind, name string, c Conditions) string {
	var cond Condition
	if w := c.Waiting(); len(w) > 0 {
		cond = c.V1Beta1(w[0])
		if cond.Status == Unknown && cond.Message == "" {
			cond = c.V1Beta2(w[0])
		}
	} else if busy := c.Busy(); len(busy) > 0 {
		cond = c.V1Beta2(busy[0])
	} else {
		return kind + " " + name + ": not ready"
	}
	msg := fmt.Sprintf("%s %s: %s %s", kind, name, cond.Type, cond.Status)
	if cond.Message != "" {
		msg += ": " + oneLine(cond.Message)
	}
	return msg
}

// oneLine folds a condition message into one line of status_reason. Cluster API's v1beta2
// messages are nested lists ("* WorkersAvailable:\n  * MachineDeployment md: 0 available
// replicas, …"), whose first line alone says nothing; each line is kept, trimmed, in order.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessage {
		// A list of conditions, the first the most telling: keep its start, whole runes
		// only (argoMessage keeps an error chain's end too).
		cut := s[:maxMessage]
		for !utf8.ValidString(cut) {
			cut = cut[:len(cut)-1]
		}
		s = cut + "…"
	}
	return s
}

// maxMessage is how much of a controller's message one status reason quotes.
const maxMessage = 240

func find(list []*unstructured.Unstructured, name string) *unstructured.Unstructured {
	for _, o := range list {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func short(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		rev = rev[i+1:]
	}
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
