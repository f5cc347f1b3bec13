{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "herald.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels selecting the release's pods (Service, PodDisruptionBudget, Deployment). */}}
{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "herald.labels" -}}
{{ include "herald.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The Secret holding HERALD_STORE and HERALD_ADMIN_KEY, and its keys. Refuses to
render without either an existing Secret or both values of the chart's own. */}}
{{- define "herald.secretName" -}}
{{- if .Values.existingSecret.name -}}
{{- .Values.existingSecret.name -}}
{{- else -}}
{{- $url := required "postgresURL is required (a postgres:// URL; replicas cannot share the embedded SQLite store), or set existingSecret.name" .Values.postgresURL -}}
{{- if not (regexMatch "^postgres(ql)?://" $url) -}}
{{- fail (printf "postgresURL must be a postgres:// or postgresql:// URL, not %q" (regexReplaceAll "//[^@/]*@" $url "//****@")) -}}
{{- end -}}
{{- $key := required "adminKey is required (24 to 512 characters), or set existingSecret.name" .Values.adminKey -}}
{{- if or (lt (len $key) 24) (gt (len $key) 512) -}}
{{- fail (printf "adminKey must have 24 to 512 characters, not %d" (len $key)) -}}
{{- end -}}
{{- include "herald.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "herald.postgresURLKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.postgresURLKey }}{{ else }}postgres-url{{ end -}}
{{- end -}}

{{- define "herald.adminKeyKey" -}}
{{- if .Values.existingSecret.name }}{{ .Values.existingSecret.adminKeyKey }}{{ else }}admin-key{{ end -}}
{{- end -}}
