"""`contextmanager` and `nullcontext` for the agents' verbs and the hook path.

`contextlib` imports `collections`, `functools` and `types`, which together
cost the agents' verbs (a fresh process per call) a good part of a bare
interpreter's start (see bench/bench_agents.py). Type checkers see the real `contextlib`; at run time
this module supplies the same two things: `contextmanager` runs the
generator exactly as `contextlib._GeneratorContextManager` does (the same
`__exit__`, an exception thrown in at the `yield`; tests/test_scoped.py
holds it to contextlib's behaviour), without its decorator reuse or async
variants, which nothing here uses.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import contextmanager, nullcontext
else:

    class _Scope:
        __slots__ = ("gen",)

        def __init__(self, gen):
            self.gen = gen

        def __enter__(self):
            try:
                return next(self.gen)
            except StopIteration:
                raise RuntimeError("generator didn't yield") from None

        def __exit__(self, typ, value, traceback):  # contextlib._GeneratorContextManager.__exit__
            if typ is None:
                try:
                    next(self.gen)
                except StopIteration:
                    return False
                raise RuntimeError("generator didn't stop")
            if value is None:
                value = typ()
            try:
                self.gen.throw(value)
            except StopIteration as exc:
                return exc is not value
            except RuntimeError as exc:
                if exc is value:
                    exc.__traceback__ = traceback
                    return False
                if isinstance(value, StopIteration) and exc.__cause__ is value:
                    value.__traceback__ = traceback
                    return False
                raise
            except BaseException as exc:
                if exc is not value:
                    raise
                exc.__traceback__ = traceback
                return False
            try:
                raise RuntimeError("generator didn't stop after throw()")
            finally:
                self.gen.close()

    def contextmanager(func):
        def scope(*args, **kwargs):
            return _Scope(func(*args, **kwargs))

        scope.__name__, scope.__qualname__, scope.__doc__ = func.__name__, func.__qualname__, func.__doc__
        scope.__module__, scope.__wrapped__ = func.__module__, func
        return scope

    class nullcontext:
        __slots__ = ("enter_result",)

        def __init__(self, enter_result=None):
            self.enter_result = enter_result

        def __enter__(self):
            return self.enter_result

        def __exit__(self, *excinfo):
            return None


__all__ = ["contextmanager", "nullcontext"]
