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

{{/* Image of one kind: dict "root" $ "kind" "normalizer"|"sink". */}}
{{- define "binlake.image" -}}
{{- $image := .root.Values.image }}
{{- printf "%s:%s" (get $image .kind).repository ($image.tag | default .root.Chart.AppVersion | toString) }}
{{- end }}

{{/* The normalizers as a list of dicts with their name (the map's key), skipping entries set to null. */}}
{{- define "binlake.normalizerList" -}}
{{- $list := list }}
{{- range $name, $spec := .Values.normalizers }}
{{- if $spec }}
{{- $list = append $list (merge (dict "name" $name) $spec) }}
{{- end }}
{{- end }}
{{- toJson $list }}
{{- end }}

{{/* Replicas of one normalizer: 0 is kept (a stopped normalizer), an absent value is 1. */}}
{{- define "binlake.normalizer.replicas" -}}
{{- if kindIs "invalid" .n.replicas }}1{{ else }}{{ .n.replicas }}{{ end }}
{{- end }}

{{/* Names of the Kafka Secrets, created by the chart or existing. */}}
{{- define "binlake.kafka.saslSecret" -}}
{{- .Values.kafka.sasl.existingSecret | default (printf "%s-kafka-sasl" (include "binlake.fullname" .)) }}
{{- end }}
{{- define "binlake.kafka.sslSecret" -}}
{{- .Values.kafka.ssl.existingSecret | default (ternary (printf "%s-kafka-tls" (include "binlake.fullname" .)) "" (not (empty .Values.kafka.ssl.files))) }}
{{- end }}

{{- define "binlake.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "binlake.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Fail early on values binlake would reject at start-up (values.schema.json checks types and keys). */}}
{{- define "binlake.validate" -}}
{{- $k := .Values.kafka }}
{{- if and (hasPrefix "SASL_" $k.securityProtocol) (not $k.sasl.existingSecret) (not (and $k.sasl.username $k.sasl.password)) }}
{{- fail "kafka.securityProtocol is SASL_*: set kafka.sasl.existingSecret, or kafka.sasl.username and kafka.sasl.password" }}
{{- end }}
{{- $groups := dict }}
{{- range (include "binlake.normalizerList" . | fromJsonArray) }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .name) }}
{{- fail (printf "normalizer name %q: use lower-case letters, digits and dashes" .name) }}
{{- end }}
{{- $group := include "binlake.normalizer.groupId" (dict "n" .) }}
{{- if hasKey $groups $group }}
{{- fail (printf "normalizers %s and %s share the consumer group %s: give one a groupId" (get $groups $group) .name $group) }}
{{- end }}
{{- $_ := set $groups $group .name }}
{{- end }}
{{- $sink := .Values.sink }}
{{- if and $sink.enabled (eq $sink.mode "spark-operator") (not $sink.lake.uri) }}
{{- fail "sink.mode spark-operator: set sink.lake.uri to an object store (s3a://, gs://, abfss://): the driver and executors share no disk" }}
{{- end }}
{{- end }}

{{/* The plain BINLAKE_KAFKA_* settings, as JSON (shared by the normalizers and the sink). */}}
{{- define "binlake.kafka.env" -}}
{{- $root := . }}
{{- $k := .Values.kafka }}
{{- $env := dict
  "BINLAKE_KAFKA_BOOTSTRAP_SERVERS" $k.bootstrapServers
  "BINLAKE_KAFKA_SECURITY_PROTOCOL" $k.securityProtocol
}}
{{- if hasPrefix "SASL_" $k.securityProtocol }}
{{- $_ := set $env "BINLAKE_KAFKA_SASL_MECHANISM" $k.sasl.mechanism }}
{{- end }}
{{- if has $k.securityProtocol (list "SSL" "SASL_SSL") }}
{{- $_ := set $env "BINLAKE_KAFKA_SSL_CHECK_HOSTNAME" (ternary "true" "false" (ne (toString $k.ssl.checkHostname) "false")) }}
{{- if include "binlake.kafka.sslSecret" $root }}
{{- if $k.ssl.caKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_CAFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.caKey) }}{{ end }}
{{- if $k.ssl.certKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_CERTFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.certKey) }}{{ end }}
{{- if $k.ssl.keyKey }}{{ $_ := set $env "BINLAKE_KAFKA_SSL_KEYFILE" (printf "%s/%s" $k.ssl.mountPath $k.ssl.keyKey) }}{{ end }}
{{- end }}
{{- end }}
{{- toJson $env }}
{{- end }}

{{/* The Kafka credentials from Secrets, as env entries (a list of valueFrom items). */}}
{{- define "binlake.kafka.secretEnv" -}}
{{- $k := .Values.kafka }}
{{- if hasPrefix "SASL_" $k.securityProtocol }}
- name: BINLAKE_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ include "binlake.kafka.saslSecret" . }}
      key: {{ $k.sasl.usernameKey }}
- name: BINLAKE_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "binlake.kafka.saslSecret" . }}
      key: {{ $k.sasl.passwordKey }}
{{- end }}
{{- if and (has $k.securityProtocol (list "SSL" "SASL_SSL")) (include "binlake.kafka.sslSecret" .) $k.ssl.keyPasswordKey }}
- name: BINLAKE_KAFKA_SSL_KEY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "binlake.kafka.sslSecret" . }}
      key: {{ $k.ssl.keyPasswordKey }}
{{- end }}
{{- end }}

{{/* name/value env entries of a dict (sorted by name). */}}
{{- define "binlake.envList" -}}
{{- range $name, $value := . }}
{{- if not (kindIs "invalid" $value) }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The BINLAKE_* environment of one normalizer: dict "root" $ "n" <normalizer>. */}}
{{- define "binlake.normalizer.env" -}}
{{- $root := .root }}
{{- $n := .n }}
{{- $v := $root.Values }}
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
}}
{{- $env = mergeOverwrite $env (include "binlake.kafka.env" $root | fromJson) ($v.extraEnv | default dict) ($n.env | default dict) }}
{{- include "binlake.envList" $env }}
{{- include "binlake.kafka.secretEnv" $root }}
{{- end }}

{{/* Where the sink's lake and checkpoints are: dict of the three URIs. */}}
{{- define "binlake.sink.locations" -}}
{{- $sink := .Values.sink }}
{{- $lake := $sink.lake.uri | default "/var/lib/binlake/lake" }}
{{- $onPvc := eq $sink.mode "local" }}
{{- $checkpoint := $sink.lake.checkpointUri | default (ternary "/var/lib/binlake/checkpoints/sink" "" $onPvc) }}
{{- $mirrors := $sink.lake.mirrorCheckpointUri | default (ternary "/var/lib/binlake/checkpoints/mirrors" "" $onPvc) }}
{{- toJson (dict "lake" $lake "checkpoint" $checkpoint "mirrors" $mirrors) }}
{{- end }}

{{/* The Spark settings of the sink for its object store (s3a), merged under sink.sparkConf. */}}
{{- define "binlake.sink.sparkConf" -}}
{{- $s3 := .Values.sink.objectStore.s3 }}
{{- $conf := dict }}
{{- if $s3.endpoint }}{{ $_ := set $conf "spark.hadoop.fs.s3a.endpoint" $s3.endpoint }}{{ end }}
{{- if $s3.region }}{{ $_ := set $conf "spark.hadoop.fs.s3a.endpoint.region" $s3.region }}{{ end }}
{{- if $s3.pathStyleAccess }}{{ $_ := set $conf "spark.hadoop.fs.s3a.path.style.access" "true" }}{{ end }}
{{- toJson (mergeOverwrite $conf (.Values.sink.sparkConf | default dict)) }}
{{- end }}

{{/* The BINLAKE_SINK_* environment of the sink (both modes), without the Kafka settings. */}}
{{- define "binlake.sink.envDict" -}}
{{- $sink := .Values.sink }}
{{- $where := include "binlake.sink.locations" . | fromJson }}
{{- $env := dict
  "BINLAKE_SINK_TOPIC" .Values.outputTopic
  "BINLAKE_SINK_LAKE_URI" $where.lake
  "BINLAKE_SINK_TRIGGER_INTERVAL_S" $sink.triggerIntervalS
  "BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S" $sink.mirrorTriggerIntervalS
  "BINLAKE_SINK_SHUFFLE_PARTITIONS" $sink.shufflePartitions
  "BINLAKE_SINK_LOG_LEVEL" $sink.logLevel
  "BINLAKE_SINK_METRICS_PORT" $sink.metrics.port
  "BINLAKE_SINK_METRICS_HOST" "0.0.0.0"
  "BINLAKE_SINK_SPARK_CONF" (include "binlake.sink.sparkConf" .)
}}
{{- if $where.checkpoint }}{{ $_ := set $env "BINLAKE_SINK_CHECKPOINT_URI" $where.checkpoint }}{{ end }}
{{- if $where.mirrors }}{{ $_ := set $env "BINLAKE_SINK_MIRROR_CHECKPOINT_URI" $where.mirrors }}{{ end }}
{{- if not (kindIs "invalid" $sink.maxOffsetsPerTrigger) }}
{{- $_ := set $env "BINLAKE_SINK_MAX_OFFSETS_PER_TRIGGER" $sink.maxOffsetsPerTrigger }}
{{- end }}
{{- toJson (mergeOverwrite $env (include "binlake.kafka.env" . | fromJson) ($sink.env | default dict)) }}
{{- end }}

{{/* Object-store credentials of the sink, as env entries. */}}
{{- define "binlake.sink.secretEnv" -}}
{{- $s3 := .Values.sink.objectStore.s3 }}
{{- if $s3.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ $s3.existingSecret }}
      key: {{ $s3.accessKeyKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $s3.existingSecret }}
      key: {{ $s3.secretKeyKey }}
{{- end }}
{{- include "binlake.kafka.secretEnv" . }}
{{- end }}

{{- define "binlake.sink.fullname" -}}
{{- printf "%s-sink" (include "binlake.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "binlake.sink.selectorLabels" -}}
{{ include "binlake.selectorLabels" . }}
app.kubernetes.io/component: sink
{{- end }}

{{- define "binlake.sink.labels" -}}
{{ include "binlake.labels" . }}
app.kubernetes.io/component: sink
{{- end }}
