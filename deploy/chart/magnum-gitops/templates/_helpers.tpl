{{/* The chart's name. */}}
{{- define "magnum-gitops.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: the release's, unless it lacks the chart's name. */}}
{{- define "magnum-gitops.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What selects the pods: stable across upgrades. */}}
{{- define "magnum-gitops.selectorLabels" -}}
app.kubernetes.io/name: {{ include "magnum-gitops.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every object's labels. */}}
{{- define "magnum-gitops.labels" -}}
{{ include "magnum-gitops.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "magnum-gitops.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "magnum-gitops.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "magnum-gitops.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Where the pod finds what serve reads. */}}
{{- define "magnum-gitops.configDir" -}}/etc/magnum-gitops{{- end -}}
{{- define "magnum-gitops.secretsDir" -}}/etc/magnum-gitops/secrets{{- end -}}
{{- define "magnum-gitops.tlsDir" -}}/etc/magnum-gitops/tls{{- end -}}
{{- define "magnum-gitops.cacheDir" -}}/var/cache/magnum-gitops{{- end -}}

{{/*
The TLS Secret (kubernetes.io/tls): tls.secretName, else <fullname>-tls; the one
cert-manager issues into with tls.certManager.enabled, or one the operator creates.
*/}}
{{- define "magnum-gitops.tlsSecretName" -}}
{{- .Values.tls.secretName | default (printf "%s-tls" (include "magnum-gitops.fullname" .)) -}}
{{- end -}}

{{/*
The API's port in the pod: 8443 for HTTPS, 8080 for plain HTTP (tls.enabled=false). The
Service's is service.port, else the same.
*/}}
{{- define "magnum-gitops.apiContainerPort" -}}
{{- ternary 8443 8080 .Values.tls.enabled -}}
{{- end -}}
{{- define "magnum-gitops.apiServicePort" -}}
{{- .Values.service.port | default (include "magnum-gitops.apiContainerPort" .) -}}
{{- end -}}

{{/*
The Secret references serve reads, as a list of {value, name, key, path}: the value that
names it, the Secret, its key, and the file it becomes under secretsDir. Missing required
references fail the render here, naming the value.
*/}}
{{- define "magnum-gitops.secretFiles" -}}
{{- $s := .Values.secrets -}}
{{- $out := list -}}
{{- $name := required "secrets.apiToken.name: the existing Secret holding the API bearer token is required (kubectl create secret generic NAME --from-file=api-token=./api-token)" $s.apiToken.name -}}
{{- $out = append $out (dict "value" "secrets.apiToken" "name" $name "key" $s.apiToken.key "path" "api-token") -}}
{{- if $s.gitSSHKey.name -}}
{{- $out = append $out (dict "value" "secrets.gitSSHKey" "name" $s.gitSSHKey.name "key" $s.gitSSHKey.key "path" "ssh-key") -}}
{{- $out = append $out (dict "value" "secrets.gitSSHKey" "name" $s.gitSSHKey.name "key" $s.gitSSHKey.knownHostsKey "path" "known_hosts") -}}
{{- end -}}
{{- if or $s.gitToken.name (not $s.gitSSHKey.name) -}}
{{- $name = required "secrets.gitToken.name: the existing Secret holding the Git token is required (or set secrets.gitSSHKey.name)" $s.gitToken.name -}}
{{- $out = append $out (dict "value" "secrets.gitToken" "name" $name "key" $s.gitToken.key "path" "git-token") -}}
{{- end -}}
{{- $name = required "secrets.digestKey.name: the existing Secret holding the SOPS digest key is required (at least 32 bytes: head -c 32 /dev/urandom | base64)" $s.digestKey.name -}}
{{- $out = append $out (dict "value" "secrets.digestKey" "name" $name "key" $s.digestKey.key "path" "digest-key") -}}
{{- if $s.signingKey.name -}}
{{- $out = append $out (dict "value" "secrets.signingKey" "name" $s.signingKey.name "key" $s.signingKey.key "path" "signing-key") -}}
{{- end -}}
{{- if $s.cloudsYAML.name -}}
{{- $out = append $out (dict "value" "secrets.cloudsYAML" "name" $s.cloudsYAML.name "key" $s.cloudsYAML.key "path" "clouds.yaml") -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/*
The --config file: .Values.config with the keys that depend on the pod set by the chart.
Those keys are refused in .Values.config, naming the value that sets them.
*/}}
{{- define "magnum-gitops.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- $owned := dict
  "serve.listen" "the pod's api port: 8443, 8080 with tls.enabled=false"
  "serve.allow_plain_http" "tls.enabled=false"
  "serve.ops_listen" "the pod's ops port, 8081"
  "serve.token_files" "secrets.apiToken"
  "serve.tls" "tls.enabled"
  "serve.leader_election" "leaderElection"
  "git.cache_dir" "the cache volume"
  "git.auth.token_file" "secrets.gitToken"
  "git.auth.ssh_key_file" "secrets.gitSSHKey"
  "git.auth.known_hosts_file" "secrets.gitSSHKey"
  "git.signing_key_file" "secrets.signingKey"
  "sops.digest_key_file" "secrets.digestKey"
  "openstack.clouds_file" "secrets.cloudsYAML" -}}
{{- range $path := keys $owned | sortAlpha -}}
{{- $cur := $cfg -}}
{{- $found := true -}}
{{- range $k := splitList "." $path -}}
{{- if and $found (kindIs "map" $cur) (hasKey $cur $k) -}}
{{- $cur = index $cur $k -}}
{{- else -}}
{{- $found = false -}}
{{- end -}}
{{- end -}}
{{- if $found -}}
{{- fail (printf "config.%s: set by the chart (%s); remove it from config" $path (index $owned $path)) -}}
{{- end -}}
{{- end -}}
{{- $url := dig "git" "url" "" $cfg -}}
{{- if not $url -}}
{{- fail "config.git.url: the Git repository serve commits to is required" -}}
{{- end -}}
{{- if and (not (dig "sops" "age_recipients" list $cfg)) (not (has "--insecure-plaintext-secrets" .Values.extraArgs)) -}}
{{- fail "config.sops.age_recipients: at least one age public key (Flux's) is required" -}}
{{- end -}}
{{- $dir := include "magnum-gitops.secretsDir" . -}}
{{- $files := dict -}}
{{- range $f := include "magnum-gitops.secretFiles" . | fromJsonArray -}}
{{- $_ := set $files $f.path (printf "%s/%s" $dir $f.path) -}}
{{- end -}}
{{- $git := get $cfg "git" -}}
{{- $_ := set $git "cache_dir" (include "magnum-gitops.cacheDir" .) -}}
{{- $auth := get $git "auth" | default dict -}}
{{- if hasKey $files "git-token" }}{{ $_ := set $auth "token_file" (get $files "git-token") }}{{ end -}}
{{- if hasKey $files "ssh-key" }}{{ $_ := set $auth "ssh_key_file" (get $files "ssh-key") }}{{ $_ := set $auth "known_hosts_file" (get $files "known_hosts") }}{{ end -}}
{{- $_ := set $git "auth" $auth -}}
{{- if hasKey $files "signing-key" }}{{ $_ := set $git "signing_key_file" (get $files "signing-key") }}{{ end -}}
{{- $sops := get $cfg "sops" | default dict -}}
{{- $_ := set $sops "digest_key_file" (get $files "digest-key") -}}
{{- $_ := set $cfg "sops" $sops -}}
{{- if hasKey $files "clouds.yaml" -}}
{{- $os := get $cfg "openstack" | default dict -}}
{{- $_ := set $os "clouds_file" (get $files "clouds.yaml") -}}
{{- $_ := set $cfg "openstack" $os -}}
{{- end -}}
{{- $serve := get $cfg "serve" | default dict -}}
{{- $_ := set $serve "listen" (printf ":%s" (include "magnum-gitops.apiContainerPort" .)) -}}
{{- $_ := set $serve "ops_listen" ":8081" -}}
{{- $_ := set $serve "token_files" (list (get $files "api-token")) -}}
{{- $_ := set $serve "leader_election" (dict "namespace" .Release.Namespace "name" (default (include "magnum-gitops.fullname" .) .Values.leaderElection.leaseName)) -}}
{{- if .Values.tls.enabled -}}
{{- $tlsDir := include "magnum-gitops.tlsDir" . -}}
{{- $tls := dict "cert_file" (printf "%s/tls.crt" $tlsDir) "key_file" (printf "%s/tls.key" $tlsDir) -}}
{{- if .Values.tls.clientCA }}{{ $_ := set $tls "client_ca_file" (printf "%s/ca.crt" $tlsDir) }}{{ end -}}
{{- $_ := set $serve "tls" $tls -}}
{{- else -}}
{{- /* The explicit opt-out: plain HTTP on every address of the pod, for a TLS-terminating
proxy or ingress in front; serve logs a warning at start. */ -}}
{{- $_ := set $serve "allow_plain_http" true -}}
{{- end -}}
{{- $_ := set $cfg "serve" $serve -}}
{{- toYaml $cfg -}}
{{- end -}}
