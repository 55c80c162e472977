"""Debezium change events as JSON (standard connectors and OceanBase OMS Debezium / DebeziumFlatten)."""
