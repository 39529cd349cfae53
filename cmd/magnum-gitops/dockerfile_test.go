package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfile runs the Dockerfile's own build command and checks what the image would
// hold, as far as this machine allows: it has no container daemon, and the base images
// cannot be pulled offline. The binary must be static (distroless/static has no libc),
// copied where ENTRYPOINT runs it, and run as the user the Deployment expects.
func TestDockerfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary with the image's flags (-trimpath: a build of its own)")
	}
	t.Parallel()
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var froms, runs, copies []string
	var user, entrypoint string
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		instr, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			froms = append(froms, arg)
		case "RUN":
			runs = append(runs, arg)
		case "COPY":
			copies = append(copies, arg)
		case "USER":
			user = arg
		case "ENTRYPOINT":
			entrypoint = arg
		}
	}
	if len(froms) == 0 || !strings.HasPrefix(froms[len(froms)-1], "gcr.io/distroless/static") {
		t.Fatalf("the final stage is %q, want a distroless/static base", froms)
	}

	// The build stage's go build, run here with its own flags and environment.
	build := regexp.MustCompile(`go build .*-o (\S+) \./cmd/magnum-gitops`)
	var out, cmdline string
	for _, r := range runs {
		if m := build.FindStringSubmatch(r); m != nil {
			out, cmdline = m[1], r
		}
	}
	if out == "" {
		t.Fatalf("no go build of ./cmd/magnum-gitops among the RUN instructions %q", runs)
	}
	bin := filepath.Join(t.TempDir(), "magnum-gitops")
	cmd := exec.Command("sh", "-c", strings.Replace(cmdline, "-o "+out, "-o "+bin, 1))
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary asks for a dynamic loader: distroless/static has none")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v: distroless/static has no libc", libs)
	}
	if b, err := exec.Command(bin, "--help").CombinedOutput(); err != nil {
		t.Errorf("%s --help: %v\n%s", bin, err, b)
	}

	// What the final stage copies is what ENTRYPOINT runs.
	var dst string
	for _, c := range copies {
		if f := strings.Fields(c); len(f) == 3 && strings.HasPrefix(f[0], "--from=") && f[1] == out {
			dst = f[2]
		}
	}
	if dst == "" || entrypoint != `["`+dst+`"]` {
		t.Errorf("COPY of %s lands at %q, ENTRYPOINT is %s", out, dst, entrypoint)
	}
	// The Deployment's pod runs as the image's user: a mismatch would make runAsNonRoot
	// and file ownership disagree.
	deploy, err := os.ReadFile(filepath.Join(root, "deploy", "service", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	uid, _, _ := strings.Cut(user, ":")
	if !strings.Contains(string(deploy), "runAsUser: "+uid+"\n") {
		t.Errorf("the image runs as %q, the Deployment not as user %s", user, uid)
	}
}
