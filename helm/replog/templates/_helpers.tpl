{{/* Names */}}
{{- define "replog.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "replog.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "replog.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "replog.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "replog.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "replog.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "replog.selectorLabels" -}}
app.kubernetes.io/name: {{ include "replog.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of one component: (dict "root" $ "component" "broker") */}}
{{- define "replog.componentLabels" -}}
{{ include "replog.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "replog.componentSelector" -}}
{{ include "replog.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "replog.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "replog.brokerService" -}}
{{- printf "%s-broker" (include "replog.fullname" .) -}}
{{- end -}}

{{- define "replog.metadataService" -}}
{{- printf "%s-metadata" (include "replog.fullname" .) -}}
{{- end -}}

{{/* The address clients bootstrap from: the metadata Service. */}}
{{- define "replog.bootstrap" -}}
{{- printf "%s.%s.svc.%s:%d" (include "replog.metadataService" .) .Release.Namespace .Values.clusterDomain (int .Values.metadata.port) -}}
{{- end -}}

{{- define "replog.zookeeperHeadless" -}}
{{- printf "%s-zookeeper-headless" (include "replog.fullname" .) -}}
{{- end -}}

{{- define "replog.zookeeperConnect" -}}
{{- if .Values.zookeeper.enabled -}}
{{- $fullname := include "replog.fullname" . -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.zookeeper.replicas) -}}
{{- $hosts = append $hosts (printf "%s-zookeeper-%d.%s.%s.svc.%s:2181" $fullname $i (include "replog.zookeeperHeadless" $) $.Release.Namespace $.Values.clusterDomain) -}}
{{- end -}}
{{- join "," $hosts -}}
{{- else -}}
{{- .Values.zookeeper.external.connect -}}
{{- end -}}
{{- end -}}

{{/* Kafka-named settings as REPLOG_* variables: a map of name -> value. */}}
{{- define "replog.settingsEnv" -}}
{{- range $name, $value := . }}
- name: {{ printf "REPLOG_%s" ($name | upper | replace "." "_" | replace "-" "_") }}
  value: {{ include "replog.text" $value | quote }}
{{- end }}
{{- end -}}

{{/* A setting's value as the user wrote it: a values file's numbers arrive as float64, which Go
prints as 8.64e+07 from a million on, and no service reads that as a whole number. */}}
{{- define "replog.text" -}}
{{- if and (kindIs "float64" .) (eq . (floor .)) -}}{{ printf "%.0f" . }}{{- else -}}{{ toString . }}{{- end -}}
{{- end -}}

{{/* One word for /bin/sh, whatever it holds: 'it'\''s'. */}}
{{- define "replog.shellQuote" -}}
'{{ replace "'" "'\\''" (toString .) }}'
{{- end -}}

{{/* A Kubernetes quantity as a number, to compare two: "1Gi" -> 1073741824, "500m" -> 0.5. */}}
{{- define "replog.quantity" -}}
{{- $text := toString . -}}
{{- $suffix := regexFind "[KMGTPE]i$|[numkMGTPE]$" $text -}}
{{- $factors := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0
      "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "n" 1e-9 "u" 1e-6 "m" 1e-3 "k" 1e3 "M" 1e6
      "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 -}}
{{- mulf (float64 (trimSuffix $suffix $text)) (get $factors $suffix) -}}
{{- end -}}

{{/*
A broker container's own environment: its id, addresses, log directory, rack, security and settings.
(dict "root" $ "entry" (its brokers[] entry) "broker" (the entry over broker:) "name" (its StatefulSet) "service" (the headless Service))
*/}}
{{- define "replog.brokerEnv" -}}
{{- $root := .root -}}
{{- $b := .broker -}}
- name: REPLOG_BROKER_ID
  value: {{ .entry.id | quote }}
- name: REPLOG_ZOOKEEPER_CONNECT
  value: {{ include "replog.zookeeperConnect" $root | quote }}
- name: REPLOG_LISTENERS
  value: "0.0.0.0:{{ $b.port }}"
- name: REPLOG_ADVERTISED_LISTENERS
  value: "{{ .name }}-0.{{ .service }}.{{ $root.Release.Namespace }}.svc.{{ $root.Values.clusterDomain }}:{{ $b.port }}"
- name: REPLOG_METRICS_PORT
  value: {{ $root.Values.metrics.port | quote }}
- name: REPLOG_LOG_DIRS
  value: /var/lib/replog/data
{{- with $b.rack }}
- name: REPLOG_BROKER_RACK
  value: {{ . | quote }}
{{- end }}
{{- include "replog.securityEnv" $root | nindent 0 }}
{{- include "replog.settingsEnv" (merge (dict) (default dict $b.config) (default dict $root.Values.config)) | nindent 0 }}
{{- end -}}

{{/*
The environment variables a values file adds to a container (`env:`: Kubernetes EnvVar entries),
after the chart's own (`own`, their YAML). A name the chart sets already is refused: Kubernetes
would keep one of the two without a word.
(dict "where" "broker.env" "env" (the entries) "own" (the chart's entries, as YAML))
*/}}
{{- define "replog.extraEnv" -}}
{{- $own := list -}}
{{- range (.own | fromYamlArray) -}}
{{- $own = append $own .name -}}
{{- end -}}
{{- $given := list -}}
{{- range .env -}}
{{- if has .name $given -}}
{{- fail (printf "%s: %s appears twice; Kubernetes would keep one of the two" $.where .name) -}}
{{- end -}}
{{- $given = append $given .name -}}
{{- if and (hasKey . "value") (hasKey . "valueFrom") -}}
{{- fail (printf "%s: %s has both a value and a valueFrom; give one" $.where .name) -}}
{{- end -}}
{{- if has .name $own -}}
{{- if hasPrefix "REPLOG_" .name -}}
{{- fail (printf "%s: %s is set by the chart; give replog's settings under config, with Kafka's names (e.g. log.retention.ms), and remove it from %s" $.where .name $.where) -}}
{{- end -}}
{{- fail (printf "%s: %s is set by the chart; remove it from %s" $.where .name $.where) -}}
{{- end -}}
{{- end -}}
{{- with .env }}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* What every replog container shares: image, security, the writable /tmp. */}}
{{- define "replog.containerBasics" -}}
image: {{ include "replog.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- end -}}

{{- define "replog.podBasics" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* gRPC health probes on a port, for the service that must be SERVING:
(dict "port" 9092 "service" "replog.api.broker.v1.BrokerService" "probe" .Values.broker.livenessProbe) */}}
{{- define "replog.grpcProbe" -}}
grpc:
  port: {{ .port }}
  service: {{ .service }}
periodSeconds: {{ .probe.periodSeconds }}
failureThreshold: {{ .probe.failureThreshold }}
timeoutSeconds: 3
{{- end -}}

{{/* The Secret with tls.crt, tls.key and ca.crt. */}}
{{- define "replog.tlsSecret" -}}
{{- default (printf "%s-tls" (include "replog.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{/* The name the services are verified as: a SAN of their certificate. */}}
{{- define "replog.tlsServerName" -}}
{{- default (include "replog.fullname" .) .Values.tls.serverName -}}
{{- end -}}

{{/* How a client (a Job, a test) reaches a TLS cluster: the CA, the certificate, the name. */}}
{{- define "replog.clientSecurityEnv" -}}
{{- if .Values.tls.enabled }}
- {name: REPLOG_SSL_CAFILE, value: /etc/replog/tls/ca.crt}
- {name: REPLOG_SSL_CERTFILE, value: /etc/replog/tls/tls.crt}
- {name: REPLOG_SSL_KEYFILE, value: /etc/replog/tls/tls.key}
- {name: REPLOG_SSL_SERVER_NAME, value: {{ include "replog.tlsServerName" . | quote }}}
{{- end }}
{{- end -}}

{{/* TLS, the authorizer and ZooKeeper's credentials as settings of a service (docs/SECURITY.md). */}}
{{- define "replog.securityEnv" -}}
{{- if .Values.tls.enabled }}
- {name: REPLOG_SSL_CERTFILE, value: /etc/replog/tls/tls.crt}
- {name: REPLOG_SSL_KEYFILE, value: /etc/replog/tls/tls.key}
- {name: REPLOG_SSL_CAFILE, value: /etc/replog/tls/ca.crt}
- {name: REPLOG_SSL_CLIENT_AUTH, value: {{ .Values.tls.clientAuth | quote }}}
- {name: REPLOG_SSL_SERVER_NAME, value: {{ include "replog.tlsServerName" . | quote }}}
- {name: REPLOG_SSL_PRINCIPAL_MAPPING_RULES, value: {{ .Values.tls.principalMappingRules | quote }}}
- {name: REPLOG_HEALTH_PORT, value: {{ .Values.tls.healthPort | quote }}}
{{- end }}
{{- if .Values.authorizer.enabled }}
- {name: REPLOG_AUTHORIZER_CLASS_NAME, value: AclAuthorizer}
- {name: REPLOG_SUPER_USERS, value: {{ .Values.authorizer.superUsers | quote }}}
{{- end }}
{{- if .Values.zookeeper.auth.existingSecret }}
- {name: REPLOG_ZOOKEEPER_AUTH_DIGEST_FILE, value: /etc/replog/zookeeper/digest}
- {name: REPLOG_ZOOKEEPER_SET_ACL, value: "true"}
{{- end }}
{{- end -}}

{{- define "replog.securityMounts" -}}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/replog/tls, readOnly: true}
{{- end }}
{{- if .Values.zookeeper.auth.existingSecret }}
- {name: zookeeper-auth, mountPath: /etc/replog/zookeeper, readOnly: true}
{{- end }}
{{- end -}}

{{- define "replog.securityVolumes" -}}
{{- if .Values.tls.enabled }}
- name: tls
  secret: {secretName: {{ include "replog.tlsSecret" . | quote }}}
{{- end }}
{{- if .Values.zookeeper.auth.existingSecret }}
- name: zookeeper-auth
  secret:
    secretName: {{ .Values.zookeeper.auth.existingSecret | quote }}
    items: [{key: {{ .Values.zookeeper.auth.key | quote }}, path: digest}]
{{- end }}
{{- end -}}

{{/* The port the kubelet's probes ask: the plaintext health port under TLS, else the listener.
(dict "root" $ "port" 9092) */}}
{{- define "replog.probePort" -}}
{{- if .root.Values.tls.enabled -}}{{ .root.Values.tls.healthPort }}{{- else -}}{{ .port }}{{- end -}}
{{- end -}}

{{/* Under TLS the metrics ports speak HTTPS and, with clientAuth required, want the certificate too:
Prometheus Operator reads them from the chart's Secret. */}}
{{- define "replog.metricsTls" -}}
{{- if .Values.tls.enabled }}
scheme: https
tlsConfig:
  serverName: {{ include "replog.tlsServerName" . | quote }}
  ca: {secret: {name: {{ include "replog.tlsSecret" . | quote }}, key: ca.crt}}
  cert: {secret: {name: {{ include "replog.tlsSecret" . | quote }}, key: tls.crt}}
  keySecret: {name: {{ include "replog.tlsSecret" . | quote }}, key: tls.key}
{{- end }}
{{- end -}}
