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
  value: {{ $value | toString | quote }}
{{- end }}
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
