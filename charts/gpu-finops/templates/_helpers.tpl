{{/* The chart's name, shortened to the 63 characters a label value may have. */}}
{{- define "gpu-finops.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* <release>-<chart>, or the release name when it already holds the chart's name. */}}
{{- define "gpu-finops.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpu-finops.collectorName" -}}
{{- printf "%s-collector" (include "gpu-finops.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpu-finops.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpu-finops
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The collector's objects: the common labels and its name. */}}
{{- define "gpu-finops.collectorLabels" -}}
{{ include "gpu-finops.labels" . }}
app.kubernetes.io/name: {{ include "gpu-finops.collectorName" . }}
{{- end }}

{{/* The collector's pods: what the Deployment and the Service select on. */}}
{{- define "gpu-finops.collectorSelector" -}}
app.kubernetes.io/name: {{ include "gpu-finops.collectorName" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gpu-finops.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-finops.collectorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* A rule file from files/, parsed; a file that is not YAML fails the render naming it. */}}
{{- define "gpu-finops.ruleGroups" -}}
{{- $doc := .root.Files.Get .path | fromYaml }}
{{- if hasKey $doc "Error" }}
{{- fail (printf "%s is not a valid rule file: %s" .path $doc.Error) }}
{{- end }}
{{- if not (kindIs "slice" $doc.groups) }}
{{- fail (printf "%s: expected a top-level `groups:` list (a Prometheus rule file)" .path) }}
{{- end }}
{{- toYaml $doc.groups }}
{{- end }}

{{/* true when the rules render as a PrometheusRule (mode prometheusRule, or auto with the CRD served). */}}
{{- define "gpu-finops.rulesAsPrometheusRule" -}}
{{- if eq .Values.rules.mode "prometheusRule" }}true
{{- else if and (eq .Values.rules.mode "auto") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/PrometheusRule") }}true
{{- end }}
{{- end }}

{{/* The diagnosis exporter's objects (templates/diagnosis.yaml): its name, labels and selector. */}}
{{- define "gpu-finops.diagnosisName" -}}
{{- printf "%s-diagnosis" (include "gpu-finops.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gpu-finops.diagnosisLabels" -}}
{{ include "gpu-finops.labels" . }}
app.kubernetes.io/name: {{ include "gpu-finops.diagnosisName" . }}
{{- end }}

{{- define "gpu-finops.diagnosisSelector" -}}
app.kubernetes.io/name: {{ include "gpu-finops.diagnosisName" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
