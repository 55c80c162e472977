{{/* Chart name. */}}
{{- define "binlake.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name. */}}
{{- define "binlake.fullname" -}}
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

{{- define "binlake.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "binlake.labels" -}}
helm.sh/chart: {{ include "binlake.chart" . }}
{{ include "binlake.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "binlake.selectorLabels" -}}
app.kubernetes.io/name: {{ include "binlake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Resource name of one normalizer: dict "root" $ "n" <normalizer>. */}}
{{- define "binlake.normalizer.fullname" -}}
{{- printf "%s-%s" (include "binlake.fullname" .root) .n.name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Selector labels of one normalizer's pods. */}}
{{- define "binlake.normalizer.selectorLabels" -}}
{{ include "binlake.selectorLabels" .root }}
app.kubernetes.io/component: normalizer
binlake.io/normalizer: {{ .n.name }}
{{- end }}

{{/* All labels of one normalizer's resources. */}}
{{- define "binlake.normalizer.labels" -}}
{{ include "binlake.labels" .root }}
app.kubernetes.io/component: normalizer
binlake.io/normalizer: {{ .n.name }}
binlake.io/format: {{ .n.format }}
{{- end }}

{{/* Consumer group of one normalizer (also the prefix of its transactional ids). */}}
{{- define "binlake.normalizer.groupId" -}}
{{- .n.groupId | default (printf "binlake-normalizer-%s" .n.format) }}
{{- end }}

{{- define "binlake.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{- define "binlake.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "binlake.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Fail early on values binlake would reject at start-up. */}}
{{- define "binlake.validate" -}}
{{- $k := .Values.kafka }}
{{- if not (has $k.securityProtocol (list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL")) }}
{{- fail (printf "kafka.securityProtocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not %q" $k.securityProtocol) }}
{{- end }}
{{- if and (hasPrefix "SASL_" $k.securityProtocol) (not $k.sasl.existingSecret) }}
{{- fail "kafka.securityProtocol is SASL_*: set kafka.sasl.existingSecret (a Secret with the SASL user name and password)" }}
{{- end }}
{{- if not .Values.normalizers }}
{{- fail "normalizers is empty: list at least one {name, format, inputTopics}" }}
{{- end }}
{{- $names := dict }}
{{- $groups := dict }}
{{- range .Values.normalizers }}
{{- if not .name }}{{ fail "every normalizer needs a name" }}{{ end }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .name) }}
{{- fail (printf "normalizer name %q: use lower-case letters, digits and dashes" .name) }}
{{- end }}
{{- if not .format }}{{ fail (printf "normalizer %s needs a format" .name) }}{{ end }}
{{- if not .inputTopics }}{{ fail (printf "normalizer %s needs inputTopics" .name) }}{{ end }}
{{- if hasKey $names .name }}{{ fail (printf "normalizer name %s is used twice" .name) }}{{ end }}
{{- $_ := set $names .name true }}
{{- $group := include "binlake.normalizer.groupId" (dict "n" .) }}
{{- if hasKey $groups $group }}
{{- fail (printf "normalizers %s and %s share the consumer group %s: give one a groupId" (get $groups $group) .name $group) }}
{{- end }}
{{- $_ := set $groups $group .name }}
{{- end }}
{{- end }}

{{/* The BINLAKE_* environment of one normalizer: dict "root" $ "n" <normalizer>. */}}
{{- define "binlake.normalizer.env" -}}
{{- $root := .root }}
{{- $n := .n }}
{{- $v := $root.Values }}
{{- $k := $v.kafka }}
{{- $env := dict
  "BINLAKE_FORMAT" $n.format
  "BINLAKE_INPUT_TOPICS" (join "," $n.inputTopics)
  "BINLAKE_OUTPUT_TOPIC" $v.outputTopic
  "BINLAKE_DLQ_TOPIC" $v.dlqTopic
  "BINLAKE_GROUP_ID" (include "binlake.normalizer.groupId" .)
  "BINLAKE_SOURCE_TIMEZONE" $v.sourceTimezone
  "BINLAKE_LOG_LEVEL" $v.logLevel
  "BINLAKE_BATCH_MAX_MESSAGES" $v.batchMaxMessages
  "BINLAKE_BATCH_MAX_MS" $v.batchMaxMs
  "BINLAKE_SESSION_TIMEOUT_MS" $v.sessionTimeoutMs
  "BINLAKE_METRICS_PORT" $v.metrics.port
  "BINLAKE_METRICS_HOST" "0.0.0.0"
  "BINLAKE_KAFKA_BOOTSTRAP_SERVERS" $k.bootstrapServers
  "BINLAKE_KAFKA_SECURITY_PROTOCOL" $k.securityProtocol
}}
{{- if hasPrefix "SASL_" $k.securityProtocol }}
{{- $_ := set $env "BINLAKE_KAFKA_SASL_MECHANISM" $k.sasl.mechanism }}
{{- end }}
{{- if and (has $k.securityProtocol (list "SSL" "SASL_SSL")) }}
{{- $_ := set $env "BINLAKE_KAFKA_SSL_CHECK_HOSTNAME" (ternary "true" "false" (ne (toString $k.ssl.checkHostname) "false")) }}
{{- if $k.ssl.existingSecret }}
{{- if $k.ssl.caKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_CAFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.caKey) }}{{ end }}
{{- if $k.ssl.certKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_CERTFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.certKey) }}{{ end }}
{{- if $k.ssl.keyKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_KEYFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.keyKey) }}{{ end }}
{{- end }}
{{- end }}
{{- $env = mergeOverwrite $env ($v.extraEnv | default dict) ($n.env | default dict) }}
{{- range $name, $value := $env }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- if hasPrefix "SASL_" $k.securityProtocol }}
- name: BINLAKE_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ $k.sasl.existingSecret }}
      key: {{ $k.sasl.usernameKey }}
- name: BINLAKE_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $k.sasl.existingSecret }}
      key: {{ $k.sasl.passwordKey }}
{{- end }}
{{- if and (has $k.securityProtocol (list "SSL" "SASL_SSL")) $k.ssl.existingSecret $k.ssl.keyPasswordKey }}
- name: BINLAKE_KAFKA_SSL_KEY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $k.ssl.existingSecret }}
      key: {{ $k.ssl.keyPasswordKey }}
{{- end }}
{{- end }}
