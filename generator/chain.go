package generator

import (
	"fmt"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"
)

// UpgradeStep is one step of a chained upgrade. Kubernetes moves one minor version at a
// time (kubeadm upgrades so, and the KubeadmControlPlane webhook refuses a skipped minor),
// so a cluster asked to run a version more than one minor ahead of what it runs is taken
// there through the minors between, each on an image of its own. Each step is committed
// once Cluster API has rolled out the one before (the reconciler's upgrade step).
type UpgradeStep struct {
	// From is the Kubernetes version deployed, To the one this step deploys, Target the
	// one the event asks for (X.Y.Z).
	From, To, Target string
	// Image is the image this step deploys, from the event's resolved.upgrade_images.
	Image v1alpha1.Image
}

// Remaining is how many steps follow this one.
func (s *UpgradeStep) Remaining() int {
	to, _ := parseKubeVersion(s.To)
	target, _ := parseKubeVersion(s.Target)
	return target.minor - to.minor
}

// String says where the step stands in its chain, for commit messages and logs.
func (s *UpgradeStep) String() string {
	return fmt.Sprintf("upgrade chain toward Kubernetes %s: this step %s → %s on image %s, %d more after it", s.Target, s.From, s.To, s.Image.ID, s.Remaining())
}

// RenderUpgradeStep renders the next step of an event whose Kubernetes version (res, as
// rendered) is more than one minor ahead of what dep deploys: the event with its image
// replaced by the newest image of the next minor in resolved.upgrade_images. It returns
// res and a nil step when no chain is needed (nothing deployed, a delete, a version within
// one minor, a downgrade, which CheckUpgrade refuses). Without an image for the next minor,
// the error names resolved.upgrade_images.
func RenderUpgradeStep(ev *v1alpha1.ClusterEvent, site *Site, res *Result, dep *Deployed) (*Result, *UpgradeStep, error) {
	if dep == nil || res == nil || res.Values == nil || ev.Operation == v1alpha1.DeleteCluster {
		return res, nil, nil
	}
	oldRaw, _ := valuesKubeVersions(dep.Values)
	newRaw, _ := valuesKubeVersions(res.Values)
	old, ok1 := parseKubeVersion(oldRaw)
	target, ok2 := parseKubeVersion(newRaw)
	if !ok1 || !ok2 || target.major != old.major || target.minor <= old.minor+1 {
		return res, nil, nil
	}
	img, ok := stepImage(ev, old.major, old.minor+1)
	if !ok {
		var p problems
		p.add("resolved.upgrade_images", "Kubernetes %s is %d minor versions ahead of the %s the cluster runs, and Kubernetes upgrades one minor version at a time: list an image of Kubernetes %d.%d (and of each minor up to %d.%d) to step through",
			target, target.minor-old.minor, old, old.major, old.minor+1, target.major, target.minor-1)
		return nil, nil, p.err()
	}
	step := *ev
	step.Resolved.Image = &img
	out, err := Render(&step, site)
	if err != nil {
		return nil, nil, err
	}
	to, _ := valuesKubeVersions(out.Values)
	if v, ok := parseKubeVersion(to); !ok || v.minor != old.minor+1 {
		// Something pins kubernetesVersion (a values overlay): the chain cannot move it.
		var p problems
		p.add("resolved.upgrade_images", "the step to image %s renders Kubernetes %s, not %d.%d: kubernetesVersion is set elsewhere (values_overlay?)", img.ID, to, old.major, old.minor+1)
		return nil, nil, p.err()
	}
	out.EventDigest = res.EventDigest
	out.markUpgradeTarget(target.String())
	return out, &UpgradeStep{From: old.String(), To: strings.TrimPrefix(to, "v"), Target: target.String(), Image: img}, nil
}

// stepImage is the newest image of Kubernetes major.minor in ev's upgrade images; among
// equals, one of the same os_distro as the event's image.
func stepImage(ev *v1alpha1.ClusterEvent, major, minor int) (v1alpha1.Image, bool) {
	var best v1alpha1.Image
	var bestV kubeVersion
	found := false
	distro := ""
	if ev.Resolved.Image != nil {
		distro = ev.Resolved.Image.OSDistro
	}
	for _, img := range ev.Resolved.UpgradeImages {
		v, ok := parseKubeVersion(img.KubeVersion)
		if !ok || v.major != major || v.minor != minor {
			continue
		}
		if img.OSDistro == "" && ev.Resolved.Image != nil {
			img.OSDistro = distro
		}
		if !found || bestV.less(v) || v == bestV && best.OSDistro != distro && img.OSDistro == distro {
			best, bestV, found = img, v, true
		}
	}
	return best, found
}

// checkUpgradeImages refuses upgrade images a step could not deploy, naming each by its
// index: a Glance UUID and a Kubernetes release, as resolved.image needs.
func (r *render) checkUpgradeImages() {
	for i, img := range r.ev.Resolved.UpgradeImages {
		at := func(f string) string { return fmt.Sprintf("resolved.upgrade_images[%d].%s", i, f) }
		if !magnum.IsUUIDLike(img.ID) {
			r.p.add(at("id"), "%q is not a Glance image UUID", img.ID)
		}
		if !isKubeVersion(strings.TrimLeft(img.KubeVersion, "v")) {
			r.p.add(at("kube_version"), "%q is not a Kubernetes release version (want vX.Y.Z)", img.KubeVersion)
		}
	}
}

// markUpgradeTarget annotates the object that deploys the chart, the HelmRelease or in Argo
// mode the Application, with the chain's target: the management cluster, and the next
// plan, read from it that a chain is under way. Both shapes of Application carry it on
// their metadata: one with a kustomize source (chart patches) has its values in the chart
// kustomization beside it, but the parent Application applies the Application itself, so
// that is where serve and the management cluster see the annotation.
func (res *Result) markUpgradeTarget(target string) {
	if app := res.Objects.Application; app != nil {
		a := app.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[magnum.AnnotationUpgradeTarget] = target
		app.SetAnnotations(a)
		return
	}
	hr := res.Objects.HelmRelease
	if hr.Annotations == nil {
		hr.Annotations = map[string]string{}
	}
	hr.Annotations[magnum.AnnotationUpgradeTarget] = target
}
