"""Huawei Cloud DRS JSON and JSON-C Kafka messages."""
