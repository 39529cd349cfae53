package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"
	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/internal/testenv"
)

// BenchmarkMigrateDryRun is `migrate --dry-run` over a fleet the driver installed (1,000
// clusters, 10 per project), against a real kube-apiserver holding their Helm releases,
// beside rendering the same clusters alone: per dry run, its time and the requests for
// Secrets the API server counted (apiserver_request_total), the only resource migrate
// reads. Every cluster must come out identical: adopting changes nothing.
func BenchmarkMigrateDryRun(b *testing.B) {
	testenv.Require(b, env)
	const clusters, perProject = 1000, 10
	events, file := driverFleet(b, clusters, perProject)
	cfg, _ := sopsConfigFile(b)
	kc, err := env.KubeConfig()
	if err != nil {
		b.Fatal(err)
	}
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		b.Fatal(err)
	}
	gcfg := generator.DefaultConfig()
	b.Run(fmt.Sprintf("render/clusters=%d", clusters), func(b *testing.B) {
		for b.Loop() {
			for _, ev := range events {
				if _, err := generator.Render(ev, generator.MustSite(gcfg)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run(fmt.Sprintf("dry-run/clusters=%d", clusters), func(b *testing.B) {
		before := secretRequests(b)
		for b.Loop() {
			cmd := newRootCommand()
			var out, errOut bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			cmd.SetArgs([]string{"migrate", "-f", file, "--config", cfg, "--kubeconfig", kubeconfig, "--dry-run", "-o", "json"})
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				b.Fatalf("%v\n%s", err, errOut.String())
			}
			var reports []struct{ Outcome, Reason string }
			if err := json.Unmarshal(out.Bytes(), &reports); err != nil {
				b.Fatal(err)
			}
			for _, r := range reports {
				if r.Outcome != "identical" {
					b.Fatalf("a cluster is %s (%s), want every one identical", r.Outcome, r.Reason)
				}
			}
			if len(reports) != clusters {
				b.Fatalf("%d reports, want %d", len(reports), clusters)
			}
		}
		b.ReportMetric((secretRequests(b)-before)/float64(b.N), "requests/op")
	})
}

// driverFleet stores in the API server, as magnum-capi-helm installs them, the releases of
// clusters variants of the fixture, perProject to a project, and returns the events and a
// file of them (migrate's -f). The chart is rendered once: an identical cluster's
// comparison reads the release's values only.
func driverFleet(b *testing.B, clusters, perProject int) ([]*v1alpha1.ClusterEvent, string) {
	b.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		b.Fatal(err)
	}
	base, err := v1alpha1.DecodeEvent(data)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := testenv.DriverRelease(b, base)
	cfg := generator.DefaultConfig()
	events := make([]*v1alpha1.ClusterEvent, clusters)
	var stream []byte
	for i := range events {
		ev, _ := v1alpha1.DecodeEvent(data)
		ev.Cluster.UUID = fmt.Sprintf("7c1d9e4a-2b3f-4a5c-8d6e-%012d", i)
		ev.Cluster.Name = fmt.Sprintf("m%04d", i)
		ev.Cluster.StackID = fmt.Sprintf("m%04d-stack", i)
		ev.Cluster.ProjectID = fmt.Sprintf("b5d1a3c7e9f24b6d8a0c2e4f6a8b%04d", i/perProject)
		res, err := generator.Render(ev, generator.MustSite(cfg))
		if err != nil {
			b.Fatal(err)
		}
		rel := *tmpl
		rel.Name, rel.Namespace, rel.Config = res.ReleaseName, res.Namespace, res.Values
		storeRelease(b, &rel)
		doc, err := yaml.Marshal(ev)
		if err != nil {
			b.Fatal(err)
		}
		stream = append(append(stream, "---\n"...), doc...)
		events[i] = ev
	}
	file := filepath.Join(b.TempDir(), "clusters.yaml")
	if err := os.WriteFile(file, stream, 0o600); err != nil {
		b.Fatal(err)
	}
	return events, file
}

// secretRequests is the API server's count of requests for Secrets so far.
func secretRequests(b *testing.B) float64 {
	b.Helper()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="secrets"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			b.Fatal(err)
		}
		n += v
	}
	return n
}
