// Command chart is the Makefile's Helm, through the Helm SDK in go.mod (no helm binary to
// download): `make chart` lints and packages deploy/chart/magnum-gitops, `make
// deploy-manifests` writes deploy/service from it.
//
//	go run ./hack/chart package -version 0.2.0 -date 2026-11-28T09:00:00Z -out bin
//	go run ./hack/chart manifests -out deploy/service
package main

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/magnum-gitops/magnum-gitops/internal/servicechart"
)

func main() {
	if len(os.Args) < 2 {
		fail(2, errors.New("usage: chart package|manifests [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "package":
		err = packageChart(os.Args[2:])
	case "manifests":
		err = manifests(os.Args[2:])
	default:
		fail(2, fmt.Errorf("unknown command %q: package or manifests", os.Args[1]))
	}
	if err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "chart:", err)
	os.Exit(code)
}

// packageChart lints the chart with each of its ci/ values files and packages it.
func packageChart(args []string) error {
	fs := flag.NewFlagSet("package", flag.ExitOnError)
	version := fs.String("version", "", "the chart's version and appVersion (the VERSION file)")
	date := fs.String("date", "", "the archive's file times, RFC 3339 (the commit's date)")
	out := fs.String("out", "bin", "the directory the package is written to")
	_ = fs.Parse(args)
	if *version == "" {
		fail(2, errors.New("-version: required"))
	}
	modTime, err := time.Parse(time.RFC3339, *date)
	if err != nil {
		fail(2, fmt.Errorf("-date: %w", err))
	}
	ciValues, _ := filepath.Glob(filepath.Join(servicechart.Dir, "ci", "*-values.yaml"))
	for _, f := range ciValues {
		vals, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return err
		}
		if _, err := servicechart.Lint(".", servicechart.DeployNamespace, vals); err != nil {
			return fmt.Errorf("with %s:\n%w", f, err)
		}
	}
	path, err := servicechart.Package(".", *version, modTime, *out)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}

// manifests writes deploy/service: the files of servicechart.DeployManifests, and no other
// YAML file.
func manifests(args []string) error {
	fs := flag.NewFlagSet("manifests", flag.ExitOnError)
	out := fs.String("out", "deploy/service", "the directory the manifests are written to")
	_ = fs.Parse(args)
	ch, err := servicechart.Load(".")
	if err != nil {
		return err
	}
	files, err := servicechart.DeployManifests(".", ch)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(*out, "*.yaml"))
	for _, f := range old {
		if _, keep := files[filepath.Base(f)]; !keep {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*out, n), []byte(files[n]), 0o644); err != nil {
			return err
		}
		fmt.Println(filepath.Join(*out, n), strings.Count(files[n], "\n---\n"), "objects")
	}
	return nil
}
