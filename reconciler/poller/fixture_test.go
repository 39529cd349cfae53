package poller_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/keystone"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv/magnumstandin"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
	"github.com/magnum-gitops/magnum-gitops/reconciler/poller"
)

func TestMain(m *testing.M) { keystone.Main(m) }

// The Magnum objects of the scripted sequence.
const (
	tmplV1    = "6c4f1e0a-8b7d-4c2e-9f3a-1b2c3d4e5f60" // selected (gitops=true), Kubernetes v1.33.7
	tmplV2    = "6c4f1e0a-8b7d-4c2e-9f3a-1b2c3d4e5f61" // selected, v1.33.8
	tmplOther = "6c4f1e0a-8b7d-4c2e-9f3a-1b2c3d4e5f62" // not selected
	prodA     = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03"
	prodB     = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c04"
	otherC    = "3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c05" // its template is not selected
	ownerID   = "0c7a4e2b9d8f4a1c8e6b5d4c3b2a1f0e"
)

// pollFixture is a real Keystone and Glance, stand-ins for Neutron, Cinder, Nova and Magnum
// in the Keystone catalog, and a real Git smart-HTTP remote: everything a polling service
// talks to.
type pollFixture struct {
	root      *testing.T // owns the services: they outlive the subtest that starts them
	ks        *keystone.Keystone
	magnum    *magnumstandin.Magnum
	cloud     *openstack.Cloud
	project   string
	git       *gitserver.Server
	repoURL   string
	caFile    string
	logs      *leakcheck.Buffer
	age       *age.X25519Identity // the repository's SOPS recipient, the same across restarts
	secrets   []string            // the secrets of every application credential made
	secretsMu sync.Mutex
	clock     int // seconds added to Magnum's updated_at on every change
}

func newPollFixture(t *testing.T) *pollFixture {
	for _, v := range []string{"OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "OS_AUTH_URL", "OS_REGION_NAME",
		"OS_INTERFACE", "OS_CACERT", "OS_CERT", "OS_KEY", "OS_INSECURE"} {
		t.Setenv(v, "")
	}
	ks := keystone.Start(t)
	glance := ks.StartGlance(t)
	region := ks.NewRegion(t)
	glance.Register(t, region)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	f := &pollFixture{root: t, ks: ks, logs: leakcheck.Log(t, "the poller's log"), age: id}
	var projectName string
	f.project, projectName = ks.CreateProject(t)
	user := ks.CreateUser(t, f.project, "member")

	// Glance is shared by the test binary: image names are unique per test.
	suffix := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	public := images.ImageVisibilityPublic
	image := func(kube string) string {
		name := "ubuntu-2404-kube-" + kube + "-" + suffix
		glance.CreateImage(t, images.CreateOpts{Name: name, Visibility: &public,
			Properties: map[string]string{"kube_version": kube, "os_distro": "ubuntu"}})
		return name
	}
	labels := map[string]string{"capi_helm_chart_version": "0.27.0", "gitops": "true"}
	data := magnumstandin.Data{Templates: []map[string]any{
		magnumstandin.TemplateDoc(tmplV1, "k8s-1.33.7", image("v1.33.7"), labels),
		magnumstandin.TemplateDoc(tmplV2, "k8s-1.33.8", image("v1.33.8"), labels),
		magnumstandin.TemplateDoc(tmplOther, "k8s-heat", image("v1.33.7-other"), map[string]string{"capi_helm_chart_version": "0.27.0"}),
	}}
	f.magnum = magnumstandin.StartMagnum(t, ks, data)
	neutron := magnumstandin.StartNeutron(t, ks, []magnumstandin.Network{
		{ID: "d1f02cfb-d27f-4068-9332-84d907cb0e2e", Name: "public", ProjectID: "admin", External: true}}, nil)
	cinder := magnumstandin.StartCinder(t, ks, []string{"__DEFAULT__", "ssd"})
	nova := magnumstandin.StartNova(t, ks, []magnumstandin.Flavor{
		{ID: "2", Name: "m1.medium", VCPUs: 2, RAM: 4096}, {ID: "3", Name: "m1.large", VCPUs: 4, RAM: 8192}})
	ks.RegisterService(t, region, "container-infra", "magnum", f.magnum.URL+"/v1")
	ks.RegisterService(t, region, "network", "neutron", neutron.URL)
	ks.RegisterService(t, region, "volumev3", "cinderv3", cinder.URL+"/v3/$(project_id)s")
	ks.RegisterService(t, region, "compute", "nova", nova.URL+"/v2.1")

	cloudsFile := filepath.Join(t.TempDir(), "clouds.yaml")
	doc, err := yaml.Marshal(clouds.Clouds{Clouds: map[string]clouds.Cloud{"test": {
		AuthInfo: &clouds.AuthInfo{AuthURL: ks.AuthURL, Username: user.Name, Password: user.Password,
			UserDomainID: user.DomainID, ProjectName: projectName, ProjectDomainID: user.DomainID},
		RegionName: region, IdentityAPIVersion: "3"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cloudsFile, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if f.cloud, err = openstack.Connect(t.Context(), openstack.Config{Cloud: "test", CloudsFile: cloudsFile}); err != nil {
		t.Fatal(err)
	}
	f.caFile = writeCA(t)
	f.git = gitserver.Start(t)
	f.repoURL = f.git.Init("clusters.git")
	return f
}

// writeCA writes a self-signed CA certificate: the cacert of the clusters' clouds.yaml.
func writeCA(t *testing.T) string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "poller-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tick is a new updated_at, later than every earlier one: Magnum saves the object.
func (f *pollFixture) tick() string {
	f.clock++
	return time.Date(2026, 2, 1, 10, 0, f.clock, 0, time.UTC).Format("2006-01-02T15:04:05+00:00")
}

// service is one run of the polling service: a fresh clone of the remote, the clusters
// read back from its records, a reconciler committing to it, and a poller. Several in a row
// are restarts.
type service struct {
	poller   *poller.Poller
	clusters *reconciler.Clusters
	cancel   context.CancelFunc
	done     chan struct{}
	// crash makes the process die in the pass: before its views reach the reconciler, or
	// once their events are pushed, before the poller hears of them.
	crash crashPoint
}

// crashPoint is where a pass dies.
type crashPoint int

const (
	noCrash crashPoint = iota
	crashBefore
	crashAfterPush
)

func (f *pollFixture) start(t *testing.T) *service {
	t.Helper()
	ctx := t.Context()
	repo, err := gitrepo.Open(ctx, gitrepo.Options{URL: f.repoURL,
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "magnum-gitops@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	clusters, bad, err := reconciler.LoadClusters(repo, generator.MustSite(cfg), time.Now())
	if err != nil || len(bad) > 0 {
		t.Fatalf("loading the clusters from git: %v %v", err, bad)
	}
	p := &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t, f.age),
		Resolvers: []reconciler.Resolver{openstack.NewResolver(f.cloud, openstack.ResolverOptions{}),
			openstack.CABundle{File: f.caFile}}}
	q := &reconciler.Reconciler{Pipeline: p, Sink: &reconciler.GitSink{Repo: repo}, Clusters: clusters}
	if _, err := q.ReadHistory(ctx); err != nil { // the event ids in Git, as serve reads them at start
		t.Fatal(err)
	}
	q.Start()
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &service{clusters: clusters, cancel: cancel, done: make(chan struct{})}
	go func() { q.Run(qctx); close(s.done) }()
	f.root.Cleanup(s.stop)

	client, err := openstack.NewMagnum(f.cloud)
	if err != nil {
		t.Fatal(err)
	}
	identity, err := f.cloud.Identity()
	if err != nil {
		t.Fatal(err)
	}
	creds := poller.ServiceCredentials(&openstack.AppCredentials{Identity: identity})
	selectTemplates, err := poller.SelectTemplates("gitops=true", "")
	if err != nil {
		t.Fatal(err)
	}
	s.poller = &poller.Poller{Magnum: client, Select: selectTemplates, Clusters: clusters,
		Converge: func(ctx context.Context, views []reconciler.MagnumView) [][]reconciler.Summary {
			var out [][]reconciler.Summary
			if s.crash != crashBefore {
				out = q.Converge(ctx, views)
			}
			if s.crash == noCrash {
				return out
			}
			out = make([][]reconciler.Summary, len(views))
			for i, v := range views {
				crashed := reconciler.NewSummary(nil, nil, errors.New("simulated crash"))
				crashed.ClusterUUID = v.Cluster.UUID
				out[i] = []reconciler.Summary{crashed}
			}
			return out
		},
		Credentials: func(ctx context.Context, c openstack.Cluster) (*v1alpha1.ApplicationCredential, error) {
			cred, err := creds(ctx, c)
			if err == nil {
				f.secretsMu.Lock()
				f.secrets = append(f.secrets, cred.Secret.Reveal())
				f.secretsMu.Unlock()
			}
			return cred, err
		},
		AuthURL: f.ks.AuthURL, AllProjects: true, PageSize: 2,
		Log: slog.New(slog.NewJSONHandler(f.logs, nil))}
	return s
}

func (s *service) stop() {
	s.cancel()
	<-s.done
}

// commit is what a test reads back from Git: the operation and event id trailers.
type commit struct{ op, id string }

// commits lists the remote's commits, oldest first.
func (f *pollFixture) commits(t *testing.T) []commit {
	t.Helper()
	dir := f.git.Dir("clusters.git")
	if strings.TrimSpace(f.git.Git(dir, "rev-list", "--all")) == "" {
		return nil
	}
	out := f.git.Git(dir, "log", "--reverse", "--format=%(trailers:key=Magnum-Operation,valueonly,separator=)%x09%(trailers:key=Magnum-Event-ID,valueonly,separator=)")
	var cs []commit
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		op, id, _ := strings.Cut(line, "\t")
		cs = append(cs, commit{op: op, id: id})
	}
	return cs
}

// show is a file at the remote's head ("" when absent).
// decrypted is a SOPS file of main decrypted with its age identity (sopsenc.Decrypt checks
// the MAC as Flux's sops library does), or "" when the file is not there.
func (f *pollFixture) decrypted(t *testing.T, path string) string {
	t.Helper()
	enc := f.show(t, path)
	if enc == "" {
		return ""
	}
	plain, err := sopsenc.Decrypt([]byte(enc), f.age.String())
	if err != nil {
		t.Fatalf("decrypting %s: %v", path, err)
	}
	return string(plain)
}

func (f *pollFixture) show(t *testing.T, path string) string {
	t.Helper()
	dir := f.git.Dir("clusters.git")
	if !strings.Contains(f.git.Git(dir, "ls-tree", "-r", "--name-only", "main"), path) {
		return ""
	}
	return f.git.Git(dir, "show", "main:"+path)
}

// encrypting is the SOPS policy serve has for the age identity id.
func encrypting(t testing.TB, id *age.X25519Identity) reconciler.SecretPolicy {
	t.Helper()
	enc, err := sopsenc.New(sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}, DigestKey: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return reconciler.SecretPolicy{Encrypter: enc}
}
