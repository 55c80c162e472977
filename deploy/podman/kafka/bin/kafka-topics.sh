#!/bin/bash
exec java -Xmx256m -cp "/opt/kafka/libs/*" -Dlog4j2.configurationFile=/opt/kafka/bin/log4j2.xml org.apache.kafka.tools.TopicCommand "$@"
