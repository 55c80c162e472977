"""Rows flattened by Debezium's ExtractNewRecordState SMT (OceanBase OMS "DebeziumSmt")."""
