"""Huawei Cloud DRS Avro Kafka messages, decoded with the user's record schema."""
