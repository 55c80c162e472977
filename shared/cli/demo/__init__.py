"""``make demo``: the whole main job on one machine (``run``), in small modules.

``offline`` (corpus through ``binlake normalize``), ``traffic`` and ``controls``
(what is sent, and the ground truth), ``fleet`` (the service processes, stopped
by pid), ``pipeline`` (topics, services, following ``/metrics`` until the lake
caught up), ``scrape`` and ``progress`` (the live view), ``truth_check`` and
``summary`` (what the lake holds against the truth, ``binlake lake verify``).
"""
