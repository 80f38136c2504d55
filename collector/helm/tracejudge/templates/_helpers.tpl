{{/* Names and labels shared by every object of the release. */}}
{{- define "tracejudge.name" -}}
{{- printf "%s-tracejudge" .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "tracejudge.labels" -}}
app.kubernetes.io/name: tracejudge
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tracejudge.selector" -}}
app.kubernetes.io/name: tracejudge
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Fail fast on values that would run an open or a useless collector. */}}
{{- define "tracejudge.validate" -}}
{{- if and (not .Values.auth.existingSecret) (not .Values.auth.insecureNoAuth) -}}
{{- fail "auth.existingSecret is required: pods listen on 0.0.0.0, so the receivers need bearer tokens (set auth.insecureNoAuth=true only inside a trusted mesh)" -}}
{{- end -}}
{{- if and (not .Values.rules) (not .Values.rulesConfigMap) -}}
{{- fail "rules (inline) or rulesConfigMap is required: a collector without rules judges nothing" -}}
{{- end -}}
{{- end -}}
