# What tests/fuzz uses of atheris (no stubs ship with it).
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

def Setup(
    args: list[str],
    test_one_input: Callable[[bytes], None],
    *,
    custom_mutator: Callable[[bytes, int, int], bytes] | None = ...,
    custom_crossover: Callable[[bytes, bytes, int, int], bytes] | None = ...,
    **kwargs: Any,
) -> list[str]: ...
def Fuzz() -> None: ...
def Mutate(data: bytes, max_size: int) -> bytes: ...
def instrument_imports(
    include: Sequence[str] | None = ..., exclude: Sequence[str] | None = ..., enable_loader_override: bool = ...
) -> AbstractContextManager[None]: ...
