{{- define "te.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "te.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else if contains (include "te.name" .) .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "te.name" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "te.selectorLabels" -}}
app.kubernetes.io/name: {{ include "te.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "te.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "te.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "te.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "te.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The extender's image; a missing or malformed repository fails with what to set (the schema cannot word it). */}}
{{- define "te.image" -}}
{{- $repo := required "image.repository is required: the topology-extender image built from the Dockerfile, pushed where the cluster pulls it (README, Container image), e.g. --set image.repository=REGISTRY/topology-extender" .Values.image.repository }}
{{- if not (regexMatch "^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$" $repo) }}
{{- fail (printf "image.repository %q is not an image name: give REGISTRY/NAME in lower case, without scheme, tag or digest (the tag is image.tag), e.g. registry.example.com/topology-extender" $repo) }}
{{- end }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The DNS name kube-scheduler uses for the Service, and the certificate's serverName. */}}
{{- define "te.serviceHost" -}}
{{- printf "%s.%s.svc" (include "te.fullname" .) .Release.Namespace }}
{{- end }}

{{/* kube-scheduler's httpTimeout: the configured one, raised to cover a delegated bind's wait for its claims. */}}
{{- define "te.httpTimeoutSeconds" -}}
{{- $t := int .Values.schedulerExtender.httpTimeoutSeconds }}
{{- if .Values.delegateVolumeBinding }}{{ max $t (add (int .Values.extender.bindTimeoutSeconds) 30) }}{{ else }}{{ $t }}{{ end }}
{{- end }}

{{/*
The kube-scheduler image tag: scheduler.image.tag, else the release the end-to-end tests run for the cluster's minor
version (Chart.yaml's kubeVersion admits no other). Each has upstream's fix for pods that only an extender rejected
(kubernetes#122022, since v1.30.0): without it such a pod may wait up to 5 minutes after the cluster changes in its
favour.
*/}}
{{- define "te.schedulerImageTag" -}}
{{- $v := semver .Capabilities.KubeVersion.Version }}
{{- $tested := dict "1.35" "v1.35.4" "1.36" "v1.36.3" "1.37" "v1.37.2" }}
{{- .Values.scheduler.image.tag | default (get $tested (printf "%d.%d" $v.Major $v.Minor)) }}
{{- end }}

{{/*
Full delegation: kube-scheduler's volume plugins off at every extension point, so the extender alone filters, scores
and binds volumes. VolumeBinding alone is not enough: VolumeZone would then reject a pod with an unbound Immediate
claim with its own reason instead of upstream's. The per-cloud limits plugins (EBSLimits, GCEPDLimits,
AzureDiskLimits, CinderLimits) left the default profile in v1.31 and kube-scheduler in v1.32, before the versions
this chart supports.
*/}}
{{- define "te.volumePluginsOff" -}}
multiPoint:
  disabled:
    - name: VolumeBinding
    - name: VolumeZone
    - name: VolumeRestrictions
    - name: NodeVolumeLimits
{{- end }}

{{/* cert-manager issues the certificates (mode extender) when asked to, or when its API is installed. */}}
{{- define "te.useCertManager" -}}
{{- if or (eq .Values.tls.provider "cert-manager") (and (eq .Values.tls.provider "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1")) }}true{{ end }}
{{- end }}

{{/* The extender entry of a KubeSchedulerConfiguration; `urlPrefix` and `tlsConfig` come from the caller. */}}
{{- define "te.extenderVerbs" -}}
filterVerb: filter
prioritizeVerb: prioritize
preemptVerb: preempt
{{- if .Values.delegateVolumeBinding }}
bindVerb: bind
{{- end }}
weight: {{ .Values.schedulerExtender.weight }}
nodeCacheCapable: true
httpTimeout: {{ include "te.httpTimeoutSeconds" . }}s
ignorable: {{ .Values.schedulerExtender.ignorable }}
{{- end }}

{{/*
Chart-generated PKI (provider helm), made once per render and kept across upgrades: the CA, serving and client
certificates already in the cluster are reused, so kube-scheduler's caData and client certificate stay valid.
Returns YAML with caCert, caKey, cert, key, clientCert, clientKey (PEM).
*/}}
{{- define "te.generatedPki" -}}
{{- if not (hasKey .Values "_generatedPki") }}
{{- $fullname := include "te.fullname" . }}
{{- $host := include "te.serviceHost" . }}
{{- $days := int .Values.tls.validityDays }}
{{- $caSecret := lookup "v1" "Secret" .Release.Namespace (printf "%s-ca" $fullname) }}
{{- $tlsSecret := lookup "v1" "Secret" .Release.Namespace (printf "%s-tls" $fullname) }}
{{- $clientSecret := lookup "v1" "Secret" .Release.Namespace (printf "%s-scheduler-client" $fullname) }}
{{- $ca := dict }}
{{- if and $caSecret $caSecret.data }}
{{- $ca = buildCustomCert (index $caSecret.data "tls.crt") (index $caSecret.data "tls.key") }}
{{- else }}
{{- $ca = genCA (printf "%s-ca" $fullname) $days }}
{{- end }}
{{- $pki := dict "caCert" $ca.Cert "caKey" $ca.Key }}
{{- if and $caSecret $tlsSecret $tlsSecret.data }}
{{- $_ := set $pki "cert" (index $tlsSecret.data "tls.crt" | b64dec) }}
{{- $_ := set $pki "key" (index $tlsSecret.data "tls.key" | b64dec) }}
{{- else }}
{{- $names := list $host (printf "%s.%s" $fullname .Release.Namespace) $fullname (printf "%s.cluster.local" $host) }}
{{- $cert := genSignedCert $host nil $names $days $ca }}
{{- $_ := set $pki "cert" $cert.Cert }}
{{- $_ := set $pki "key" $cert.Key }}
{{- end }}
{{- if and $caSecret $clientSecret $clientSecret.data }}
{{- $_ := set $pki "clientCert" (index $clientSecret.data "tls.crt" | b64dec) }}
{{- $_ := set $pki "clientKey" (index $clientSecret.data "tls.key" | b64dec) }}
{{- else }}
{{- $client := genSignedCert "kube-scheduler" nil nil $days $ca }}
{{- $_ := set $pki "clientCert" $client.Cert }}
{{- $_ := set $pki "clientKey" $client.Key }}
{{- end }}
{{- $_ := set .Values "_generatedPki" $pki }}
{{- end }}
{{- toYaml .Values._generatedPki }}
{{- end }}

{{/*
Where the pods go: spread one per node (DoNotSchedule by hostname; nodeTaintsPolicy Honor leaves out cordoned and
tainted nodes, so a drain does not wait on them; matchLabelKeys pod-template-hash counts a rollout's new pods apart from
the old ones, so the surge pod finds a node), a priority class, and the scheduler that places them.
*/}}
{{- define "te.podScheduling" -}}
{{- with .Values.podSchedulerName }}
schedulerName: {{ . }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
topologySpreadConstraints:
{{- if .Values.topologySpreadConstraints }}
  {{- toYaml .Values.topologySpreadConstraints | nindent 2 }}
{{- else }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: DoNotSchedule
    nodeTaintsPolicy: Honor
    matchLabelKeys: [pod-template-hash]
    labelSelector:
      matchLabels:
        {{- include "te.selectorLabels" . | nindent 8 }}
{{- end }}
{{- end }}

{{/* kube-scheduler waits at most httpTimeout for a verb: the pod's grace covers it, with a margin (values.yaml). */}}
{{- define "te.terminationGraceSeconds" -}}
{{- add (include "te.httpTimeoutSeconds" . | int) .Values.extender.terminationGraceMarginSeconds }}
{{- end }}

{{/* The extender's own shutdown limit: within the pod's grace, so the process ends before kubelet kills it. */}}
{{- define "te.shutdownGraceSeconds" -}}
{{- add (include "te.httpTimeoutSeconds" . | int) 5 }}
{{- end }}

{{/* Value combinations the schema cannot express. */}}
{{- define "te.validate" -}}
{{- $default := or (not .Values.podSchedulerName) (eq .Values.podSchedulerName "default-scheduler") }}
{{- if and (eq .Values.mode "extender") (lt (int .Values.replicaCount) 2) (not .Values.schedulerExtender.ignorable) $default }}
{{- fail "replicaCount: 1 in mode extender with ignorable: false cannot recover: once its pod is evicted, the replacement needs the extender to be scheduled. Run 2 or more replicas (or set podSchedulerName to a scheduler that does not call the extender)" }}
{{- end }}
{{- $cm := .Values.tls.certManager }}
{{- range $pair := list (list "caRenewBefore" "caDuration") (list "renewBefore" "duration") }}
{{- $before := index $cm (index $pair 0) | trimSuffix "h" | int }}
{{- $life := index $cm (index $pair 1) | trimSuffix "h" | int }}
{{- if ge $before $life }}
{{- fail (printf "tls.certManager.%s (%dh) must be shorter than tls.certManager.%s (%dh)" (index $pair 0) $before (index $pair 1) $life) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The extender container's settings shared by both modes. */}}
{{- define "te.extenderArgs" -}}
- --port={{ .Values.extender.port }}
- --log-level={{ .Values.extender.logLevel }}
- --bind-timeout-seconds={{ .Values.extender.bindTimeoutSeconds }}
- --shutdown-grace-seconds={{ include "te.shutdownGraceSeconds" . }}
{{- if .Values.delegateVolumeBinding }}
{{- /* explain's and the pending report's line is then a fully delegated kube-scheduler's */}}
- --delegated-volume-binding
{{- end }}
{{- if .Values.pendingReport.enabled }}
- --pending-report
{{- else }}
- --no-pending-report
{{- end }}
{{- range .Values.extender.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* The series of this release, as the ServiceMonitor labels them (job: the Service's name). */}}
{{- define "te.metricSelector" -}}
job="{{ include "te.fullname" . }}",namespace="{{ .Release.Namespace }}"
{{- end }}
