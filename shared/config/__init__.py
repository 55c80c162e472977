"""Configuration of the binlake services: environment variables prefixed ``BINLAKE_``."""
