"""One normalizer per vendor format: ``services/<format>/parser.py`` holds its pure parser.

See ``shared.parsing.registry`` for how a format is plugged in.
"""
