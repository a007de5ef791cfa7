"""`lanegraph token create NAME (--scopes A,B | --owner) | list [--json] | revoke ID`: the API tokens
`lanegraph serve` admits. A token's secret is printed once, at creation; only its hash is stored."""

from __future__ import annotations

import argparse
import json
import sys

from pipelines.cli import COMMAND_HELP
from pipelines.resources.database import open_database
from pipelines.resources.scopes import parse_scopes


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("token", help=COMMAND_HELP["token"])
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="make a token and print its secret (shown only this once)")
    create.add_argument("name", help="who or what holds it, e.g. 'support-bot tenant-a'")
    holder = create.add_mutually_exclusive_group(required=True)
    holder.add_argument("--scopes", metavar="A,B",
                        help="the caller's scopes: requests read rows whose every scope is listed and write "
                        "rows under them ('' = public rows only)")
    holder.add_argument("--owner", action="store_true", help="an owner token: every row, any scopes")
    create.add_argument("--json", action="store_true", help="print the token and its secret as JSON")
    create.set_defaults(handler=run_create)
    listing = actions.add_parser("list", help="every token: id, name, scopes, created, last used, revoked")
    listing.add_argument("--json", action="store_true", help="print the tokens as JSON")
    listing.set_defaults(handler=run_list)
    revoke = actions.add_parser("revoke", help="revoke a token by id (a running server stops admitting it within seconds)")
    revoke.add_argument("id", help="the token's id, as `lanegraph token list` shows it")
    revoke.set_defaults(handler=run_revoke)


def run_create(arguments: argparse.Namespace) -> int:
    from pipelines.serve.tokens import create_token

    scopes = None if arguments.owner else parse_scopes(arguments.scopes)
    with open_database() as database:
        token, secret = create_token(database, arguments.name, scopes)
    if arguments.json:
        print(json.dumps({**token.to_json(), "secret": secret}, indent=2))
    else:
        # The secret alone on stdout, so `TOKEN=$(lanegraph token create ...)` captures just it.
        print(secret)
        print(f"token {token.id} ({token.name}): {token.describe_scopes()}; the secret is not stored, keep it now",
              file=sys.stderr)
    return 0


def run_list(arguments: argparse.Namespace) -> int:
    from pipelines.serve.tokens import list_tokens

    with open_database() as database:
        tokens = list_tokens(database)
    if arguments.json:
        print(json.dumps([token.to_json() for token in tokens], indent=2))
        return 0
    for token in tokens:
        state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "active"
        used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
        print(f"{token.id}  {state:<24} last used {used:<16}  {token.name}: {token.describe_scopes()}")
    if not tokens:
        print("(no tokens; lanegraph token create NAME --scopes A,B)")
    return 0


def run_revoke(arguments: argparse.Namespace) -> int:
    from pipelines.serve.tokens import revoke_token

    with open_database() as database:
        revoke_token(database, arguments.id)
    print(f"token {arguments.id} revoked")
    return 0
