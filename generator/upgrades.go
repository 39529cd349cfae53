package generator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
)

// maxKubeletSkew is how many minor versions a kubelet may lag kube-apiserver (Kubernetes'
// version skew policy since 1.28); a kubelet newer than the apiserver is never allowed.
const maxKubeletSkew = 3

// kubeVersion is a parsed X.Y.Z Kubernetes version.
type kubeVersion struct{ major, minor, patch int }

func parseKubeVersion(s string) (kubeVersion, bool) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".")
	if len(parts) != 3 {
		return kubeVersion{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 {
			return kubeVersion{}, false
		}
		n[i] = x
	}
	return kubeVersion{n[0], n[1], n[2]}, true
}

func (k kubeVersion) String() string { return fmt.Sprintf("%d.%d.%d", k.major, k.minor, k.patch) }

func (k kubeVersion) less(o kubeVersion) bool {
	if k.major != o.major {
		return k.major < o.major
	}
	if k.minor != o.minor {
		return k.minor < o.minor
	}
	return k.patch < o.patch
}

// KubernetesVersion is the control plane's Kubernetes version (X.Y.Z) that chart values
// deploy, "" when they name none: the version upgrades are judged by.
func KubernetesVersion(values map[string]any) string {
	cp, _ := valuesKubeVersions(values)
	return strings.TrimPrefix(strings.TrimSpace(cp), "v")
}

// valuesKubeVersions returns the control plane's Kubernetes version in chart values, and
// each node group's by name, applying the chart's per-role overrides.
func valuesKubeVersions(v map[string]any) (string, map[string]string) {
	global, _ := v["kubernetesVersion"].(string)
	cp := global
	if m, ok := v["controlPlane"].(map[string]any); ok {
		if s, ok := m["kubernetesVersion"].(string); ok && s != "" {
			cp = s
		}
	}
	def := global
	if m, ok := v["nodeGroupDefaults"].(map[string]any); ok {
		if s, ok := m["kubernetesVersion"].(string); ok && s != "" {
			def = s
		}
	}
	groups := map[string]string{}
	list, _ := v["nodeGroups"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		ver := def
		if s, ok := m["kubernetesVersion"].(string); ok && s != "" {
			ver = s
		}
		groups[name] = ver
	}
	return cp, groups
}

// checkNodeGroupSkew refuses node groups that would run a kubelet newer than the control
// plane, or more than maxKubeletSkew minors older. Groups follow kubernetesVersion unless
// something (a values overlay) pins them, so only such pins can trip it.
func (r *render) checkNodeGroupSkew(v map[string]any) {
	cpRaw, groups := valuesKubeVersions(v)
	cp, ok := parseKubeVersion(cpRaw)
	if !ok {
		return // kubernetesVersion is checked, and reported, on its own
	}
	list, _ := v["nodeGroups"].([]any)
	for i, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["name"].(string)
		ng, ok := parseKubeVersion(groups[name])
		// The field is named only for a problem: most renders have none.
		field := func() string { return fmt.Sprintf("values.nodeGroups[%d].kubernetesVersion", i) }
		switch {
		case !ok:
			r.p.add(field(), "%q is not a Kubernetes version", groups[name])
		case ng.major != cp.major || cp.less(ng) && ng.minor != cp.minor:
			r.p.add(field(), "node group %s would run Kubernetes %s, newer than the control plane's %s: a kubelet may never be newer than kube-apiserver", name, ng, cp)
		case cp.minor-ng.minor > maxKubeletSkew:
			r.p.add(field(), "node group %s would run Kubernetes %s, %d minor versions behind the control plane's %s: Kubernetes allows %d", name, ng, cp.minor-ng.minor, cp, maxKubeletSkew)
		}
	}
}

// Deployed is what the repository deploys for a cluster today, read from its HelmRelease
// (or Argo CD Application) by the caller: the generator itself does no I/O.
type Deployed struct {
	// ChartVersion is the chart version the cluster runs ("" when unknown), for the record.
	ChartVersion string
	// Values are the deployed chart values (kubernetesVersion and node group overrides).
	Values map[string]any
}

// CheckUpgrade refuses a render that would move a cluster in a way Kubernetes, kubeadm
// and Cluster API do not support, compared with what is deployed: Kubernetes never moves
// backwards (patch releases included), nor to another major version. A move of more than
// one minor version forward is a chained upgrade (RenderUpgradeStep), rendered one step at
// a time before this check.
//
// The chart's own guard (never older than what is deployed, outside upgrade_cluster) is the
// reconciler's checkDowngrade.
//
// Both messages name the versions. A delete, or a cluster with nothing deployed, passes.
func CheckUpgrade(ev *v1alpha1.ClusterEvent, res *Result, dep *Deployed) error {
	if dep == nil || res == nil || res.Values == nil || ev.Operation == v1alpha1.DeleteCluster {
		return nil
	}
	var p problems
	oldRaw, _ := valuesKubeVersions(dep.Values)
	newRaw, _ := valuesKubeVersions(res.Values)
	old, ok1 := parseKubeVersion(oldRaw)
	now, ok2 := parseKubeVersion(newRaw)
	if ok1 && ok2 {
		field := "resolved.image.kube_version"
		switch {
		case now.less(old):
			p.add(field, "Kubernetes %s is older than the %s the cluster runs: Kubernetes is never downgraded (pick an image of %s or newer)", now, old, old)
		case now.major != old.major:
			p.add(field, "Kubernetes %s is another major version than the %s the cluster runs: kubeadm cannot upgrade across major versions", now, old)
		case now.minor > old.minor+1:
			p.add(field, "Kubernetes %s skips a minor version from the %s the cluster runs: upgrade one minor version at a time (first to %d.%d)", now, old, old.major, old.minor+1)
		}
	}
	return p.err()
}
