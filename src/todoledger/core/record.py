"""`dataclass` for the hook path.

Agents run `todoledger hook` on every tool call, so its start-up has a budget
(bench/bench_core.py). The standard `dataclasses` module imports `inspect`
(with `ast`, `dis`, `tokenize`...), which alone costs a good part of it. Type checkers see the real `dataclasses`; at run time this
module supplies the small subset the core uses: generated `__init__`,
`__eq__`, `__repr__`, `field(default_factory=...)` and `frozen`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:
    _MISSING = object()

    class _Field:
        __slots__ = ("default_factory",)

        def __init__(self, default_factory):
            self.default_factory = default_factory

    def field(*, default_factory):
        return _Field(default_factory)

    def _frozen_setattr(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r} of frozen {type(self).__name__}")

    def _build(cls, frozen):
        """Methods are generated on their first use: compiling them costs start-up
        (see bench/bench_core.py), and a command uses few of the classes it imports."""
        names = [n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("_")]  # noqa: RUF063 (no inspect)
        defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}

        def generate():
            """`__init__`, on its first use. `__eq__` and `__hash__` are compiled apart, on
            theirs (`compare`): most of a process's records are never compared, and
            compiling costs a read of a gated plan or a hook more than the rest of its
            records' work (bench/bench_hooks.py)."""
            if "__init__" in generated:
                return
            scope = {"_MISSING": _MISSING}
            params, body = [], []
            for name in names:
                default = defaults.get(name, _MISSING)
                if isinstance(default, _Field):
                    scope[f"_f_{name}"] = default.default_factory
                    params.append(f"{name}=_MISSING")
                    value = f"_f_{name}() if {name} is _MISSING else {name}"
                elif default is not _MISSING:
                    scope[f"_d_{name}"] = default
                    params.append(f"{name}=_d_{name}")
                    value = name
                else:
                    params.append(name)
                    value = name
                # Frozen: straight into the instance's dict (object.__setattr__ per field is slower: bench/bench_core.py).
                body.append(f"    _d[{name!r}] = {value}" if frozen else f"    self.{name} = {value}")
            exec(
                f"def __init__(self, {', '.join(params)}):\n"
                + ("    _d = self.__dict__\n" if frozen and body else "")
                + ("\n".join(body) or "    pass")
                + "\n",
                scope,
            )
            generated["__init__"] = scope["__init__"]
            cls.__init__ = scope["__init__"]

        def compare():
            if "__eq__" in generated:
                return
            scope = {}
            own = "(" + "".join(f"self.{n}, " for n in names) + ")"
            theirs = "(" + "".join(f"other.{n}, " for n in names) + ")"
            exec(
                "def __eq__(self, other):\n"
                "    if other.__class__ is not self.__class__:\n"
                "        return NotImplemented\n"
                f"    return {own} == {theirs}\n"
                f"def __hash__(self):\n    return hash({own})\n",
                scope,
            )
            generated.update(scope)
            cls.__eq__ = scope["__eq__"]
            if frozen:
                cls.__hash__ = scope["__hash__"]

        generated = {}

        # Stand-ins until the first use replaces them with the generated methods.
        def __init__(self, *args, **kwargs):
            generate()
            generated["__init__"](self, *args, **kwargs)

        def __eq__(self, other):
            compare()
            return generated["__eq__"](self, other)

        def __hash__(self):
            compare()
            return generated["__hash__"](self)

        def __repr__(self):
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
            return f"{cls.__qualname__}({inner})"

        cls.__init__ = __init__
        cls.__eq__ = __eq__
        cls.__repr__ = __repr__
        cls.__match_args__ = tuple(names)
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__hash__ = __hash__
        else:
            cls.__hash__ = None
        return cls

    def dataclass(cls=None, /, *, frozen=False):
        if cls is None:
            return lambda c: _build(c, frozen)
        return _build(cls, frozen)


__all__ = ["dataclass", "field"]
