//go:build e2e

package e2e

// TestE2EArgoScale's report: the figures table, the API server's requests by kind, and the
// processes' logs kept for reading.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// formatScaleTable is the results as fixed tables: one summary line per mode (idle
// syncs and the Applications whose source differs from the one compared: Argo CD only),
// then one
// line per process and mode with its CPU (total and per cluster) and peak RSS during the
// push window, and its CPU during the idle window (per cluster and minute).
func formatScaleTable(results []argoScaleResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-24s %6s %5s %9s %9s %9s %9s %10s %9s %8s %7s %6s %11s %6s %6s  %-16s %-16s %s\n", "mode", "N", "ns", "applied", "first", "all",
		"s/cluster", "API req", "req/clust", "git MiB", "charts", "polls", "idle req/m", "syncs", "differ", "load start", "load end", "result")
	for _, r := range results {
		result := "ok"
		if r.failed != "" {
			result = fmt.Sprintf("FAILED (%d of %d deployed)", r.deployed, r.n)
		}
		idleReq := 0.0
		if r.idle > 0 {
			idleReq = r.idleRequests / r.idle.Minutes()
		}
		fmt.Fprintf(&b, "%-24s %6d %5d %8.1fs %8.1fs %8.1fs %9.3f %10.0f %9.1f %8.1f %7d %6d %11.0f %6d %6d  %-16s %-16s %s\n", r.mode, r.n, r.projects,
			r.applied.Seconds(), r.first.Seconds(), r.all.Seconds(), r.all.Seconds()/float64(r.n), r.apiRequests, r.apiRequests/float64(r.n),
			r.gitMiB, r.chartRequests, r.polls, idleReq, r.idleSyncs, r.differs, r.loadStart, r.loadEnd, result)
	}
	for _, r := range results {
		if r.plugin.wall > 0 {
			fmt.Fprintf(&b, "sops plugin over the whole tree (%d files): %.1fs wall, %.1fs CPU, %.1f ms CPU per cluster, on each commit\n",
				r.plugin.files, r.plugin.wall.Seconds(), r.plugin.cpu.Seconds(), 1000*r.plugin.cpu.Seconds()/float64(r.n))
		}
	}
	fmt.Fprintf(&b, "\n%-24s %-30s %10s %14s %12s %10s %14s\n", "mode", "process", "CPU s", "CPU ms/cluster", "peak RSS MiB", "idle CPU s", "idle ms/cl/min")
	for _, r := range results {
		idle := map[string]float64{}
		for _, c := range r.idleCosts {
			idle[c.name] = c.cpu
		}
		perMin := func(cpu float64) float64 {
			if r.idle == 0 {
				return 0
			}
			return 1000 * cpu / float64(r.n) / r.idle.Minutes()
		}
		total, idleTotal := 0.0, 0.0
		for _, c := range r.costs {
			fmt.Fprintf(&b, "%-24s %-30s %10.1f %14.1f %12.0f %10.1f %14.2f\n", r.mode, c.name, c.cpu, 1000*c.cpu/float64(r.n), c.peakMiB, idle[c.name], perMin(idle[c.name]))
			total += c.cpu
			idleTotal += idle[c.name]
		}
		fmt.Fprintf(&b, "%-24s %-30s %10.1f %14.1f %12s %10.1f %14.2f\n", r.mode, "TOTAL", total, 1000*total/float64(r.n), "", idleTotal, perMin(idleTotal))
	}
	return b.String()
}

// requestLabels picks the verb, resource and subresource labels of a metric line.
var requestLabels = regexp.MustCompile(`(verb|resource|subresource|group)="([^"]*)"`)

// apiRequestsBy is the API server's apiserver_request_total by verb, group, resource and
// subresource: what the requests of a window were.
func (h *harness) apiRequestsBy() map[string]float64 {
	cs, err := kubernetes.NewForConfig(h.env.Config)
	if err != nil {
		h.t.Fatal(err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(h.ctx)
	if err != nil {
		h.t.Fatalf("API server /metrics: %v", err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels := map[string]string{}
		for _, m := range requestLabels.FindAllStringSubmatch(line, -1) {
			labels[m[1]] = m[2]
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["group"] != "" {
			key += "." + labels["group"]
		}
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += v
	}
	return out
}

// topRequests is the largest differences between two apiRequestsBy readings, as
// "count verb resource" items.
func topRequests(before, after map[string]float64, n int) []string {
	type kv struct {
		k string
		v float64
	}
	var all []kv
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			all = append(all, kv{k, d})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%.0f %s", e.v, e.k))
	}
	return out
}

// keepLogs copies every process's log (the harness's, and Argo CD's) into dir
// (ARGOCD_SCALE_LOGS): both are removed when the test passes.
func (h *harness) keepLogs(dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(h.logDir, "*.log"))
	if h.argoCD != nil {
		more, _ := filepath.Glob(filepath.Join(h.argoCD.Dir(), "logs", "*.log"))
		files = append(files, more...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			h.t.Errorf("keeping %s: %v", f, err)
		}
	}
	h.t.Logf("logs kept in %s", dir)
}
