"""The canonical change event: model, values and Avro schemas."""
