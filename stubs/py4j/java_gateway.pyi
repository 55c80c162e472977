from typing import Any

class JavaClass:
    """A JVM class as py4j shows it (its static members by attribute)."""

    def __getattr__(self, name: str) -> Any: ...
