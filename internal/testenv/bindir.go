package testenv

import (
	"os"
	"path/filepath"
)

// BinDir is where the binaries a hack script builds are: the directory envVar names (what
// the script prints on its last line), else the cache it builds into,
// ${XDG_CACHE_HOME:-~/.cache}/magnum-gitops/<parts...>; "" when neither can be told.
func BinDir(envVar string, parts ...string) string {
	if d := os.Getenv(envVar); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(append([]string{cache, "magnum-gitops"}, parts...)...)
}
