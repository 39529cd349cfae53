// Command schema writes the JSON Schemas of the configuration and the ClusterEvent to
// docs/schemas (make schemas, from the module's root); internal/schema's test holds the
// files to the types.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/magnum-gitops/magnum-gitops/internal/schema"
)

func main() {
	dir := "docs/schemas"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for name, gen := range schema.Documents {
		b, err := gen()
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "schema: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
