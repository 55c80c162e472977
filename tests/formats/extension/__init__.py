"""A format written outside binlake, only for tests: proof that one folder of Python is a format."""
