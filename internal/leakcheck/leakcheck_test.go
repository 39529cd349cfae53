package leakcheck

import (
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	t.Parallel()
	list, err := Secrets()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) < 5 {
		t.Fatalf("only %d secret values in the fixtures", len(list))
	}
	for _, tc := range []struct {
		name, data string
		found      bool
	}{
		{"clean", `{"level":"INFO","msg":"committed","cluster":"prod-a"}`, false},
		{"marker", "error: bad value fixture-appcred-secret-NOT-REAL-7f3a", true},
		{"key body line", "yaml: line 3: " + list[len(list)-1], true},
		{"pem header", "-----BEGIN EC PRIVATE KEY-----", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			what := Find([]byte(tc.data))
			if (what != "") != tc.found {
				t.Errorf("Find(%q) = %q, want found=%v", tc.data, what, tc.found)
			}
			for _, s := range list {
				if what != "" && strings.Contains(what, s) {
					t.Errorf("the description %q quotes the secret", what)
				}
			}
		})
	}
}
