package generator

import (
	"cmp"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/magnum"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations and types of the Secrets.
const (
	// PruneAnnotation keeps Flux from deleting a Secret when it leaves Git: CAPO and the
	// janitor need the credentials until the CAPI Cluster is gone.
	PruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
	// SecretTypeCAPI is the type CAPI gives its certificate Secrets.
	SecretTypeCAPI corev1.SecretType = "cluster.x-k8s.io/secret"
)

// objectLabels are the labels the driver puts on everything it writes, plus ours on objects
// the driver does not write (docs/driver-rules.md, "Naming").
func (r *render) objectLabels(ours bool) map[string]string {
	cut := func(s string) string {
		if len(s) > magnum.MaxNameLen {
			return s[:magnum.MaxNameLen]
		}
		return s
	}
	l := map[string]string{
		magnum.LabelProjectID:   cut(r.ev.Cluster.ProjectID),
		magnum.LabelUserID:      cut(r.ev.Cluster.UserID),
		magnum.LabelClusterUUID: cut(r.ev.Cluster.UUID),
		magnum.LabelClusterName: r.release,
	}
	if ours {
		l[magnum.LabelManagedBy] = magnum.ManagedBy
	}
	return l
}

// SecretSuffixes are the suffixes of every Secret name the generator writes (R-<suffix>):
// what a delete removes from the management cluster when Git no longer says which of
// them a cluster had.
var SecretSuffixes = []string{"ca", "etcd", "proxy", "sa", "cloud-credentials", "registry-auth"}

// certSecrets maps each Magnum certificate to the Secret CAPI adopts instead of generating
// its own CA, in the driver's order.
var certSecrets = []struct {
	suffix string
	field  string
	pick   func(*v1alpha1.Certificates) *v1alpha1.KeyPair
}{
	{"ca", "ca", func(c *v1alpha1.Certificates) *v1alpha1.KeyPair { return c.CA }},
	{"etcd", "etcd", func(c *v1alpha1.Certificates) *v1alpha1.KeyPair { return c.Etcd }},
	{"proxy", "front_proxy", func(c *v1alpha1.Certificates) *v1alpha1.KeyPair { return c.FrontProxy }},
	{"sa", "magnum_client", func(c *v1alpha1.Certificates) *v1alpha1.KeyPair { return c.MagnumClient }},
}

// secrets builds the Secrets the event carries material for: R-cloud-credentials and the
// four certificate Secrets, named as the driver names them.
func (r *render) secrets(ns string) []*corev1.Secret {
	m := r.ev.Secrets
	if m == nil {
		return nil
	}
	var out []*corev1.Secret
	if m.ApplicationCredential != nil {
		if s := r.cloudCredentials(ns, m); s != nil {
			out = append(out, s)
		}
	}
	if m.Certificates != nil {
		for _, c := range certSecrets {
			kp := c.pick(m.Certificates)
			if kp == nil {
				continue
			}
			field := "secrets.certificates." + c.field
			checkPEM(&r.p, field+".cert", kp.Cert, pemCertificate...)
			checkPEM(&r.p, field+".key", kp.Key.Reveal(), pemPrivateKey...)
			s := r.secret(ns, magnum.ResourceName(r.release, c.suffix))
			s.Type = SecretTypeCAPI
			s.StringData = map[string]string{"tls.crt": kp.Cert, "tls.key": kp.Key.Reveal()}
			out = append(out, s)
		}
	}
	return out
}

// secret starts a Secret that the GitOps tool must not delete when it leaves Git: Flux's
// prune annotation, or for Argo CD Prune=false and an earlier sync wave than the Application.
func (r *render) secret(ns, name string) *corev1.Secret {
	ann := map[string]string{PruneAnnotation: "disabled"}
	if r.cfg.Format == FormatArgo {
		ann = map[string]string{argoSyncOptions: "Prune=false", argoSyncWave: "-1"}
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   ns,
			Labels:      r.objectLabels(false),
			Annotations: ann,
		},
	}
}

// cloudCredentials is the driver's app-cred Secret (docs/driver-rules.md, "Secrets"): an
// Opaque Secret with clouds.yaml (cloud "openstack", which the chart hard-codes) and cacert.
func (r *render) cloudCredentials(ns string, m *v1alpha1.SecretMaterial) *corev1.Secret {
	ac := m.ApplicationCredential
	if ac.ID == "" {
		r.p.add("secrets.application_credential.id", "required")
	}
	if ac.Secret == "" {
		r.p.add("secrets.application_credential.secret", "required")
	}
	authURL := r.ev.Resolved.KeystonePublicURL
	if authURL == "" {
		r.p.add("resolved.keystone_public_url", "required to write clouds.yaml (the public identity endpoint)")
	}
	region := cmp.Or(r.ev.Resolved.RegionName, r.cfg.Magnum.CinderClient.RegionName)
	if region == "" {
		r.p.add("resolved.region_name", "required to write clouds.yaml (or set magnum.cinder_client.region_name)")
	}
	if m.CABundle == "" {
		r.p.add("secrets.ca_bundle", "required: CAPO trusts no CA of its own (the driver sends [drivers] openstack_ca_file or the certifi bundle)")
	} else {
		checkPEM(&r.p, "secrets.ca_bundle", m.CABundle.Reveal(), pemCertificate...)
	}
	doc, err := marshalYAML(newCloudsYAML(ac.ID, ac.Secret.Reveal(), authURL, r.cfg.Magnum.CapiHelm.AppCredInterfaceType,
		region, r.cfg.Magnum.Drivers.VerifyCA))
	if err != nil {
		panic("generator: clouds.yaml: " + err.Error())
	}
	s := r.secret(ns, magnum.ResourceName(r.release, "cloud-credentials"))
	s.StringData = map[string]string{"cacert": m.CABundle.Reveal(), "clouds.yaml": string(doc)}
	return s
}

// cloudsYAML is the clouds.yaml of the cloud-credentials Secret. It is a struct rather than
// nested maps because it is serialised on every render, and encoding/json writes a struct
// without reflecting over and sorting map keys; the YAML is the same, as YAML keys are
// sorted either way (TestCloudsYAML).
type cloudsYAML struct {
	Clouds struct {
		OpenStack cloudYAML `json:"openstack"`
	} `json:"clouds"`
}

// cloudYAML is the cloud "openstack" of clouds.yaml.
type cloudYAML struct {
	Auth struct {
		ApplicationCredentialID     string `json:"application_credential_id"`
		ApplicationCredentialSecret string `json:"application_credential_secret"`
		AuthURL                     string `json:"auth_url"`
	} `json:"auth"`
	AuthType           string `json:"auth_type"`
	IdentityAPIVersion int    `json:"identity_api_version"`
	Interface          string `json:"interface"`
	RegionName         string `json:"region_name"`
	Verify             bool   `json:"verify"`
}

// newCloudsYAML fills clouds.yaml for an application credential.
func newCloudsYAML(id, secret, authURL, iface, region string, verify bool) *cloudsYAML {
	c := &cloudsYAML{}
	o := &c.Clouds.OpenStack
	o.Auth.ApplicationCredentialID = id
	o.Auth.ApplicationCredentialSecret = secret
	o.Auth.AuthURL = authURL
	o.AuthType = "v3applicationcredential"
	o.IdentityAPIVersion = 3
	o.Interface = iface
	o.RegionName = region
	o.Verify = verify
	return c
}
