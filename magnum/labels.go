package magnum

// Labels and annotations magnum-gitops and the driver put on the objects they write. The
// first four are the driver's own (every object it writes carries them), so objects adopted
// from the Python driver keep matching.
const (
	LabelProjectID   = "magnum.openstack.org/project-id"
	LabelUserID      = "magnum.openstack.org/user-id"
	LabelClusterUUID = "magnum.openstack.org/cluster-uuid"
	// LabelClusterName is Cluster API's cluster-name label, valued R.
	LabelClusterName = "cluster.x-k8s.io/cluster-name"

	// LabelManagedBy marks the objects magnum-gitops writes and the driver does not (the Flux
	// HelmRelease, the Namespace); the status reader watches HelmReleases by it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "magnum-gitops"

	// AnnotationClusterName carries the Magnum cluster name, which is no valid label value.
	AnnotationClusterName = "magnum.openstack.org/cluster-name"
	// AnnotationUpgradeTarget is on a HelmRelease (in Argo mode, an Application) that
	// deploys a step of a chained upgrade: the Kubernetes version (X.Y.Z) the chain goes on
	// to.
	AnnotationUpgradeTarget = "magnum.openstack.org/upgrade-target"
)

// Labels the openstack-cluster chart and the azimuth addon provider put on a cluster's
// objects, which the status reader selects by.
const (
	// LabelChartManagedBy is on every object the chart renders.
	LabelChartManagedBy = "capi.stackhpc.com/managed-by"
	// LabelChartCluster names the cluster (R) on the chart's objects.
	LabelChartCluster = "capi.stackhpc.com/cluster"
	// LabelChartNodeGroup and LabelChartComponent tell a worker Machine's node group.
	LabelChartNodeGroup = "capi.stackhpc.com/node-group"
	LabelChartComponent = "capi.stackhpc.com/component"
	// LabelAddonCluster names the cluster on the addon provider's objects.
	LabelAddonCluster = "addons.stackhpc.com/cluster"
)
