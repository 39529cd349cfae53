package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/magnum-gitops/magnum-gitops/internal/gitserver"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/serveload"
)

// BenchmarkServeLoad: serve as the CLI runs it (its configuration, HTTP handler,
// reconciler and loops, its clone on disk, Secrets SOPS-encrypted) pushing to a Git
// smart-HTTP remote with group commit on, under 32 clients each posting 10 events for a
// cluster of its own and waiting for each answer (internal/serveload). An op is one such
// load of 320 events on new clusters; events/s is over them all. The reconciler's own
// benchmark (reconciler/service, BenchmarkThroughput) leaves out this path's configuration
// and remote, and missed a loss here: serve's figure is this one. hack/serveload runs the
// same load against built binaries, for a side-by-side with an older commit.
//
//	go test ./cmd/magnum-gitops -run '^$' -bench ServeLoad -benchtime 3x
func BenchmarkServeLoad(b *testing.B) {
	remote := gitserver.Start(b)
	dir := b.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	config, token, err := serveload.Setup{Dir: dir, Remote: remote.Init("clusters.git"), Listen: addr}.Write()
	if err != nil {
		b.Fatal(err)
	}
	o := &serveOptions{configFile: config, objectsFile: filepath.Join(b.TempDir(), "none.yaml"), logFormat: "text",
		source: "api", healthInterval: time.Minute, shutdownDelaySet: true}
	if err := os.WriteFile(o.objectsFile, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.run(ctx, leakcheck.Log(b, "serve's log")) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	target := serveload.Target{URL: "http://" + addr, Token: token}
	if err := serveload.WaitReady(ctx, target.URL, 2*time.Minute, done); err != nil {
		b.Fatal(err)
	}
	var events int
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		res, err := serveload.Load(ctx, target, serveload.Options{Clients: 32, Events: 10, Clusters: 1, Offset: i})
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
		lat = append(lat, res.P99)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(slices.Max(lat).Microseconds())/1000, "max-p99-ms")
}
