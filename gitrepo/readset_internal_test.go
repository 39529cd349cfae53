package gitrepo

import "testing"

// TestWriteSetTouches: what a chain wrote invalidates a change built ahead exactly when
// it may have changed something its builder read.
func TestWriteSetTouches(t *testing.T) {
	t.Parallel()
	written := []string{"clusters/ns/a/helmrelease.yaml", "top"}
	cases := []struct {
		name        string
		files, dirs []string
		want        bool
	}{
		{"nothing read", nil, nil, false},
		{"another file", []string{"clusters/ns/b/helmrelease.yaml"}, nil, false},
		{"the file written", []string{"clusters/ns/a/helmrelease.yaml"}, nil, true},
		{"the file, spelled loosely", []string{"/clusters/ns/a/helmrelease.yaml"}, nil, true},
		{"a directory above it read as a file", []string{"clusters/ns/a"}, nil, true},
		{"under a path written as a file", []string{"top/x.yaml"}, nil, true},
		{"a sibling directory listed", nil, []string{"clusters/ns/b"}, false},
		{"its directory listed", nil, []string{"clusters/ns/a"}, true},
		{"a directory above listed", nil, []string{"clusters"}, true},
		{"the whole tree listed", nil, []string{"."}, true},
		{"the root listed as empty", nil, []string{""}, true},
		{"a directory with the same prefix", nil, []string{"clusters/ns/a2"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ws writeSet
			ws.add(written)
			rs := &readSet{}
			for _, f := range tc.files {
				rs.file(f)
			}
			for _, d := range tc.dirs {
				rs.dir(d)
			}
			if got := ws.touches(rs); got != tc.want {
				t.Errorf("touches = %v, want %v", got, tc.want)
			}
		})
	}
	var empty writeSet
	if empty.touches(&readSet{dirs: []string{"."}}) {
		t.Error("an empty chain touches what was read")
	}
}
