"""One route from a vendor message to the unified topic's records: the ``Codec`` seam.

A codec turns one message (its bytes and Kafka coordinates) into a ``Normalized``
(the records to publish, grouped by table, op and event time, plus the heartbeats,
control kind and table-rule drops the metrics count) or a ``Rejected`` (the
dead-letter reason). It is chosen once at start-up by ``codec_for``:

- ``PythonCodec``: the format's parser (``shared.parsing.registry``), the table
  rules, the Avro encoding and the record keys; the specification of every format.
- ``NativeCodec``: the format's fast lane (``shared.kernel``, Rust) with the
  ``PythonCodec`` behind it for every message the lane leaves (it says why:
  ``Normalized.lane``). Its records are the Python codec's, byte for byte.

The Kafka runtime (``shared.kafka.runtime``), ``binlake normalize`` and the tests
all go through ``codec_for``: there is no second route to keep in step.
"""

from binlake.shared.normalize.codec import Codec, Normalized, Rows, codec_for
from binlake.shared.normalize.python_codec import PythonCodec, records_of
from binlake.shared.normalize.tables import TableFilter

__all__ = ["Codec", "Normalized", "PythonCodec", "Rows", "TableFilter", "codec_for", "records_of"]
