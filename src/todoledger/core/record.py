"""`dataclass` for the hook path.

Agents run `todoledger hook` on every tool call, and the issue caps that at
4x a bare interpreter start. The standard `dataclasses` module imports
`inspect` (with `ast`, `dis`, `tokenize`...), which alone costs a quarter of
that budget here. Type checkers see the real `dataclasses`; at run time this
module supplies the small subset the core uses: generated `__init__`,
`__eq__`, `__repr__`, `field(default_factory=...)` and `frozen`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from dataclasses import dataclass, field
else:
    from operator import attrgetter

    _MISSING = object()

    def _no_values(self):
        return ()

    class _Field:
        __slots__ = ("default_factory",)

        def __init__(self, default_factory):
            self.default_factory = default_factory

    def field(*, default_factory):
        return _Field(default_factory)

    def _frozen_setattr(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r} of frozen {type(self).__name__}")

    def _build(cls, frozen):
        names = [n for n in cls.__dict__.get("__annotations__", {}) if not n.startswith("_")]  # noqa: RUF063 (no inspect)
        scope = {"_MISSING": _MISSING, "_set": object.__setattr__}
        params, body = [], []
        for name in names:
            default = cls.__dict__.get(name, _MISSING)
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
            body.append(f"    _set(self, {name!r}, {value})" if frozen else f"    self.{name} = {value}")
        # Only __init__ is compiled: compiling costs more than the code it makes,
        # and equality needs no generated code (attrgetter reads the fields in C).
        exec(f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n", scope)
        cls.__init__ = scope["__init__"]
        cls.__match_args__ = tuple(names)
        getter = attrgetter(*names) if names else None
        if getter is None:
            values = _no_values
        elif len(names) == 1:
            values = lambda self: (getter(self),)  # noqa: E731 (attrgetter of one name gives no tuple)
        else:
            values = getter

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return values(self) == values(other)

        def __repr__(self):
            inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
            return f"{cls.__qualname__}({inner})"

        cls.__eq__ = __eq__
        cls.__repr__ = __repr__
        if frozen:
            cls.__setattr__ = _frozen_setattr
            cls.__hash__ = lambda self: hash(values(self))
        else:
            cls.__hash__ = None
        return cls

    def dataclass(cls=None, /, *, frozen=False):
        if cls is None:
            return lambda c: _build(c, frozen)
        return _build(cls, frozen)


__all__ = ["dataclass", "field"]
