"""`core/scoped.py` stands in for `contextlib` on the agents' verbs: each way a
generator can end a `with` block behaves as under `contextlib.contextmanager`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from todoledger.core import scoped


def outcome(make: Callable[..., Any], body: Callable[[Any], None]) -> tuple[str, Any, list[str]]:
    log: list[str] = []

    def gen(kind: str) -> Iterator[str]:
        log.append("enter")
        if kind == "no-yield":
            return
        try:
            yield "value"
        except KeyError:
            log.append("caught")
            if kind == "swallow":
                return
            raise ValueError("replaced") from None
        finally:
            log.append("finally")
        if kind == "twice":
            yield "again"

    results = []
    for kind in ("plain", "swallow", "replace", "no-yield", "twice"):
        cm = make(gen)(kind)
        try:
            with cm as value:
                log.append(f"body {value}")
                body(kind)
            results.append(("ok", kind))
        except BaseException as exc:
            results.append((type(exc).__name__, str(exc)))
    return "done", results, log


def raise_key(kind: str) -> None:
    if kind in ("swallow", "replace"):
        raise KeyError(kind)


@pytest.mark.parametrize("body", [lambda kind: None, raise_key])
def test_every_ending_is_contextlibs(body: Callable[[str], None]) -> None:
    assert outcome(scoped.contextmanager, body) == outcome(contextlib.contextmanager, body)


def test_an_exception_from_the_block_keeps_its_traceback_and_identity() -> None:
    @scoped.contextmanager
    def passing() -> Iterator[None]:
        yield

    error = RuntimeError("from the block")
    with pytest.raises(RuntimeError) as raised, passing():
        raise error
    assert raised.value is error
    stop = StopIteration("stop")
    with pytest.raises(StopIteration), passing():
        raise stop


def test_nullcontext() -> None:
    with scoped.nullcontext(5) as five:
        assert five == 5
    assert passing_name() == "passing_name"


def passing_name() -> str:
    @scoped.contextmanager
    def passing_name() -> Iterator[None]:
        """Its own name and doc."""
        yield

    assert passing_name.__doc__ == "Its own name and doc."
    return passing_name.__name__
