package generator

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Audit logging: where the policy and the log live on control-plane nodes.
const (
	auditPolicyPath = "/etc/kubernetes/audit-policy.yaml"
	auditLogDir     = "/var/log/kubernetes/audit"
)

// auditPolicy records request metadata (who did what to which object, never bodies, which
// would hold Secret values), and nothing for the read-only, high-volume health and
// discovery endpoints.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: None
    nonResourceURLs:
      - /healthz*
      - /livez*
      - /readyz*
      - /version
  - level: Metadata
`

// apiServerOptions renders the kube-apiserver options VEXXHOST's driver offers as labels:
// extra certificate SANs, TLS cipher suites and audit logging. Every chart merges
// controlPlane.kubeadmConfigSpec into the KubeadmControlPlane (maps merge, lists
// concatenate), so these work on every chart version. Changing them rolls the control plane.
func (r *render) apiServerOptions(v map[string]any) {
	apiServer := map[string]any{}
	extraArgs := map[string]any{}
	var files []any

	if raw, field, ok := r.feature("api_server_cert_sans"); ok {
		var sans []any
		for _, s := range featureList(raw) {
			if _, err := netip.ParseAddr(s); err != nil && len(validation.IsDNS1123Subdomain(strings.ToLower(s))) > 0 {
				r.p.add(field, "%q is neither an IP address nor a DNS name", s)
				continue
			}
			sans = append(sans, s)
		}
		if len(sans) > 0 {
			apiServer["certSANs"] = sans
		}
	}
	if raw, field, ok := r.feature("api_server_tls_cipher_suites"); ok {
		known := map[string]bool{}
		for _, c := range tls.CipherSuites() {
			known[c.Name] = true
		}
		var suites []string
		for _, s := range featureList(raw) {
			if !known[s] {
				r.p.add(field, "%q is not a secure TLS cipher suite Go knows (e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)", s)
				continue
			}
			suites = append(suites, s)
		}
		if len(suites) > 0 {
			extraArgs["tls-cipher-suites"] = strings.Join(suites, ",")
		}
	}
	if r.auditLog(extraArgs, apiServer) {
		files = append(files, map[string]any{
			"path":        auditPolicyPath,
			"content":     auditPolicy,
			"owner":       "root:root",
			"permissions": "0600",
		})
	}
	if len(extraArgs) > 0 {
		apiServer["extraArgs"] = extraArgs
	}
	if len(apiServer) == 0 && len(files) == 0 {
		return
	}
	spec := section(v, "controlPlane", "kubeadmConfigSpec")
	if len(apiServer) > 0 {
		section(spec, "clusterConfiguration")["apiServer"] = apiServer
	}
	if len(files) > 0 {
		spec["files"] = files
	}
}

// auditLog adds the audit flags and volumes when audit_log_enabled is true, and reports
// whether it did.
func (r *render) auditLog(extraArgs, apiServer map[string]any) bool {
	raw, field, ok := r.feature("audit_log_enabled")
	if !ok {
		for _, k := range []string{"audit_log_max_age", "audit_log_max_backup", "audit_log_max_size"} {
			if _, f, set := r.feature(k); set {
				r.p.add(f, "has no effect without audit_log_enabled=true")
			}
		}
		return false
	}
	on, valid := parseBool(raw)
	if !valid {
		r.p.add(field, "want true or false, got %q", raw)
		return false
	}
	if !on {
		return false
	}
	limits := []struct {
		label, flag string
		def, max    int
	}{
		{"audit_log_max_age", "audit-log-maxage", 30, 3650},
		{"audit_log_max_backup", "audit-log-maxbackup", 10, 1000},
		{"audit_log_max_size", "audit-log-maxsize", 100, 100000},
	}
	for _, l := range limits {
		n := l.def
		if raw, f, set := r.feature(l.label); set {
			if x, ok := r.featureInt(f, raw, 1, l.max); ok {
				n = x
			}
		}
		extraArgs[l.flag] = fmt.Sprint(n)
	}
	extraArgs["audit-policy-file"] = auditPolicyPath
	extraArgs["audit-log-path"] = auditLogDir + "/audit.log"
	apiServer["extraVolumes"] = []any{
		map[string]any{"name": "audit-policy", "hostPath": auditPolicyPath, "mountPath": auditPolicyPath,
			"readOnly": true, "pathType": "File"},
		map[string]any{"name": "audit-logs", "hostPath": auditLogDir, "mountPath": auditLogDir,
			"pathType": "DirectoryOrCreate"},
	}
	return true
}
