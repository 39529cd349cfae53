package gitrepo_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/magnum-gitops/magnum-gitops/gitrepo"

	"github.com/ProtonMail/go-crypto/openpgp"
	git5 "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// testSplit publishes each directory under clusters/ on a branch of its own, except
// clusters/flux and clusters/sources, which go together, as the branch-per-namespace
// layout does.
func testSplit() *gitrepo.Split {
	return &gitrepo.Split{
		Prefix: "published/",
		Part: func(p string) string {
			parts := strings.Split(p, "/")
			switch {
			case len(parts) < 3 || parts[0] != "clusters":
				return ""
			case parts[1] == "flux" || parts[1] == "sources":
				return "clusters/flux"
			}
			return "clusters/" + parts[1]
		},
		Dirs: func(part string) []string {
			if part == "clusters/flux" {
				return []string{"clusters/flux", "clusters/sources"}
			}
			return []string{part}
		},
	}
}

// splitRepo is a remote with a Repo pushing to it with testSplit (signed with key, when
// set): the Git server, the bare repository and the Repo.
func splitRepo(t *testing.T, key *openpgp.Entity) (*gitServer, string, *gitrepo.Repo) {
	t.Helper()
	s := newGitServer(t)
	o := testOptions(s.newRepo("clusters", true))
	o.Split, o.SigningKey = testSplit(), key
	bare := s.dir("clusters")
	return s, bare, open(t, o)
}

// refs lists the remote's branches under published/ with their heads.
func refs(t *testing.T, bare string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(git(t, bare, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/published/")), "\n") {
		if name, id, ok := strings.Cut(l, " "); ok {
			out[name] = id
		}
	}
	return out
}

func TestSplitPublishes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, bare, r := splitRepo(t, nil)

	first, err := r.Apply(ctx, change("two namespaces", map[string]string{
		"clusters/flux/kustomization-magnum-p1.yaml":   "kind: Kustomization\n",
		"clusters/sources/helmrepository-azimuth.yaml": "kind: HelmRepository\n",
		"clusters/magnum-p1/namespace.yaml":            "kind: Namespace\n",
		"clusters/magnum-p1/a/helmrelease.yaml":        "kind: HelmRelease\nname: a\n",
		"clusters/magnum-p2/b/helmrelease.yaml":        "kind: HelmRelease\nname: b\n",
		"README.md":                                    "# clusters, published\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.pushes.Load() != 1 {
		t.Errorf("%d pushes, want the branch and its parts in one", s.pushes.Load())
	}
	checkRepo(t, bare)
	published := refs(t, bare)
	wantTrees := map[string]string{
		"published/clusters/flux":      "clusters/flux/kustomization-magnum-p1.yaml\nclusters/sources/helmrepository-azimuth.yaml\n",
		"published/clusters/magnum-p1": "clusters/magnum-p1/a/helmrelease.yaml\nclusters/magnum-p1/namespace.yaml\n",
		"published/clusters/magnum-p2": "clusters/magnum-p2/b/helmrelease.yaml\n",
	}
	if len(published) != len(wantTrees) {
		t.Errorf("published branches %v, want %d", published, len(wantTrees))
	}
	for branch, want := range wantTrees {
		if got := git(t, bare, "ls-tree", "-r", "--name-only", branch); got != want {
			t.Errorf("%s holds\n%s\nwant\n%s", branch, got, want)
		}
		// The part's directories are the branch's very trees: Flux applies what main holds.
		for _, dir := range strings.Fields(strings.ReplaceAll(want, "\n", " ")) {
			dir = dir[:strings.LastIndex(dir, "/")]
			if a, b := git(t, bare, "rev-parse", branch+":"+dir), git(t, bare, "rev-parse", first.Commit.String()+":"+dir); a != b {
				t.Errorf("%s:%s is %s, main's is %s", branch, dir, a, b)
			}
		}
		if got := git(t, bare, "log", "--format=%P|%ad|%s", "--date=unix", branch); got != "|0|Publish "+strings.TrimPrefix(branch, "published/")+" of main\n" {
			t.Errorf("%s: commit %q, want one commit without a parent, dated 0", branch, got)
		}
	}

	// A change to one namespace moves its branch alone.
	second, err := r.Apply(ctx, change("one namespace", map[string]string{
		"clusters/magnum-p1/a/helmrelease.yaml": "kind: HelmRelease\nname: a\nreplicas: 2\n",
	}))
	if err != nil {
		t.Fatal(err)
	}
	after := refs(t, bare)
	for branch, id := range published {
		if moved := after[branch] != id; moved != (branch == "published/clusters/magnum-p1") {
			t.Errorf("%s moved = %v", branch, moved)
		}
	}

	// Which main commits a published head includes.
	for _, tc := range []struct {
		head, commit string
		want         bool
	}{
		{after["published/clusters/magnum-p1"], first.Commit.String(), true},
		{after["published/clusters/magnum-p1"], second.Commit.String(), true},
		{published["published/clusters/magnum-p1"], first.Commit.String(), true},
		{published["published/clusters/magnum-p1"], second.Commit.String(), false},
		// magnum-p2 did not change: its head publishes the second commit too.
		{published["published/clusters/magnum-p2"], second.Commit.String(), true},
		{after["published/clusters/magnum-p2"], first.Commit.String(), true},
	} {
		branch := "published/clusters/magnum-p1"
		if tc.head == published["published/clusters/magnum-p2"] {
			branch = "published/clusters/magnum-p2"
		}
		got, err := r.ContainsIn(branch, tc.head, tc.commit)
		if err != nil || got != tc.want {
			t.Errorf("ContainsIn(%s, %.8s, %.8s) = %v, %v; want %v", branch, tc.head, tc.commit, got, err, tc.want)
		}
	}

	// A namespace emptied: its branch goes.
	if _, err := r.Apply(ctx, change("delete", map[string]string{"clusters/magnum-p2/b/helmrelease.yaml": "<delete>"})); err != nil {
		t.Fatal(err)
	}
	if _, ok := refs(t, bare)["published/clusters/magnum-p2"]; ok {
		t.Error("the branch of an emptied namespace is still there")
	}
}

// TestSplitPublishRepairs: what was pushed by another writer (a merged review) reaches its
// published branch on Publish; a current part costs no push.
func TestSplitPublishRepairs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, bare, r := splitRepo(t, nil)
	if _, err := r.Apply(ctx, change("a", map[string]string{"clusters/magnum-p1/a/helmrelease.yaml": "name: a\n"})); err != nil {
		t.Fatal(err)
	}
	before := refs(t, bare)["published/clusters/magnum-p1"]

	work := t.TempDir()
	git(t, "", "clone", "-q", bare, work)
	if err := os.WriteFile(filepath.Join(work, "clusters/magnum-p1/a/helmrelease.yaml"), []byte("name: a\nmerged: review\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", ".")
	git(t, work, "commit", "-q", "-m", "merged review")
	git(t, work, "push", "-q", "origin", "HEAD:main")

	if err := r.Fetch(ctx); err != nil {
		t.Fatal(err)
	}
	pushes := s.pushes.Load()
	if err := r.Publish(ctx, "clusters/magnum-p1/a/helmrelease.yaml"); err != nil {
		t.Fatal(err)
	}
	after := refs(t, bare)["published/clusters/magnum-p1"]
	if after == before {
		t.Fatal("Publish left the part as it was")
	}
	if got := git(t, bare, "show", after+":clusters/magnum-p1/a/helmrelease.yaml"); got != "name: a\nmerged: review\n" {
		t.Errorf("published %q", got)
	}
	if err := r.Publish(ctx, "clusters/magnum-p1/a/helmrelease.yaml", "README.md"); err != nil {
		t.Fatal(err)
	}
	if n := s.pushes.Load() - pushes; n != 1 {
		t.Errorf("%d pushes, want 1: the second Publish found the part current", n)
	}

	// A published branch deleted behind serve's back comes back, though the last push
	// saw it current.
	git(t, bare, "update-ref", "-d", "refs/heads/published/clusters/magnum-p1")
	if err := r.Publish(ctx, "clusters/magnum-p1/a/helmrelease.yaml"); err != nil {
		t.Fatal(err)
	}
	if got := refs(t, bare)["published/clusters/magnum-p1"]; got != after {
		t.Errorf("after a delete, Publish left the branch at %q, want %s", got, after)
	}
	checkRepo(t, bare)
}

func TestSplitValidated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		split gitrepo.Split
		want  string
	}{
		{"no prefix", gitrepo.Split{Part: testSplit().Part, Dirs: testSplit().Dirs}, "split.prefix"},
		{"prefix over the branch", gitrepo.Split{Prefix: "ma", Part: testSplit().Part, Dirs: testSplit().Dirs}, "would publish on branch"},
		{"bad prefix", gitrepo.Split{Prefix: "a..b/", Part: testSplit().Part, Dirs: testSplit().Dirs}, "split.prefix"},
		{"no part", gitrepo.Split{Prefix: "published/", Dirs: testSplit().Dirs}, "part and dirs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions("https://git.example.org/clusters.git")
			o.Split = &tc.split
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSplitSigned: published commits are signed as the branch's are, and a signature
// dated with the key keeps their ids a function of their content.
func TestSplitSigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	key, pub := signingKey(t)
	s, bare, r := splitRepo(t, key)
	if _, err := r.Apply(ctx, change("a", map[string]string{"clusters/magnum-p1/a/helmrelease.yaml": "name: a\n"})); err != nil {
		t.Fatal(err)
	}
	head := refs(t, bare)["published/clusters/magnum-p1"]
	repo, err := git5.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(plumbing.NewHash(head))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(pub); err != nil {
		t.Errorf("go-git cannot verify the published commit: %v", err)
	}
	pushes := s.pushes.Load()
	if err := r.Publish(ctx, "clusters/magnum-p1/a/helmrelease.yaml"); err != nil {
		t.Fatal(err)
	}
	if s.pushes.Load() != pushes || refs(t, bare)["published/clusters/magnum-p1"] != head {
		t.Error("publishing the same content again made another commit")
	}
}
