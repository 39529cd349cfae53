//go:build e2e

package e2e

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// The Cluster API release hack/capi.sh builds: core, kubeadm bootstrap, kubeadm control
// plane and CAPD, whose in-memory backend fakes each workload cluster's machines, etcd
// members, API server and nodes well enough for the real controllers to reach Available.
const capiVersion = "v1.14.2"

// capiProvider is one Cluster API manager with the CRDs and webhooks of its config/.
type capiProvider struct {
	name   string // binary and config/ directory in hack/capi.sh's cache
	groups []string
	env    []string
	// webhookPort serves the provider's admission webhooks and CRD conversion; chosen per
	// harness and written into the CRDs and webhook configurations as a URL, as envtest
	// does for one in-process server.
	webhookPort int
}

func capiProviders() []*capiProvider {
	return []*capiProvider{
		{name: "capi-core", groups: []string{"cluster.x-k8s.io", "addons.cluster.x-k8s.io", "ipam.cluster.x-k8s.io", "runtime.cluster.x-k8s.io"}},
		{name: "capi-cabpk", groups: []string{"bootstrap.cluster.x-k8s.io"}},
		{name: "capi-kcp", groups: []string{"controlplane.cluster.x-k8s.io"}},
		// POD_IP is the host the in-memory backend writes into Cluster.spec.controlPlaneEndpoint
		// and into the serving certificate of each fake workload API server.
		{name: "capd", groups: []string{"infrastructure.cluster.x-k8s.io"}, env: []string{"POD_IP=127.0.0.1"}},
	}
}

// configDir is where hack/capi.sh keeps a provider's CRDs and webhook configuration.
func (p *capiProvider) configDir(capiBin string) string {
	return filepath.Join(capiBin, "config", strings.TrimPrefix(p.name, "capi-"))
}

// capiCluster is the Cluster API part of a harness.
type capiCluster struct {
	bin       string // hack/capi.sh's cache
	providers []*capiProvider
	pki       string // ca.crt, and tls.{crt,key} served by every manager's webhooks
	caPEM     []byte
}

// findCAPI locates hack/capi.sh's cache (CAPI_BIN, or the default place).
func findCAPI(h *harness) string {
	dir := os.Getenv("CAPI_BIN")
	if dir == "" {
		dir = filepath.Join(cacheHome(), "magnum-gitops", "capi", capiVersion)
	}
	for _, f := range []string{"capi-core", "capi-cabpk", "capi-kcp", "capd", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(dir, "bin", f)); err != nil {
			unavailable(h.t, "%s is missing in CAPI_BIN=%q: run hack/capi.sh", f, dir)
		}
	}
	if !inPrivateNetwork() && !h.hostNetwork {
		unavailable(h.t, "the Cluster API tests need a network namespace of their own (run as root, without E2E_NETNS=0)")
	}
	return dir
}

// prepareCAPI picks the webhook ports and makes the PKI, before the API server starts:
// the CRDs it installs name their conversion webhooks by URL.
func (h *harness) prepareCAPI() {
	t := h.t
	c := &capiCluster{bin: findCAPI(h), providers: capiProviders(), pki: filepath.Join(h.work, "capi-pki")}
	for _, p := range c.providers {
		_, port, _ := net.SplitHostPort(freeAddr(t))
		p.webhookPort, _ = strconv.Atoi(port)
	}
	var err error
	if c.caPEM, err = writeWebhookPKI(c.pki); err != nil {
		t.Fatalf("webhook certificates: %v", err)
	}
	h.capi = c
}

// crds reads the providers' CRDs as clusterctl would install them: labelled with the
// contract versions they implement (core finds a provider's version of the contract by
// these labels), and converting between their versions through the provider's webhook.
func (c *capiCluster) crds() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range c.providers {
		files, _ := filepath.Glob(filepath.Join(p.configDir(c.bin), "crd", "*.yaml"))
		if len(files) == 0 {
			return nil, fmt.Errorf("no CRDs in %s", p.configDir(c.bin))
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(data, crd); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			labels := crd.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for _, v := range crd.Spec.Versions {
				if v.Served && (v.Name == "v1beta1" || v.Name == "v1beta2") {
					labels["cluster.x-k8s.io/"+v.Name] = v.Name
				}
			}
			crd.SetLabels(labels)
			if len(crd.Spec.Versions) > 1 {
				url := fmt.Sprintf("https://127.0.0.1:%d/convert", p.webhookPort)
				crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
					Strategy: apiextensionsv1.WebhookConverter,
					Webhook: &apiextensionsv1.WebhookConversion{
						ConversionReviewVersions: []string{"v1"},
						ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: &url, CABundle: c.caPEM},
					},
				}
			}
			out = append(out, crd)
		}
	}
	return out, nil
}

// installCAPICRDs installs the providers' CRDs as they are, after the API server started:
// envtest's own installer would drop the conversion webhooks of every kind its scheme does
// not know as convertible (none of Cluster API's), and every v1beta1 object the chart
// writes would then reach the v1beta2 admission webhooks unconverted.
func (h *harness) installCAPICRDs(cfg *rest.Config) {
	t := h.t
	crds, err := h.capi.crds()
	if err != nil {
		t.Fatalf("Cluster API CRDs: %v", err)
	}
	cs, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if _, err := api.Create(h.ctx, crd, metav1.CreateOptions{FieldManager: "magnum-gitops-e2e"}); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
	}
	for _, crd := range crds {
		h.waitFor("CRD "+crd.Name+" Established", time.Minute, func() (bool, string) {
			got, err := api.Get(h.ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, ""
				}
			}
			return false, "not Established"
		})
	}
}

// provides reports whether a CRD of testenv's set is replaced by the real providers'
// (Cluster API's own groups; CAPO's and the addon provider's CRDs stay).
func (c *capiCluster) provides(group, kind string) bool {
	for _, p := range c.providers {
		for _, g := range p.groups {
			if g == group && (g != "infrastructure.cluster.x-k8s.io" || strings.HasPrefix(kind, "Dev") || strings.HasPrefix(kind, "Docker")) {
				return true
			}
		}
	}
	return false
}

// startCAPI starts the garbage collector and the four managers, waits for them, and then
// registers their admission webhooks.
func (h *harness) startCAPI() {
	t := h.t
	c := h.capi
	bin := func(name string) string { return filepath.Join(c.bin, "bin", name) }
	env := append(os.Environ(), "HOME="+h.work)

	// kube-apiserver has no garbage collector: without it the templates CAPI hands to the
	// Cluster and the Secrets KCP owns outlive a deleted cluster.
	kcmCerts := filepath.Join(h.work, "kcm-certs")
	kcm := h.startProcess("kube-controller-manager", bin("kube-controller-manager"), []string{
		"--kubeconfig=" + h.kubeconfig, "--controllers=garbagecollector,namespace", "--leader-elect=false",
		"--authentication-skip-lookup", "--bind-address=127.0.0.1", "--secure-port=" + portOf(t, freeAddr(t)),
		"--cert-dir=" + kcmCerts, "--v=1"}, env)

	for _, p := range c.providers {
		health := freeAddr(t)
		args := []string{"--kubeconfig=" + h.kubeconfig, "--webhook-cert-dir=" + c.pki,
			"--webhook-port=" + strconv.Itoa(p.webhookPort), "--health-addr=" + health,
			"--diagnostics-address=" + freeAddr(t), "--insecure-diagnostics", "--v=2"}
		proc := h.startProcess(p.name, bin(p.name), args, append(env, p.env...))
		h.waitHTTP(proc, "http://"+health+"/readyz", 2*time.Minute)
	}
	select {
	case <-kcm.done:
		t.Fatalf("kube-controller-manager exited: %v\n%s", kcm.err, tail(kcm.log, 50))
	default:
	}
	for _, p := range c.providers {
		if err := h.applyWebhooks(p); err != nil {
			t.Fatalf("%s webhooks: %v", p.name, err)
		}
	}
}

// applyWebhooks registers a provider's webhook configurations, pointed at its port by URL;
// every provider calls its own mutating-webhook-configuration, so the name is prefixed.
func (h *harness) applyWebhooks(p *capiProvider) error {
	data, err := os.ReadFile(filepath.Join(p.configDir(h.capi.bin), "webhook.yaml"))
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetName(p.name + "-" + u.GetName())
		hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
		for i, w := range hooks {
			m := w.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			m["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", p.webhookPort, path),
				"caBundle": base64.StdEncoding.EncodeToString(h.capi.caPEM),
			}
			hooks[i] = m
		}
		if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
			return err
		}
		if err := h.c.Create(h.ctx, u); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
}

// capiPostRenderers are the site post-renderers (flux.post_renderers) of
// fixtures/postrenderers/capd-inmemory.yaml, which put the chart's clusters on CAPD's
// in-memory backend, with each simulated VM taking startup to come up (its node, API server
// and etcd member a third of that each).
func capiPostRenderers(t *testing.T, startup time.Duration) []any {
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "fixtures", "postrenderers", "capd-inmemory.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.NewReplacer(`startupDuration: "3s"`, fmt.Sprintf("startupDuration: %q", startup),
		`startupDuration: "1s"`, fmt.Sprintf("startupDuration: %q", startup/3)).Replace(string(data))
	var prs []any
	if err := yaml.Unmarshal([]byte(doc), &prs); err != nil {
		t.Fatal(err)
	}
	return prs
}

// writeWebhookPKI writes a CA and a serving certificate for 127.0.0.1 (tls.crt, tls.key,
// as controller-runtime's webhook server reads them) and returns the CA in PEM.
func writeWebhookPKI(dir string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "magnum-gitops e2e webhook CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for name, data := range map[string][]byte{
		"ca.crt":  caPEM,
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	return caPEM, nil
}

// portOf is the port of a host:port address.
func portOf(t interface{ Fatal(...any) }, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// processUsage is one process's CPU time and peak resident memory, from /proc.
type processUsage struct {
	name    string
	cpu     time.Duration
	peakRSS int64 // bytes (VmHWM)
}

// usage reads the CPU time (user + system) and peak RSS of every process the harness
// started, and of the API server and etcd envtest started; a process that exited reads
// as zero.
func (h *harness) usage() []processUsage {
	var out []processUsage
	add := func(name string, pid int) {
		u := processUsage{name: name}
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// The fields after the command (which may hold spaces) start after the last ')'.
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) > 12 { // f[0] is field 3 of proc(5) (state): utime is 14, stime 15
				ut, _ := strconv.ParseInt(f[11], 10, 64)
				st, _ := strconv.ParseInt(f[12], 10, 64)
				u.cpu = time.Duration(ut+st) * time.Second / 100 // USER_HZ
			}
		}
		if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
			for _, line := range strings.Split(string(status), "\n") {
				if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
					u.peakRSS = n * 1024
				}
			}
		}
		out = append(out, u)
	}
	known := map[int]bool{}
	for _, p := range h.procs {
		add(p.name, p.cmd.Process.Pid)
		known[p.cmd.Process.Pid] = true
	}
	// envtest's kube-apiserver and etcd: the other children of this process.
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || known[pid] {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(string(stat[end+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			add(string(stat[open+1:end]), pid)
		}
	}
	return out
}

// logUsage logs usage() as a table.
func (h *harness) logUsage(what string) {
	var b strings.Builder
	for _, u := range h.usage() {
		fmt.Fprintf(&b, "  %-24s CPU %8s  peak RSS %4d MiB\n", u.name, u.cpu.Round(10*time.Millisecond), u.peakRSS>>20)
	}
	h.t.Logf("CPU and memory %s:\n%s", what, b.String())
}

var (
	magnumCAsOnce sync.Once
	magnumCAsPEM  map[string]any
)

// withMagnumCAs gives a create event the certificate authorities Magnum itself makes: RSA
// keys (magnum.common.x509, 2048 bits by default), where the fixtures carry small ECDSA
// ones. CAPD's in-memory workload API server signs with the cluster CA as an RSA key and
// fails on any other, and the real kubeadm path takes both.
func withMagnumCAs(t *testing.T, ev map[string]any) map[string]any {
	t.Helper()
	magnumCAsOnce.Do(func() {
		magnumCAsPEM = map[string]any{}
		for _, name := range []string{"ca", "etcd", "front_proxy", "magnum_client"} {
			key, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			now := time.Now()
			tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: "magnum-gitops e2e " + name},
				NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
				KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				panic(err)
			}
			pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				panic(err)
			}
			magnumCAsPEM[name] = map[string]any{
				"cert": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
				"key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})),
			}
		}
	})
	out := deepCopy(ev).(map[string]any)
	setPath(out, deepCopy(magnumCAsPEM), "secrets", "certificates")
	return out
}
