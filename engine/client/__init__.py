"""Clients shaped like confluent-kafka's: Producer, Consumer, Message, TopicPartition."""
