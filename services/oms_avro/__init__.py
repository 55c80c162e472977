"""OceanBase OMS "Avro" serialization (the Alibaba DTS ``Record`` schema, plain Avro binary)."""
