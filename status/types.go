package status

import (
	"time"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// View is what Magnum knows of a cluster: the input the objects are judged against.
type View struct {
	ClusterUUID string
	Name        string
	// StackID is R, the Helm release and CAPI Cluster name.
	StackID   string
	Namespace string
	// Status is the current Magnum status, e.g. CREATE_IN_PROGRESS.
	Status v1alpha1.ClusterStatus
	// Since is when the current operation started (Magnum's updated_at).
	Since      time.Time
	NodeGroups []NodeGroupView
	// Revision, when known, is the Git commit that carries the operation: until Flux has
	// applied it, the objects describe the previous state.
	Revision string
}

// NodeGroupView is a Magnum node group.
type NodeGroupView struct {
	Name      string
	Role      string
	Status    v1alpha1.ClusterStatus
	IsDefault bool
	NodeCount int
}

// Objects are the management-cluster objects of one cluster; nil means absent.
type Objects struct {
	// HelmRelease is Flux's helm.toolkit.fluxcd.io HelmRelease R (never the chart's
	// addons.stackhpc.com HelmRelease).
	HelmRelease *unstructured.Unstructured
	// Kustomization is the Flux Kustomization that applies the repository, if known; in
	// Argo mode, the Argo CD Application that syncs it.
	Kustomization *unstructured.Unstructured
	// Application is the cluster's own Argo CD Application (Argo mode: the chart, where
	// Flux has the HelmRelease).
	Application        *unstructured.Unstructured
	Cluster            *unstructured.Unstructured
	ControlPlane       *unstructured.Unstructured
	InfraCluster       *unstructured.Unstructured
	MachineDeployments []*unstructured.Unstructured
	Machines           []*unstructured.Unstructured
	// Addons are addons.stackhpc.com HelmRelease and Manifests objects of the cluster.
	Addons []*unstructured.Unstructured
	// AddonsUnknown is set when the addons CRDs are absent: addon state is Unknown.
	AddonsUnknown bool
}

// Options tunes the judgement.
type Options struct {
	// Now is the current time.
	Now time.Time
	// CreateTimeout, UpdateTimeout and DeleteTimeout bound an operation: past them it is
	// FAILED. Zero disables the deadline (Magnum's create_timeout is the usual source).
	CreateTimeout, UpdateTimeout, DeleteTimeout time.Duration
	// MachineFailureDeadline is how long a Machine may report an infrastructure error
	// before the operation is FAILED (default 15m): quota errors heal when quota frees.
	MachineFailureDeadline time.Duration
	// ControlPlaneConditions are the v1beta1 KubeadmControlPlane conditions that must be
	// True ([capi_helm] k8s_control_plane_resource_conditions).
	ControlPlaneConditions []string
	// Ancestry is what the repository's history says of the operation's commit. Flux
	// fetches the branch head, so on a busy repository it applies commits that came after
	// the operation's; without it only the commit ids are compared, and a view would wait
	// for a commit Flux skipped until the cluster's next operation.
	Ancestry Ancestry
	// Review is the pull request that carries the operation in review mode.
	Review Review
}

// Ancestry is the answer of the repository's history, read by the caller before the
// judgement (status never reads Git): whether the revision Flux applied includes a
// commit, the commit itself or a later one with it in its history.
type Ancestry struct {
	// Applied is the revision Flux applied ("main@sha1:<commit>"), as the Kustomization
	// gives it (Snapshot.LastApplied); Includes speaks of it alone.
	Applied string
	// Includes reports whether Applied has the operation's commit in its history.
	Includes bool
}

// includes reports whether applied includes revision: the same commit, or the caller's
// ancestry says so of this applied revision.
func (o Options) includes(applied, revision string) bool {
	return AppliedCommit(applied) == revision || o.Ancestry.Includes && o.Ancestry.Applied == applied
}

// Report is the Magnum view of what the objects say, with Magnum's field names.
type Report struct {
	ClusterUUID  string                 `json:"uuid"`
	StackID      string                 `json:"stack_id"`
	Status       v1alpha1.ClusterStatus `json:"status"`
	StatusReason string                 `json:"status_reason"`
	APIAddress   string                 `json:"api_address,omitempty"`
	COEVersion   string                 `json:"coe_version,omitempty"`
	NodeCount    int                    `json:"node_count"`
	MasterCount  int                    `json:"master_count"`
	NodeGroups   []NodeGroupReport      `json:"nodegroups"`
	HealthStatus v1alpha1.HealthStatus  `json:"health_status"`
	HealthReason map[string]string      `json:"health_status_reason"`
	// SecretsRemovable is the delete signal: the CAPI Cluster is gone, so the cluster's
	// Secrets (and application credential) may be removed.
	SecretsRemovable bool `json:"secrets_removable"`
	// LeftOver are objects of the cluster its GitOps tool leaves once it has applied the
	// commit, which serve deletes (leftOver: in Argo mode, deleted node groups'
	// MachineDeployments).
	LeftOver []ObjectRef `json:"-"`
	// WorkerGroups counts the worker node groups not being deleted: Magnum's PATCH of
	// node_count resizes its default worker group, so only with one group is the cluster's
	// node_count that group's.
	WorkerGroups int `json:"-"`
	// DesiredNodeCount is the cluster's node_count (the sum of those groups) in the Magnum
	// view the report judges: while Magnum holds another, it is asking for an operation
	// serve has not seen yet.
	DesiredNodeCount int `json:"-"`
}

// NodeGroupReport is one node group's state.
type NodeGroupReport struct {
	Name      string                 `json:"name"`
	Status    v1alpha1.ClusterStatus `json:"status"`
	NodeCount int                    `json:"node_count"`
	// Gone is set for a deleted non-default group whose machines are all gone: Magnum may
	// destroy its record.
	Gone bool `json:"gone,omitempty"`
}
