"""How ``--help`` reads: click's conventions, not typer's type labels.

typer 0.29 prints a type label after every parameter (``<bool>`` after a flag, ``<str>``,
``<list[str]>``, ``<float range>``) and writes a required argument as ``{file}`` in the
usage line; none of it is a value a user can type, and typer has no setting to turn it
off. ``StreamsGroup``, the class of the root command, tidies the whole command tree once,
when typer builds it: a flag shows no value; an option shows its declared metavar
(``HOST:PORT``, ``KEY=VALUE``, ...), else its choices (``text|mermaid``), else click's
name for its type (``TEXT``, ``INTEGER``, ``FLOAT``, ``PATH``); an argument is its name in
capitals (``FILE``, ``[POSITION]`` when optional). An option's old or alternative names
in ``HIDDEN_ALIASES`` still parse but are not shown: help lists one long name per option,
as Kafka's own tools do (``--bootstrap-server``, not ``--bootstrap-server,--bootst…``).
``--help``, the docs page (mkdocs-click) and ``tests/unit/cli/test_tree.py`` all see
these same objects.

On a terminal, help is typer's rich panels, fitted to the window. Anywhere else (a pipe,
a file, a pager) it is click's plain text, the docs page's format: rich fits its panels
to 80 columns there and cuts what does not fit with an ellipsis (``--bootstrap-serv…``),
where plain text wraps the descriptions and never cuts a name.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from typer import _click
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

_CLICK_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "bool": "BOOLEAN"}
HIDDEN_ALIASES = frozenset(
    {
        "--bootstrap",  # of --bootstrap-server, Kafka's name
        "--connect-timeout",  # of --timeout, streams run's first name for it
        "--dir",  # of --schemas, streams schemas' first name for it
        "--limit",  # of --count, streams dlq show's first name for it
        "--max",  # of --count, streams consume's first name for it
        "--yes",  # of --execute, streams topics delete's first name for it
    }
)


class _Option(TyperOption):
    """An option that shows a metavar (none for a flag) instead of typer's type label,
    and parses its ``hidden_aliases`` without showing them."""

    hidden_aliases: tuple[str, ...] = ()

    def add_to_parser(self, parser: Any, ctx: _click.Context) -> None:
        shown = self.opts
        self.opts = [*shown, *self.hidden_aliases]
        try:
            super().add_to_parser(parser, ctx)
        finally:
            self.opts = shown

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar is not None:
            return self.metavar
        label = self.display_type(ctx).strip("<>").removesuffix(" range")
        if label.startswith("list[") and label.endswith("]"):
            label = label[len("list[") : -1]  # repeatable: the help says so
        if self.type_descriptor.is_choice:
            return label
        return _CLICK_NAMES.get(label, label.upper())


class _Argument(TyperArgument):
    """An argument shown by its name in capitals, with no type label."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None

    def _usage_display_name(self) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")


def _on_terminal() -> bool:
    # Asked when help is printed, of the stdout it is printed to (rich's judgement: a tty,
    # or FORCE_COLOR and the like, as typer's panels would be).
    from rich.console import Console

    return Console().is_terminal


def _plain_when_piped(base: type[TyperCommand] | type[TyperGroup]) -> Any:
    """``base.format_help``, but click's plain text when stdout is not a terminal (see the
    module doc)."""

    def format_help(
        self: TyperCommand | TyperGroup, ctx: _click.Context, formatter: _click.HelpFormatter
    ) -> None:
        if _on_terminal():
            base.format_help(self, ctx, formatter)  # type: ignore[arg-type]
            return
        # Printed here, as typer prints its panels, not left in ``formatter``: typer
        # shows a group's help for no arguments (no_args_is_help) only that way.
        plain = ctx.make_formatter()
        mode, self.rich_markup_mode = self.rich_markup_mode, None
        try:
            base.format_help(self, ctx, plain)  # type: ignore[arg-type]
        finally:
            self.rich_markup_mode = mode
        _click.echo(plain.getvalue(), nl=False)

    return format_help


class _Command(TyperCommand):
    format_help = _plain_when_piped(TyperCommand)


class _Group(TyperGroup):
    format_help = _plain_when_piped(TyperGroup)


def walk(command: _click.Command, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command path under ``command`` (``()`` for itself), groups before their
    commands, in name order."""
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from walk(sub, (*path, name))


def find(command: _click.Command, path: tuple[str, ...]) -> _click.Command:
    """The command at ``path`` under ``command``."""
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def tidy(command: _click.Command) -> None:
    """Give every parameter in the tree the help display described above."""
    for path in walk(command):
        sub = find(command, path)
        if type(sub) is TyperGroup:
            sub.__class__ = _Group
        elif type(sub) is TyperCommand:
            sub.__class__ = _Command
        if sub.help and not sub.short_help:
            # A group lists each command by its help's first paragraph, whole, as typer's
            # panels do (click's own short help cuts it at 45 characters with "...").
            first = inspect.cleandoc(sub.help).partition("\f")[0].split("\n\n")[0]
            sub.short_help = " ".join(first.split())
        # --help is made on first use and then kept: make it now, so it is tidied too.
        help_option = sub.get_help_option(_click.Context(sub))
        for param in [*sub.params, *([help_option] if help_option else [])]:
            if isinstance(param, TyperOption) and not isinstance(param, _Option):
                param.__class__ = _Option
                assert isinstance(param, _Option)  # what it now is, for the type checker
                param.hidden_aliases = tuple(o for o in param.opts if o in HIDDEN_ALIASES)
                param.opts = [o for o in param.opts if o not in HIDDEN_ALIASES]
            elif isinstance(param, TyperArgument) and not isinstance(param, _Argument):
                if param.metavar is None:
                    param.metavar = (param.name or "value").upper()
                param.__class__ = _Argument


class StreamsGroup(TyperGroup):
    """The root group: builds like any typer group, then tidies its tree's help."""

    format_help = _plain_when_piped(TyperGroup)

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        tidy(self)
