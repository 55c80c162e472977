"""Code every binlake service uses: the canonical event, codecs, parsing, runtime, CLI."""
