package argocd

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEnvFor(t *testing.T) {
	t.Parallel()
	a := &Argo{Redis: "127.0.0.1:1", RepoServer: "127.0.0.1:2", opts: Options{Reconciliation: 10 * time.Second, LogLevel: "debug"}}
	full := a.settings()
	for _, tc := range []struct {
		name    string
		process string
		data    map[string]map[string]string
		want    []string // entries the env must hold
		wantErr string
	}{
		{"controller", controllerName, full, []string{
			"ARGOCD_RECONCILIATION_TIMEOUT=10s", "ARGOCD_RECONCILIATION_JITTER=0s",
			"ARGOCD_APPLICATION_CONTROLLER_REPO_SERVER=127.0.0.1:2", "REDIS_SERVER=127.0.0.1:1",
			"ARGOCD_REPO_ERROR_GRACE_PERIOD_SECONDS=0s", "ARGOCD_APPLICATION_CONTROLLER_LOGLEVEL=debug",
		}, ""},
		{"repo-server", repoServerName, full, []string{
			"ARGOCD_RECONCILIATION_TIMEOUT=10s", "REDIS_SERVER=127.0.0.1:1", "ARGOCD_REPO_SERVER_LOGLEVEL=debug",
		}, ""},
		{"a bound key unset", controllerName, without(full, paramsConfigMapName, "controller.log.format"), nil,
			"ARGOCD_APPLICATION_CONTROLLER_LOGFORMAT from argocd-cmd-params-cm key controller.log.format"},
		{"a ConfigMap missing", repoServerName, without(full, configMapName, ""), nil, "ARGOCD_RECONCILIATION_TIMEOUT"},
		{"unknown process", "argocd-server", full, nil, "no env bindings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, err := envFor(tc.process, tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("envFor = %v, %v; want an error naming %s", env, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !slices.Contains(env, w) {
					t.Errorf("env %v lacks %s", env, w)
				}
			}
		})
	}
}

// without is a copy of data without key in configMap, or without the ConfigMap when key is "".
func without(data map[string]map[string]string, configMap, key string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for cm, d := range data {
		if cm == configMap && key == "" {
			continue
		}
		out[cm] = map[string]string{}
		for k, v := range d {
			if cm != configMap || k != key {
				out[cm][k] = v
			}
		}
	}
	return out
}

// TestSettingsDurations holds every duration the harness writes to a unit: Argo CD parses
// them with time.ParseDuration and keeps its default, with only a warning, for "180".
func TestSettingsDurations(t *testing.T) {
	t.Parallel()
	a := &Argo{opts: Options{Reconciliation: 10 * time.Second}}
	for cm, data := range a.settings() {
		for _, key := range []string{"timeout.reconciliation", "timeout.reconciliation.jitter", "controller.repo.error.grace.period.seconds"} {
			v, ok := data[key]
			if !ok {
				continue
			}
			if _, err := time.ParseDuration(v); err != nil {
				t.Errorf("%s %s = %q: %v", cm, key, v, err)
			}
		}
	}
}
