package main

import (
	"context"
	"log/slog"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/config"
	"github.com/magnum-gitops/magnum-gitops/magnum"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
	"github.com/magnum-gitops/magnum-gitops/reconciler/openstack"
)

// pipeline builds the reconciler pipeline of a configuration: the generator's settings,
// the CA bundle resolver, and the Secret policy (--insecure-plaintext-secrets allows
// plaintext only where no SOPS recipient is configured).
func pipeline(f *config.File, insecurePlaintext bool) (*reconciler.Pipeline, error) {
	return openPipeline(f, insecurePlaintext, nil)
}

// openPipeline is pipeline telling refused of a rotated recipients file that does not
// load (serve's metric).
func openPipeline(f *config.File, insecurePlaintext bool, refused config.Refused) (*reconciler.Pipeline, error) {
	enc, err := encrypter(&f.Sops, refused)
	if err != nil {
		return nil, err
	}
	p := &reconciler.Pipeline{
		Config:    f.Site,
		Resolvers: []reconciler.Resolver{openstack.CABundle{File: f.Magnum.Drivers.OpenstackCAFile}},
		Secrets:   reconciler.SecretPolicy{Encrypter: enc, Plaintext: insecurePlaintext},
	}
	return p, nil
}

// gitSink opens the configured repository.
func gitSink(ctx context.Context, f *config.File) (*reconciler.GitSink, error) {
	return openGitSink(ctx, f, nil)
}

// openGitSink is gitSink telling refused of a rotated credential file that does not
// load (serve's metric); the one-shot commands have no one to tell.
func openGitSink(ctx context.Context, f *config.File, refused config.Refused) (*reconciler.GitSink, error) {
	opts, err := f.Git.Options(refused)
	if err != nil {
		return nil, err
	}
	// The on-disk cache heals itself; say so once in the log.
	opts.Warn = func(msg string) { slog.Warn(msg, "component", "gitrepo") }
	opts.AuthRefused = refused.Of("git_auth")
	if f.Flux.Layout == generator.LayoutBranchPerNamespace {
		opts.Split = &gitrepo.Split{Prefix: magnum.PublishedBranchPrefix, Part: f.Config.PublishedPart, Dirs: f.Config.PublishedDirs}
	}
	repo, err := gitrepo.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &reconciler.GitSink{Repo: repo, ReviewBranch: f.Git.Review.BranchTemplate}, nil
}

// runReconciler starts the reconciler serve runs, for a command that commits several
// clusters: maxGroup of them to a push (the Reconciler's default, 100, when 0). stop waits
// for it to finish the group in hand.
func runReconciler(ctx context.Context, p *reconciler.Pipeline, sink *reconciler.GitSink, maxGroup int) (r *reconciler.Reconciler, stop func()) {
	r = &reconciler.Reconciler{Pipeline: p, Sink: sink, MaxGroup: maxGroup}
	r.Start()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { r.Run(rctx); close(done) }()
	return r, func() { cancel(); <-done }
}
