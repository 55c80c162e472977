"""The Kafka runtime every normalizer uses: exactly-once consume-transform-produce on aiokafka."""
