"""One route from a vendor message to the unified topic's records: the ``Codec`` seam.

A codec turns one message (its bytes and Kafka coordinates) into a ``Normalized``
(the records to publish, grouped by table, op and event time, plus the heartbeats,
control kind and table-rule drops the metrics count) or a ``Rejected`` (the
dead-letter reason). It is built once at start-up by ``codec_for``: the
``PythonCodec``, the format's parser (``shared.parsing.registry``, Python), the
table rules, then the kernel's typed values, Avro encoding and record keys
(``shared.kernel``, Rust).

The Kafka runtime (``shared.kafka.runtime``), ``binlake normalize`` and the tests
all go through ``codec_for``: there is no second route to keep in step.
"""

from binlake.shared.normalize.codec import Codec, Normalized, Rows, codec_for
from binlake.shared.normalize.python_codec import PythonCodec, records_of
from binlake.shared.normalize.tables import TableFilter

__all__ = ["Codec", "Normalized", "PythonCodec", "Rows", "TableFilter", "codec_for", "records_of"]
