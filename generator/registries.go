package generator

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// RegistryValuesKey is the key of the registry credentials Secret that holds its values
// document, as Flux's valuesFrom reads it.
const RegistryValuesKey = "values.yaml"

// chartDefaultMirrors are the registries every chart up to 0.27.0 mirrors through
// quay.io/v2/azimuth by default; an air-gapped site drops them one by one.
var chartDefaultMirrors = []string{"docker.io", "ghcr.io", "nvcr.io", "quay.io", "registry.k8s.io"}

// registryHostRE is a registry as containerd's certs.d names it: host[:port], or _default.
var registryHostRE = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?|_default)$`)

// RegistriesConfig is the site's container registry setup for private and air-gapped
// clouds. Files are read by the caller (the generator does no I/O): trusted CAs into
// TrustedCAs, passwords into RegistryAuth.Password.
type RegistriesConfig struct {
	// MirrorSets maps a set name to registry → mirror URLs (containerd hosts.toml entries).
	MirrorSets map[string]map[string][]string `json:"mirror_sets,omitempty"`
	// DefaultMirrorSet applies to clusters without the registry_mirror_set label; empty
	// means none.
	DefaultMirrorSet string `json:"default_mirror_set,omitempty"`
	// DropChartMirrors removes the chart's default quay.io mirrors of every registry the
	// applied set does not name (all of them when no set applies).
	DropChartMirrors bool `json:"drop_chart_mirrors,omitempty"`
	// TrustedCAFiles maps a CA name to a PEM file the nodes trust (trustedCAs).
	TrustedCAFiles map[string]string `json:"trusted_ca_files,omitempty"`
	// Auth maps a registry host to its pull credentials. They reach the cluster only
	// through an encrypted Secret that the HelmRelease takes values from, never through
	// the HelmRelease itself.
	Auth map[string]RegistryAuth `json:"auth,omitempty"`
	// TrustedCAs are the PEM contents of TrustedCAFiles, filled by the caller.
	TrustedCAs map[string]string `json:"-"`
}

// RegistryAuth is one registry's credentials.
type RegistryAuth struct {
	Username     string `json:"username"`
	PasswordFile string `json:"password_file"`
	// Password is the content of PasswordFile, filled by the caller.
	Password v1alpha1.Sensitive `json:"-"`
}

func (c *RegistriesConfig) validate(p *problems, format string) {
	for name, set := range c.MirrorSets {
		field := "registries.mirror_sets." + name
		if magnum.SanitizedName(name) != name {
			p.add(field, "a mirror set name must be a lower-case DNS label")
		}
		for reg, mirrors := range set {
			if !registryHostRE.MatchString(reg) {
				p.add(field+"."+reg, "not a registry host[:port]")
			}
			if len(mirrors) == 0 {
				p.add(field+"."+reg, "lists no mirror")
			}
			for i, m := range mirrors {
				if u, err := url.Parse(m); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
					p.add(fmt.Sprintf("%s.%s[%d]", field, reg, i), "want an http(s) URL without credentials")
				}
			}
		}
	}
	if d := c.DefaultMirrorSet; d != "" {
		if _, ok := c.MirrorSets[d]; !ok {
			p.add("registries.default_mirror_set", "no mirror set named %q in registries.mirror_sets", d)
		}
	}
	for name := range c.TrustedCAFiles {
		if _, ok := c.TrustedCAs[name]; !ok {
			p.add("registries.trusted_ca_files."+name, "the file was not read")
		}
	}
	for name, pem := range c.TrustedCAs {
		if magnum.SanitizedName(name) != name {
			p.add("registries.trusted_ca_files."+name, "a CA name must be a lower-case DNS label (it names a file on every node)")
		}
		checkPEM(p, "registries.trusted_ca_files."+name, pem, pemCertificate...)
	}
	if len(c.Auth) > 0 && format == FormatArgo {
		p.add("registries.auth", "Argo CD Applications cannot take values from a Secret, so registry credentials would sit in clear in the Application: use format flux (valuesFrom an encrypted Secret)")
	}
	for reg, a := range c.Auth {
		field := "registries.auth." + reg
		if !registryHostRE.MatchString(reg) {
			p.add(field, "not a registry host[:port]")
		}
		// The chart writes both into TOML strings unescaped: a quote or backslash would
		// break every node's containerd configuration.
		if a.Username == "" || strings.ContainsAny(a.Username, "\"\\") || strings.ContainsFunc(a.Username, isControl) {
			p.add(field+".username", "required, without quotes, backslashes or control characters")
		}
		if pw := a.Password.Reveal(); pw == "" || strings.ContainsAny(pw, "\"\\") || strings.ContainsFunc(pw, isControl) {
			p.add(field+".password_file", "must hold a password without quotes, backslashes or control characters (the value is never shown)")
		}
	}
}

// registries renders the site's registry mirrors and trusted CAs. The chart's default
// mirrors (quay.io/v2/azimuth) stay unless drop_chart_mirrors says otherwise, in which case
// each one the set does not replace is nulled: Helm merges maps, so only a null removes a
// chart default.
func (r *render) registries(v map[string]any) {
	c := &r.cfg.Registries
	// Read first: on an adopted cluster not opted in, the label is reported held back too.
	set, field, ok := r.feature("registry_mirror_set")
	if !r.registriesOn() {
		return
	}
	if !ok {
		set, field = c.DefaultMirrorSet, "registries.default_mirror_set"
	}
	mirrors := map[string]any{}
	if set != "" {
		m, found := c.MirrorSets[set]
		if !found {
			names := make([]string, 0, len(c.MirrorSets))
			for n := range c.MirrorSets {
				names = append(names, n)
			}
			slices.Sort(names)
			r.p.add(field, "no mirror set named %q (registries.mirror_sets has: %s)", set, strings.Join(names, ", "))
			return
		}
		for reg, urls := range m {
			list := make([]any, len(urls))
			for i, u := range urls {
				list[i] = u
			}
			mirrors[reg] = list
		}
	}
	switch {
	case c.DropChartMirrors && len(mirrors) == 0:
		v["registryMirrors"] = nil
	case len(mirrors) > 0:
		if c.DropChartMirrors {
			for _, reg := range chartDefaultMirrors {
				if _, ok := mirrors[reg]; !ok {
					mirrors[reg] = nil
				}
			}
		}
		v["registryMirrors"] = mirrors
	}
	if len(c.TrustedCAs) > 0 {
		cas := map[string]any{}
		for name, pem := range c.TrustedCAs {
			cas[name] = pem
		}
		v["trustedCAs"] = cas
	}
	// The label reported itself (featureOn); what only the site's section sets is said here.
	if _, set := v["registryMirrors"]; set && !ok {
		r.deviate("registryMirrors", "the site's registries section sets it; magnum-capi-helm has no such feature")
	}
	if _, set := v["trustedCAs"]; set {
		r.deviate("trustedCAs", "the site's registries.trusted_ca_files set it; magnum-capi-helm has no such feature")
	}
}

// registriesOn reports whether the site's registries section (mirrors, trusted CAs,
// credentials) applies to this cluster: feature registries, held back on an adopted
// cluster like the registry_mirror_set label. The warning is given once.
func (r *render) registriesOn() bool {
	if r.featureAllowed("registries") {
		return true
	}
	c := &r.cfg.Registries
	if c.DefaultMirrorSet != "" || c.DropChartMirrors || len(c.TrustedCAs) > 0 || len(c.Auth) > 0 {
		if !r.adoption.warned["registries"] {
			r.adoption.warned["registries"] = true
			r.warn("registries: ignored: the cluster was created by %s and adopted, and feature registries is not in its %s label (applying it changes the machines that driver built)",
				r.ev.Adopted.Driver, adoptedFeaturesLabel)
		}
	}
	return false
}

// registrySecretName is the Secret holding the registryAuth values.
func (r *render) registrySecretName() string { return magnum.ResourceName(r.release, "registry-auth") }

// registrySecret holds the chart's registryAuth values document. It is one of the
// cluster's Secrets, so it reaches Git only SOPS-encrypted, and the HelmRelease reads it
// with valuesFrom: the credentials are never in the HelmRelease. Unlike the CA and
// credential Secrets it may be pruned with the cluster: nothing needs it once the
// HelmRelease is gone.
func (r *render) registrySecret(ns string) []*corev1.Secret {
	auth := r.cfg.Registries.Auth
	if !r.registriesOn() {
		return nil
	}
	if len(auth) == 0 || r.cfg.Format == FormatArgo {
		return nil
	}
	ra := map[string]any{}
	for reg, a := range auth {
		ra[reg] = map[string]any{"username": a.Username, "password": a.Password.Reveal()}
	}
	doc, err := yaml.Marshal(map[string]any{"registryAuth": ra})
	if err != nil {
		panic("generator: registry values: " + err.Error())
	}
	s := r.secret(ns, r.registrySecretName())
	delete(s.Annotations, PruneAnnotation)
	s.StringData = map[string]string{RegistryValuesKey: string(doc)}
	return []*corev1.Secret{s}
}

// valuesFrom points the HelmRelease at the registry credentials Secret, when there is one.
func (r *render) valuesFrom(string) []helmv2.ValuesReference {
	if len(r.cfg.Registries.Auth) == 0 || !r.registriesOn() {
		return nil
	}
	r.deviate("valuesFrom", "the site's registries.auth reaches the chart's registryAuth through Secret %s; magnum-capi-helm has no such feature", r.registrySecretName())
	return []helmv2.ValuesReference{{Kind: "Secret", Name: r.registrySecretName(), ValuesKey: RegistryValuesKey}}
}
