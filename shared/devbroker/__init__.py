"""The development and test Kafka broker (Apache Kafka jars from Maven Central, KRaft)."""
