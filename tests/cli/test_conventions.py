"""Command-line conventions: -h and --version, help for every option, --json where data is printed,
questions from stdin, and arguments that cannot work rejected with a message."""

from __future__ import annotations

import json
from importlib.metadata import version

import click
import pytest

from threadkeep.cli import main

from .conftest import SAMPLES

COMMANDS = sorted(main.commands)
DATA_COMMANDS = ["check", "conversations", "documents", "review", "search", "ask", "stats", "ingest", "threads"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_h_and_help_for_every_option(cli, command: str) -> None:
    result = cli(command, "-h")
    assert result.exit_code == 0 and "Usage:" in result.stdout
    for param in main.commands[command].params:
        if isinstance(param, click.Option):
            assert param.help, f"threadkeep {command} {param.opts[0]} has no help text"


def test_version(cli) -> None:
    result = cli("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"threadkeep {version('threadkeep')}"


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_commands_that_print_data_take_json(command: str) -> None:
    assert "as_json" in {param.name for param in main.commands[command].params}


def test_json_of_the_listing_commands(cli) -> None:
    cli("demo")
    assert json.loads(cli("check", "--json").stdout) == {"consistent": True, "problems": [], "vectors_pending": 0}
    assert len(json.loads(cli("documents", "--json").stdout)) == 3
    assert len(json.loads(cli("conversations", "--json").stdout)) == 2
    assert json.loads(cli("review", "--json").stdout) == []
    threads = json.loads(cli("threads", str(SAMPLES / "support_group"), "--json").stdout)
    assert threads and {"thread", "conversation", "message_ids", "reply_to"} <= set(threads[0])


def test_ask_and_search_read_stdin_for_a_dash(cli) -> None:
    cli("ingest", str(SAMPLES / "docs"))
    answer = json.loads(cli("ask", "-", "--json", input="E1024 怎么解决\n").stdout)
    assert answer["question"] == "E1024 怎么解决"
    hits = json.loads(cli("search", "-", "--json", input="E1024\n").stdout)
    assert hits["query"] == "E1024" and hits["hits"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["ask", "  "], "the question is empty"),
        (["ask", "-"], "the question is empty"),
        (["search", ""], "the query is empty"),
        (["ask", "怎么办", "--k", "0"], "0 is not in the range x>=1"),
        (["search", "E1024", "--k", "-3"], "not in the range x>=1"),
    ],
)
def test_arguments_that_cannot_work_are_rejected(cli, args: list[str], message: str) -> None:
    cli("ingest", str(SAMPLES / "docs"))
    result = cli(*args, input="")
    assert result.exit_code == 2
    assert message in result.stderr and "error: " in result.stderr
