"""binlake: vendor CDC messages -> one canonical Avro change event on Kafka -> Delta Lake, exactly once.

One top-level name for everything binlake installs, so importing it cannot collide with another
project's ``shared`` or ``services``. The sources keep the repository's layout: ``binlake.shared``,
``binlake.services`` and ``binlake.spark_sink`` are the repository's ``shared/``, ``services/`` and
``spark_sink/`` folders (linked here; a wheel holds them as ``binlake/shared/...``).
"""
