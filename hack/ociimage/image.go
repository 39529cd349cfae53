package main

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// buildIndex is the image: one manifest per --binary, under one OCI index annotated like
// each image's configuration. Nothing is downloaded: the base is empty.
func buildIndex(o *options) (v1.ImageIndex, error) {
	ca, err := os.ReadFile(o.caCerts)
	if err != nil {
		return nil, fmt.Errorf("--ca-certificates: %w (Debian: apt-get install ca-certificates)", err)
	}
	baseFiles, err := baseEntries(ca)
	if err != nil {
		return nil, err
	}
	// The same bytes on every platform: one blob in the layout and the registry.
	base, err := layer(baseFiles, o.created)
	if err != nil {
		return nil, err
	}
	anns := labels(o.version, o.revision, o.source, o.created)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range o.binaries {
		img, err := platformImage(b, base, anns, o)
		if err != nil {
			return nil, err
		}
		p := b.platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	annotated, ok := mutate.Annotations(idx, anns).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("annotating the index: not an index")
	}
	return annotated, nil
}

// platformImage is one platform's image: the shared base layer, the binary's layer, and a
// configuration whose every timestamp is the commit's.
func platformImage(b platformBinary, base v1.Layer, anns map[string]string, o *options) (v1.Image, error) {
	bin, err := os.ReadFile(b.path)
	if err != nil {
		return nil, fmt.Errorf("--binary %s: %w", b.platform, err)
	}
	top, err := layer(binaryEntries(bin), o.created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.created}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/ociimage: CA certificates, /etc/passwd, /etc/group, /tmp",
		}},
		mutate.Addendum{Layer: top, MediaType: types.OCILayer, History: v1.History{
			Created: created, CreatedBy: "hack/ociimage: " + binaryPath,
		}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant, cfg.OSVersion = b.platform.OS, b.platform.Architecture, b.platform.Variant, b.platform.OSVersion
	cfg.Created = created
	cfg.Config = v1.Config{
		Entrypoint: entrypoint,
		Cmd:        defaultCmd,
		Env:        imageEnv,
		User:       imageUser,
		Labels:     anns,
	}
	return mutate.ConfigFile(img, cfg)
}
