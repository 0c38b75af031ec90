"""The lean parser (`cli/lean.py`, SPECS) and the click commands agree, verb by verb.

The lean path takes a verb's arguments without click when it is sure of them
and hands anything else to the click command. It may leave options to click
(those it does not list), but each option it does list must be the click
command's option of the same name and kind (a flag, one value, a repeatable
value), of click's type where lean passes the text on as it is, with click's
default, choices and range; and the verb must take as many arguments as the
click command. A disagreement means an agent's call does one thing through a
pipe and another at a terminal.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

import click
import pytest

from todoledger.agents import DIALECTS
from todoledger.cli import entry, lean
from todoledger.cli.main import cli

Spec = tuple[frozenset[str], frozenset[str], frozenset[str], tuple[int, int]]
# The values lean checks before it runs a verb (`lean._valid`): anything else it passes on as text.
CHECKED: dict[str, Callable[[], click.ParamType[Any]]] = {
    "limit": lambda: click.IntRange(*lean.LIMIT_RANGE),
    "priority": lambda: click.Choice(lean.PRIORITIES),
    "dialect": lambda: click.Choice(["auto", *DIALECTS]),
}


def click_command(verb: str) -> click.Command:
    command = cli.get_command(click.Context(cli, info_name="todoledger"), verb)
    assert command is not None, f"no click command {verb!r}"
    return command


def click_options(command: click.Command) -> dict[str, click.Option]:
    """The command's options by long name, without the dashes."""
    found = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in param.opts + param.secondary_opts:
                if name.startswith("--"):
                    found[name[2:]] = param
    return found


def click_arguments(command: click.Command) -> tuple[tuple[int, int | float], click.Argument | None]:
    """How many positional arguments the command takes (min, max: inf for any), and its last one."""
    low, high, last = 0, 0, None
    unbounded = False
    for param in command.params:
        if isinstance(param, click.Argument):
            unbounded |= param.nargs == -1
            low += param.nargs if param.required and param.nargs > 0 else 0
            high += max(param.nargs, 0)
            last = param
    return (low, math.inf if unbounded else high), last


def same_type(a: click.ParamType[Any], b: click.ParamType[Any]) -> bool:
    """The same type, choices (in order) and range."""

    def key(t: click.ParamType[Any]) -> tuple[Any, ...]:
        return type(t), tuple(getattr(t, "choices", ())), getattr(t, "min", None), getattr(t, "max", None)

    return key(a) == key(b)


def received(command: click.Command, verb: str, args: list[str]) -> dict[str, Any]:
    """What the click command's function is called with for `args`."""
    parent = click.Context(cli, info_name="todoledger")
    return command.make_context(verb, list(args), parent=parent, resilient_parsing=True).params


def disagreements(
    specs: dict[str, Spec], defaults: dict[str, dict[str, object]], positional_name: dict[str, str]
) -> list[str]:
    """Every way the lean specs differ from the click commands, one line each.

    Lean's value for an absent option: a flag false, a repeatable one none
    (`()`), one value its DEFAULTS entry, else None; each given flag true."""
    out = []
    for verb, (flags, valued, repeated, (low, high)) in sorted(specs.items()):
        command = click_command(verb)
        options = click_options(command)
        ids = ["x"] * low
        absent = received(command, verb, ids)
        kinds = {**{n: "a flag" for n in flags}, **{n: "one value" for n in valued}}
        kinds |= {n: "repeatable values" for n in repeated}
        for name, kind in sorted(kinds.items()):
            option = options.get(name)
            if option is None:
                out.append(f"{verb} --{name}: lean takes it, click has no such option")
                continue
            theirs = "a flag" if option.is_flag else "repeatable values" if option.multiple else "one value"
            if theirs != kind:
                out.append(f"{verb} --{name}: lean takes {kind}, click {theirs}")
                continue
            key = option.name or name
            if option.is_flag:
                given = received(command, verb, [*ids, f"--{name}"])[key]
                if (absent[key], given) != (False, True):
                    out.append(f"{verb} --{name}: click's flag is {absent[key]!r} absent, {given!r} given")
                continue
            wanted = CHECKED[name]() if name in CHECKED else click.STRING
            if not same_type(option.type, wanted):
                out.append(f"{verb} --{name}: lean checks it as {wanted!r}, click as {option.type!r}")
            ours = defaults.get(verb, {}).get(name, () if option.multiple else None)
            if ours != absent[key]:
                out.append(f"{verb} --{name}: default {ours!r} in lean, {absent[key]!r} in click")
            if name == "plan" and option.envvar != "TODOLEDGER_PLAN":
                out.append(f"{verb} --plan: lean reads TODOLEDGER_PLAN, click's envvar is {option.envvar!r}")
        (click_low, click_high), argument = click_arguments(command)
        if (
            HANDED_TO_CLICK.get(verb) == (click_low, click_high)
            and lean.parse([verb, *["x"] * click_high]) is None
        ):
            pass  # lean takes the shorter form only and hands the longer one to click
        elif (low, high) != (click_low, click_high):
            out.append(f"{verb}: lean takes {low}..{high} arguments, click {click_low}..{click_high}")
        elif argument is not None and not argument.required and argument.name is not None:
            ours = defaults.get(verb, {}).get(positional_name.get(verb, argument.name))
            if ours != absent[argument.name]:
                out.append(
                    f"{verb} {argument.human_readable_name}: default {ours!r} in lean,"
                    f" {absent[argument.name]!r} in click"
                )
    return out


# lean.DEFAULTS names an optional argument by the click parameter's name
POSITIONAL = {"write": "source"}
# Forms lean leaves to click on purpose: `show NAME|ID` (one plan's or one item's
# text view) is a person's command; lean keeps `show` without an argument.
HANDED_TO_CLICK = {"show": (0, 1)}


def test_lean_specs_agree_with_the_click_commands() -> None:
    assert disagreements(lean.SPECS, lean.DEFAULTS, POSITIONAL) == []


def test_every_lean_default_is_of_an_option_or_argument_the_verb_takes() -> None:
    for verb, defaults in lean.DEFAULTS.items():
        _, valued, repeated, _ = lean.SPECS[verb]
        for name in defaults:
            assert name in valued | repeated or POSITIONAL.get(verb) == name, (verb, name)


def test_the_entry_point_sends_exactly_the_lean_verbs_to_the_lean_path() -> None:
    assert entry.LEAN_VERBS == lean.VERBS


def test_the_hook_command_takes_what_the_lean_hook_reads() -> None:
    """`todoledger hook` skips click too (`cli/entry.py` calls `hooks.run_hook`,
    which reads AGENT and `--gate-stop`): the click command takes the same."""
    command = click_command("hook")
    assert set(click_options(command)) == {"gate-stop"}
    assert click_arguments(command)[0] == (1, 1)


def _limit_as_flag(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    specs["next"][0] |= {"limit"}
    specs["next"][1] -= {"limit"}


def _unknown_flag(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    specs["show"][0] |= {"fast"}


def _metric_once(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    specs["done"][1] |= {"metric"}
    specs["done"][2] -= {"metric"}


def _optional_id(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    specs["start"][3] = (0, 1)


def _other_limit(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    defaults["next"]["limit"] = 10


def _other_source(specs: dict[str, list[Any]], defaults: dict[str, dict[str, object]]) -> None:
    defaults["write"]["source"] = "payload.json"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_limit_as_flag, "next --limit: lean takes a flag, click one value"),
        (_unknown_flag, "show --fast: lean takes it, click has no such option"),
        (_metric_once, "done --metric: lean takes one value, click repeatable values"),
        (_optional_id, "start: lean takes 0..1 arguments, click 1..1"),
        (_other_limit, "next --limit: default 10 in lean, 5 in click"),
        (_other_source, "write [FILE|-]: default 'payload.json' in lean, '-' in click"),
    ],
)
def test_a_disagreement_fails_the_comparison(change: Any, expected: str) -> None:
    """Probes on copies of the lean data (the source is untouched): each
    disagreement is found, and said in one line."""
    specs: dict[str, list[Any]] = {verb: list(spec) for verb, spec in lean.SPECS.items()}
    defaults = copy.deepcopy(lean.DEFAULTS)
    change(specs, defaults)
    changed: dict[str, Spec] = {verb: (s[0], s[1], s[2], s[3]) for verb, s in specs.items()}
    assert disagreements(changed, defaults, POSITIONAL) == [expected]
    assert disagreements(lean.SPECS, lean.DEFAULTS, POSITIONAL) == []  # the copy, not the source
