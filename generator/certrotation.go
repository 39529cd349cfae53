package generator

// Bounds of certificates_expiry_days: the KubeadmControlPlane webhook refuses fewer than 7
// days, and kubeadm's certificates live a year, so 365 or more would roll the control plane
// on every reconcile.
const (
	minCertificatesExpiryDays = 7
	maxCertificatesExpiryDays = 364
)

// certificateRotation makes Cluster API roll control-plane machines before their
// certificates expire (KCP spec.rolloutBefore.certificatesExpiryDays), as VEXXHOST's driver
// does. The chart has a value for it only after 0.27.0; for older charts the same field is
// set by a post-renderer patch on the KubeadmControlPlane. For the newest chart (no pinned
// version) both are written: the value where the chart knows it, the patch where it does
// not, with the same result.
func (r *render) certificateRotation(v map[string]any) {
	raw, field, ok := r.feature("certificates_expiry_days")
	if !ok {
		return
	}
	days, ok := r.featureInt(field, raw, minCertificatesExpiryDays, maxCertificatesExpiryDays)
	if !ok {
		return
	}
	hasValue := r.chart.atLeast(certificatesExpiryValueSince)
	if hasValue {
		section(v, "controlPlane")["certificatesExpiryDays"] = days
	}
	if !hasValue || (r.chart.Version == "" && r.cfg.Format != FormatArgo) {
		r.postRender(field, "certificates_expiry_days", controlPlaneGroup, "KubeadmControlPlane", r.controlPlaneName(),
			map[string]any{"spec": map[string]any{"rolloutBefore": map[string]any{"certificatesExpiryDays": days}}})
	}
}
