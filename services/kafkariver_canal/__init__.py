"""KafkaRiverCanal: Canal binlog rows as one JSON message per changed row."""
