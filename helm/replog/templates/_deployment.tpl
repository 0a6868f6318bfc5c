{{/*
A stateless service container's own environment: ZooKeeper, the metrics port, the component's
entries, security and settings. (dict "root" $ "values" .Values.controller "env" (list of env entries))
*/}}
{{- define "replog.serviceEnv" -}}
{{- $root := .root -}}
- name: REPLOG_ZOOKEEPER_CONNECT
  value: {{ include "replog.zookeeperConnect" $root | quote }}
- name: REPLOG_METRICS_PORT
  value: {{ $root.Values.metrics.port | quote }}
{{- with .env }}
{{ toYaml . }}
{{- end }}
{{- include "replog.securityEnv" $root | nindent 0 }}
{{- include "replog.settingsEnv" (merge (dict) (default dict .values.config) (default dict $root.Values.config)) | nindent 0 }}
{{- end -}}

{{/*
A Deployment of one stateless replog service, for the controller and the metadata service:
(dict "root" $ "component" "controller" "values" .Values.controller "command" (list ...) "args" (list ...)
      "env" (list of env entries) "replicas" N "grpcService" "the gRPC service the probes ask for")
*/}}
{{- define "replog.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $selector := dict "root" $root "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "replog.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "replog.componentLabels" $selector | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" .replicas) }}
  replicas: {{ .replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "replog.componentSelector" $selector | nindent 6 }}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  template:
    metadata:
      labels:
        {{- include "replog.componentLabels" $selector | nindent 8 }}
      annotations:
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $root.Values.metrics.port | quote }}
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      {{- include "replog.podBasics" $root | nindent 6 }}
      automountServiceAccountToken: false
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector:
                  matchLabels:
                    {{- include "replog.componentSelector" $selector | nindent 20 }}
      containers:
        - name: {{ .component }}
          {{- include "replog.containerBasics" $root | nindent 10 }}
          command: {{ toJson .command }}
          {{- with .args }}
          args: {{ toJson . }}
          {{- end }}
          env:
            {{- $ownEnv := include "replog.serviceEnv" (dict "root" $root "values" $v "env" .env) }}
            {{- $ownEnv | nindent 12 }}
            {{- include "replog.extraEnv" (dict "where" (printf "%s.env" .component) "env" $v.env "own" $ownEnv) | nindent 12 }}
          ports:
            - {name: grpc, containerPort: {{ $v.port }}, protocol: TCP}
            - {name: metrics, containerPort: {{ $root.Values.metrics.port }}, protocol: TCP}
          startupProbe:
            {{- include "replog.grpcProbe" (dict "port" (int (include "replog.probePort" (dict "root" $root "port" $v.port))) "service" .grpcService "probe" (dict "periodSeconds" 2 "failureThreshold" 60)) | nindent 12 }}
          livenessProbe:
            {{- include "replog.grpcProbe" (dict "port" (int (include "replog.probePort" (dict "root" $root "port" $v.port))) "service" .grpcService "probe" (dict "periodSeconds" 10 "failureThreshold" 6)) | nindent 12 }}
          readinessProbe:
            {{- include "replog.grpcProbe" (dict "port" (int (include "replog.probePort" (dict "root" $root "port" $v.port))) "service" .grpcService "probe" (dict "periodSeconds" 5 "failureThreshold" 2)) | nindent 12 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          volumeMounts:
            - {name: tmp, mountPath: /tmp}
            {{- include "replog.securityMounts" $root | nindent 12 }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- include "replog.securityVolumes" $root | nindent 8 }}
{{- end -}}
