package reconciler_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/api/v1alpha1"

	"filippo.io/age"

	"github.com/magnum-gitops/magnum-gitops/generator"
	"github.com/magnum-gitops/magnum-gitops/gitrepo"
	"github.com/magnum-gitops/magnum-gitops/internal/fixturetest"
	"github.com/magnum-gitops/magnum-gitops/internal/leakcheck"
	"github.com/magnum-gitops/magnum-gitops/internal/sopsenc"
	"github.com/magnum-gitops/magnum-gitops/reconciler"
)

// event decodes one fixture event.
func event(t testing.TB, name string) *v1alpha1.ClusterEvent {
	t.Helper()
	return fixturetest.Event(t, name)
}

// committer returns a pipeline that encrypts Secrets and a sink on a new bare repository.
func committer(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	t.Cleanup(func() { leakcheck.Repo(t, dir) })
	repo, err := gitrepo.Open(context.Background(), gitrepo.Options{URL: "file://" + dir,
		Author: gitrepo.Signature{Name: "magnum-gitops", Email: "m@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := generator.DefaultConfig()
	return &reconciler.Pipeline{Config: generator.MustSite(cfg), Secrets: encrypting(t)}, &reconciler.GitSink{Repo: repo}, dir
}

// encrypting is the Secret policy of a real deployment: SOPS for a new age recipient.
func encrypting(t testing.TB) reconciler.SecretPolicy {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return encryptingFor(t, id)
}

// encryptingFor encrypts for the recipient of id.
func encryptingFor(t testing.TB, id *age.X25519Identity) reconciler.SecretPolicy {
	t.Helper()
	enc, err := sopsenc.New(sopsenc.Options{AgeRecipients: []string{id.Recipient().String()}, DigestKey: bytes.Repeat([]byte{1}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return reconciler.SecretPolicy{Encrypter: enc}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestGitSinkLifecycle commits a cluster's life (create, resize, delete) and checks the
// messages, the no-op on an identical event, and that no secret value reaches Git in clear.
func TestGitSinkLifecycle(t *testing.T) {
	p, sink, dir := committer(t)
	ctx := context.Background()
	create := event(t, "01-prod-a-create.yaml")
	if _, err := sink.Apply(ctx, p, create); err != nil {
		t.Fatal(err)
	}
	out, err := sink.Apply(ctx, p, event(t, "01-prod-a-create.yaml"))
	if err != nil || !out.NoOp() {
		t.Errorf("the same event again: %+v %v, want a no-op (SOPS files unchanged)", out, err)
	}
	if _, err := sink.Apply(ctx, p, event(t, "02-prod-a-resize-workers.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := sink.Apply(ctx, p, event(t, "08-prod-a-delete.yaml")); err != nil {
		t.Fatal(err)
	}
	log := gitOut(t, dir, "log", "--format=%B%x00", "main")
	msgs := strings.Split(log, "\x00")
	if len(msgs) != 4 { // three commits and the tail
		t.Fatalf("%d commits, want 3:\n%s", len(msgs)-1, log)
	}
	resize := msgs[1]
	for _, want := range []string{
		"magnum: resize cluster prod-a (prod-a-2b7xq4mzkd5h) in project 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c\n",
		"node group default-worker: 3 × m1.medium → 5 × m1.medium",
		"Magnum-Cluster-UUID: 3e9b7c52-1d4a-4f8e-9b6c-2a7d5e8f1c03",
		"Magnum-Operation: resize_cluster", "Magnum-Event-ID: evt-02-resize-cluster", "Magnum-Project: 9f3c1b2a4d5e4f6a8b7c6d5e4f3a2b1c",
		// The trailer's name as documented (docs/service.md) and as older history holds it.
		"\nMagnum-Event-Digest: sha256:",
	} {
		if !strings.Contains(resize, want) {
			t.Errorf("resize message lacks %q:\n%s", want, resize)
		}
	}
	if !strings.Contains(msgs[0], "magnum: delete cluster prod-a") || !strings.Contains(msgs[2], "Secrets written: ca, cloud-credentials, etcd, proxy, sa") {
		t.Errorf("messages:\n%s", log)
	}
	all := gitOut(t, dir, "log", "-p", "--all")
	for _, s := range []string{create.Secrets.ApplicationCredential.Secret.Reveal(), strings.Split(create.Secrets.Certificates.CA.Key.Reveal(), "\n")[1]} {
		if strings.Contains(all, s) {
			t.Errorf("a secret value is in the Git history in clear (%.10s…)", s)
		}
	}
	files := gitOut(t, dir, "ls-tree", "-r", "--name-only", "main")
	if strings.Contains(files, "helmrelease.yaml\n") && strings.Contains(files, "prod-a-2b7xq4mzkd5h/helmrelease.yaml") {
		t.Error("the deleted cluster's HelmRelease is still in Git")
	}
	if !strings.Contains(files, "prod-a-2b7xq4mzkd5h/secret-cloud-credentials.sops.yaml") {
		t.Error("the deleted cluster's Secrets must stay until the CAPI Cluster is gone")
	}
	gitOut(t, dir, "fsck", "--strict")
}

func TestGitSinkRefusesPlaintextAndReviewBranch(t *testing.T) {
	p, sink, dir := committer(t)
	p.Secrets = reconciler.SecretPolicy{}
	_, err := sink.Apply(context.Background(), p, event(t, "01-prod-a-create.yaml"))
	if !errors.Is(err, reconciler.ErrPlaintextRefused) || reconciler.KindOf(err) != reconciler.KindInvalid {
		t.Errorf("err = %v, want ErrPlaintextRefused (invalid input)", err)
	}
	if out := gitOut(t, dir, "rev-list", "--all"); out != "" {
		t.Errorf("a refused event committed:\n%s", out)
	}
	p2, sink2, dir2 := committer(t)
	sink2.ReviewBranch = "magnum/{{.StackID}}/{{.EventID}}"
	res, err := sink2.Apply(context.Background(), p2, event(t, "02-prod-a-resize-workers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != "magnum/prod-a-2b7xq4mzkd5h/evt-02-resize-cluster" {
		t.Errorf("branch = %q", res.Branch)
	}
	if out := gitOut(t, dir2, "branch", "--list"); !strings.Contains(out, "magnum/prod-a-2b7xq4mzkd5h/evt-02-resize-cluster") {
		t.Errorf("branches: %s", out)
	}
}

// TestRotateCredential: rotate_credential re-renders the cloud-credentials Secret with the
// new application credential and nothing else.
func TestRotateCredential(t *testing.T) {
	t.Parallel()
	p, sink, _ := committer(t)
	ctx := context.Background()
	create := event(t, "01-prod-a-create.yaml")
	if _, err := sink.Apply(ctx, p, create); err != nil {
		t.Fatal(err)
	}
	rotate := event(t, "01-prod-a-create.yaml")
	rotate.ID, rotate.Operation = "evt-rotate", v1alpha1.RotateCredential
	rotate.Secrets.ApplicationCredential = &v1alpha1.ApplicationCredential{ID: "new-credential-id", Secret: "new-secret-NOT-REAL"}
	rotate.Secrets.Certificates = nil
	out, err := sink.Apply(ctx, p, rotate)
	if err != nil {
		t.Fatal(err)
	}
	var changed []string
	for _, f := range out.Plan.Paths() {
		if !strings.HasSuffix(f, "/"+reconciler.RecordFile) {
			changed = append(changed, f[strings.LastIndex(f, "/")+1:])
		}
	}
	if strings.Join(changed, ",") != "secret-cloud-credentials.sops.yaml" {
		t.Errorf("rotate changed %v, want only the cloud-credentials Secret", changed)
	}
	if !strings.Contains(out.Plan.Commit.Subject, "rotate the application credential of cluster prod-a") {
		t.Errorf("subject %q", out.Plan.Commit.Subject)
	}
}

// created is committer with prod-a created in the repository.
func created(t *testing.T) (*reconciler.Pipeline, *reconciler.GitSink, string) {
	t.Helper()
	p, sink, dir := committer(t)
	if _, err := sink.Apply(context.Background(), p, event(t, "01-prod-a-create.yaml")); err != nil {
		t.Fatal(err)
	}
	return p, sink, dir
}
