package main

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The Dockerfile is for those who build with Docker; no test here can run it (no daemon).
// These tests hold it to what the layout is: its last stage copies the tree this program
// writes onto scratch and runs it as this program's image does, and its binary is built
// with the flags `make image` uses.

// stage is one FROM of a Dockerfile and its instructions.
type stage struct {
	from, name string
	ins        [][2]string // instruction (upper case), arguments
}

// readDockerfile splits the repository's Dockerfile into its stages, continuation lines
// joined and comments dropped; args are the ARG defaults given before the first FROM.
func readDockerfile(t *testing.T) (args map[string]string, stages []stage) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	args = map[string]string{}
	var lines []string
	var cont string
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || trimmed == "" && cont == "" {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cont += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		lines = append(lines, cont+trimmed)
		cont = ""
	}
	for _, line := range lines {
		instr, arg, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		switch {
		case instr == "FROM":
			f := strings.Fields(arg)
			f = slices.DeleteFunc(f, func(s string) bool { return strings.HasPrefix(s, "--platform=") })
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
		case len(stages) == 0 && instr == "ARG":
			for _, kv := range strings.Fields(arg) {
				k, v, _ := strings.Cut(kv, "=")
				args[k] = v
			}
		case len(stages) > 0:
			stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, [2]string{instr, arg})
		}
	}
	if len(stages) == 0 {
		t.Fatal("the Dockerfile has no FROM")
	}
	return args, stages
}

// instructions are a stage's arguments of one instruction.
func (s stage) instructions(name string) []string {
	var out []string
	for _, in := range s.ins {
		if in[0] == name {
			out = append(out, in[1])
		}
	}
	return out
}

// TestDockerfileIsTheImage: the Dockerfile's image is scratch with the tree --rootfs
// writes, and the user, entrypoint, command, environment and labels of the layout.
func TestDockerfileIsTheImage(t *testing.T) {
	t.Parallel()
	defaults, stages := readDockerfile(t)
	final := stages[len(stages)-1]
	if final.from != "scratch" {
		t.Fatalf("the last stage is FROM %s, want scratch: nothing downloaded, nothing but our files", final.from)
	}

	// The tree: the build stage runs this program with --rootfs, the last stage copies
	// that tree and nothing else.
	var build stage
	var rootfsArgs []string
	for _, s := range stages[:len(stages)-1] {
		for _, r := range s.instructions("RUN") {
			if _, after, ok := strings.Cut(r, "go run ./hack/ociimage "); ok {
				build, rootfsArgs = s, shellWords(t, after)
			}
		}
	}
	if rootfsArgs == nil {
		t.Fatal("no stage runs go run ./hack/ociimage --rootfs")
	}
	for i, a := range rootfsArgs {
		rootfsArgs[i] = os.Expand(a, func(k string) string { return defaults[k] })
	}
	o, err := parseOptions(rootfsArgs, io.Discard)
	if err != nil {
		t.Fatalf("the Dockerfile's ociimage %q: %v", rootfsArgs, err)
	}
	if o.rootfs == "" || o.caCerts != caPath {
		t.Errorf("the Dockerfile's ociimage writes --rootfs %q from --ca-certificates %q, want a tree from Debian's %s", o.rootfs, o.caCerts, caPath)
	}
	if want := []string{"--from=" + build.name + " " + strings.TrimSuffix(o.rootfs, "/") + "/ /"}; !slices.Equal(final.instructions("COPY"), want) {
		t.Errorf("the last stage copies %q, want %q alone", final.instructions("COPY"), want)
	}
	if out := goBuildOutput(t, build); out != o.binaries[0].path {
		t.Errorf("the rootfs holds %s, the stage builds %s", o.binaries[0].path, out)
	}

	// How it runs.
	if got := final.instructions("USER"); !slices.Equal(got, []string{imageUser}) {
		t.Errorf("USER %q, want %s", got, imageUser)
	}
	for instr, want := range map[string][]string{"ENTRYPOINT": entrypoint, "CMD": defaultCmd} {
		got := final.instructions(instr)
		var list []string
		if len(got) != 1 || json.Unmarshal([]byte(got[0]), &list) != nil || !slices.Equal(list, want) {
			t.Errorf("%s %q, want the exec form of %q", instr, got, want)
		}
	}
	var env []string
	for _, e := range final.instructions("ENV") {
		env = append(env, shellWords(t, e)...)
	}
	if !slices.Equal(sorted(env), sorted(imageEnv)) {
		t.Errorf("ENV %q, want %q", env, imageEnv)
	}
	// The labels, with the build arguments a release passes.
	created := time.Date(2026, 11, 28, 9, 12, 48, 0, time.UTC)
	buildArgs := map[string]string{"VERSION": "1.2.3", "COMMIT": "c0ffee", "DATE": created.Format(time.RFC3339)}
	got := map[string]string{}
	for _, l := range final.instructions("LABEL") {
		for _, kv := range shellWords(t, l) {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = os.Expand(v, func(k string) string { return buildArgs[k] })
		}
	}
	if want := labels("1.2.3", "c0ffee", defaultSource, created); !reflect.DeepEqual(got, want) {
		t.Errorf("LABEL %v, want %v", got, want)
	}
	if got := final.instructions("ARG"); len(got) != 1 || !slices.Equal(sorted(strings.Fields(got[0])), []string{"COMMIT", "DATE", "VERSION"}) {
		t.Errorf("the last stage declares ARG %q, want VERSION COMMIT DATE (the labels read them)", got)
	}
}

// goBuildOutput is the -o of the stage's go build of ./cmd/magnum-gitops.
func goBuildOutput(t *testing.T, s stage) string {
	t.Helper()
	w := dockerGoBuild(t, s)
	for i, a := range w {
		if a == "-o" && i+1 < len(w) {
			return w[i+1]
		}
	}
	t.Fatalf("the go build %q has no -o", w)
	return ""
}

// dockerGoBuild is the words of the stage's RUN that builds ./cmd/magnum-gitops.
func dockerGoBuild(t *testing.T, s stage) []string {
	t.Helper()
	for _, r := range s.instructions("RUN") {
		if strings.Contains(r, "go build") && strings.HasSuffix(r, "./cmd/magnum-gitops") {
			return shellWords(t, r)
		}
	}
	t.Fatalf("the build stage %s does not go build ./cmd/magnum-gitops", s.name)
	return nil
}

// TestDockerfileBuildsAsMake: the Dockerfile's binary is built with the flags of `make
// image`'s (CGO off, -trimpath, stripped, the version, commit and date stamped); only
// where GOOS and GOARCH come from differs.
func TestDockerfileBuildsAsMake(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	vars := map[string]string{"VERSION": "1.2.3", "COMMIT": "c0ffee", "DATE": "2026-11-28T09:12:48Z", "TARGETOS": "linux", "TARGETARCH": "arm64"}
	cmd := exec.Command("make", "-n", "-s", "image", "IMAGE_PLATFORMS=linux/arm64", "GOFLAGS=", "GO=go",
		"VERSION="+vars["VERSION"], "COMMIT="+vars["COMMIT"], "DATE="+vars["DATE"])
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n image: %v\n%s", err, out)
	}
	var makeBuild []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "go build") && strings.HasSuffix(line, "./cmd/magnum-gitops") {
			makeBuild = shellWords(t, line)
		}
	}
	if makeBuild == nil {
		t.Fatalf("make -n image runs no go build of ./cmd/magnum-gitops:\n%s", out)
	}
	_, stages := readDockerfile(t)
	var dockerBuild []string
	for _, s := range stages[:len(stages)-1] {
		for _, r := range s.instructions("RUN") {
			if strings.Contains(r, "go build") {
				dockerBuild = dockerGoBuild(t, s)
			}
		}
	}
	for i, w := range dockerBuild {
		dockerBuild[i] = os.Expand(w, func(k string) string { return vars[k] })
	}
	m, d := buildSettings(makeBuild), buildSettings(dockerBuild)
	if !reflect.DeepEqual(m, d) {
		t.Errorf("make image builds with\n  %q\nthe Dockerfile with\n  %q", m, d)
	}
	for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-trimpath", "ldflags -s", "ldflags -w",
		"ldflags -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Version=1.2.3",
		"ldflags -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Commit=c0ffee",
		"ldflags -X github.com/magnum-gitops/magnum-gitops/internal/buildinfo.Date=2026-11-28T09:12:48Z"} {
		if !slices.Contains(m, want) {
			t.Errorf("make image's build lacks %q: %q", want, m)
		}
	}
}

// buildSettings are what decides a go build's output: the environment it sets (but
// GOTOOLCHAIN, which only picks the toolchain), its flags and each -ldflags word, sorted;
// not the output path or the package.
func buildSettings(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "GOTOOLCHAIN="):
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			out = append(out, w)
		case w == "-o":
			i++
		case w == "-ldflags" && i+1 < len(words):
			i++
			out = append(out, ldflagsWords(words[i])...)
		case strings.HasPrefix(w, "-ldflags="):
			out = append(out, ldflagsWords(strings.TrimPrefix(w, "-ldflags="))...)
		case strings.HasPrefix(w, "-"):
			out = append(out, w)
		}
	}
	return sorted(out)
}

// ldflagsWords are -ldflags' flags, each with its value ("-X pkg.Var=v").
func ldflagsWords(s string) []string {
	var out []string
	f := strings.Fields(s)
	for i := 0; i < len(f); i++ {
		if f[i] == "-X" && i+1 < len(f) {
			out = append(out, "ldflags -X "+f[i+1])
			i++
			continue
		}
		out = append(out, "ldflags "+f[i])
	}
	return out
}

// shellWords splits a command line as sh would, for the quoting these files use: single
// and double quotes, no escapes, no expansion.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}
