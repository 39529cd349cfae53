package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestDockerfile runs the Dockerfile's own build command and checks the binary it gives,
// as far as this machine allows: it has no container daemon, and no base image is pulled
// offline. The image is scratch (hack/ociimage/dockerfile_test.go holds the rest of it to
// the OCI layout `make image` writes), so the binary must be static, stripped, and carry
// the version the build arguments give; and the image's user must be the Deployment's.
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
	var froms, runs []string
	var user string
	for _, line := range strings.Split(strings.ReplaceAll(string(data), "\\\n", " "), "\n") {
		instr, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			froms = append(froms, arg)
		case "RUN":
			runs = append(runs, arg)
		case "USER":
			user = arg
		}
	}
	if len(froms) == 0 || froms[len(froms)-1] != "scratch" {
		t.Fatalf("the final stage is %q, want scratch", froms)
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
	// The build arguments a release passes (the platform ones BuildKit sets: this machine's).
	cmd.Env = append(os.Environ(), "VERSION=1.2.3-test", "COMMIT=c0ffee", "DATE=2026-11-28T09:12:48Z", "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH)
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
			t.Error("the binary asks for a dynamic loader: scratch has none")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs %v: scratch has no libc", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary keeps its symbol table: the image's is stripped (-s -w)")
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("the binary is built with CGO_ENABLED=%s -trimpath=%s, want CGO off and -trimpath", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	// -trimpath keeps -ldflags out of the build information: the stamped values are looked
	// for in the binary itself.
	binData, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.2.3-test", "2026-11-28T09:12:48Z"} {
		if !bytes.Contains(binData, []byte(v)) {
			t.Errorf("the binary does not carry %q: the build arguments are not stamped (-X internal/buildinfo)", v)
		}
	}
	if b, err := exec.Command(bin, "--help").CombinedOutput(); err != nil {
		t.Errorf("%s --help: %v\n%s", bin, err, b)
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
