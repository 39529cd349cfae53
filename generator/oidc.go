package generator

import (
	"net/url"
	"strings"
)

// oidcLabels maps each OIDC label (VEXXHOST's names) to its key under the chart's oidc.
var oidcLabels = []struct{ label, key string }{
	{"oidc_issuer_url", "issuerUrl"},
	{"oidc_client_id", "clientId"},
	{"oidc_username_claim", "usernameClaim"},
	{"oidc_username_prefix", "usernamePrefix"},
	{"oidc_groups_claim", "groupsClaim"},
	{"oidc_groups_prefix", "groupsPrefix"},
}

// oidc turns the oidc_* labels into the chart's oidc values, which become the
// kube-apiserver's --oidc-* flags on the KubeadmControlPlane. Labels left unset keep the
// chart's defaults (claims sub and groups, prefixes "oidc:"). The issuer is checked the
// way kube-apiserver checks it (an https URL without query or fragment), so a typo fails
// here instead of in a control plane that never comes up.
func (r *render) oidc(v map[string]any) {
	vals := map[string]any{}
	fields := map[string]string{}
	for _, l := range oidcLabels {
		val, field, ok := r.feature(l.label)
		if !ok {
			continue
		}
		fields[l.label] = field
		if l.label != "oidc_issuer_url" && strings.ContainsFunc(val, isSpaceRune) {
			r.p.add(field, "must not contain spaces")
			continue
		}
		vals[l.key] = val
	}
	if len(fields) == 0 {
		return
	}
	issuer, hasIssuer := vals["issuerUrl"].(string)
	if !hasIssuer {
		for _, l := range oidcLabels {
			if f, ok := fields[l.label]; ok {
				r.p.add(f, "needs oidc_issuer_url: the chart configures OIDC only with an issuer")
			}
		}
		return
	}
	if msg := checkIssuer(issuer); msg != "" {
		r.p.add(fields["oidc_issuer_url"], "%s", msg)
	}
	if _, ok := vals["clientId"]; !ok {
		r.p.add(fields["oidc_issuer_url"], "needs oidc_client_id (the audience kube-apiserver checks tokens against)")
	}
	if !r.needChart(fields["oidc_issuer_url"], "oidc values", oidcSince) {
		return
	}
	v["oidc"] = vals
}

// checkIssuer says what is wrong with an OIDC issuer URL for kube-apiserver, or "".
func checkIssuer(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "is not a URL"
	case u.Scheme != "https":
		return "must be an https:// URL (kube-apiserver accepts no other scheme)"
	case u.Host == "" || u.Hostname() == "":
		return "has no host"
	case u.User != nil:
		return "must not contain credentials"
	case u.RawQuery != "" || u.Fragment != "" || strings.Contains(s, "#") || strings.Contains(s, "?"):
		return "must not have a query or fragment (it must match the token's iss claim exactly)"
	case strings.ContainsFunc(s, isSpaceRune):
		return "must not contain spaces"
	}
	return ""
}

func isSpaceRune(c rune) bool { return c == ' ' || c == '\t' }
