#!/usr/bin/env python3
"""Create or update the ONE pull-request comment of the stepgate gate (scripts/action/gate.sh).

The comment is found by a hidden marker on its first line (`<!-- stepgate-gate -->`) AND
by its author, the token's own identity: anyone can post a comment that starts with the
marker, and editing theirs would hand them the report (or let them block it). A second
push edits the same comment instead of adding one. Talks to GitHub only through
`gh api` (GH_TOKEN), which keeps the token handling and GitHub Enterprise hosts gh's job.
Prints the comment id on success; exits non-zero (with the reason on stderr) otherwise.

Environment: GITHUB_REPOSITORY (owner/name), GITHUB_EVENT_PATH (the pull_request event).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

# GitHub refuses comment bodies over 65,536 characters; keep room for the marker and note.
MAX_BODY = 60_000


def pr_number(event_path):
    """The pull request's number from the event payload, or None."""
    try:
        with open(event_path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError) as e:
        print(f"comment: cannot read the event payload {event_path}: {e}", file=sys.stderr)
        return None
    n = (event.get("pull_request") or {}).get("number") or event.get("number")
    return n if isinstance(n, int) and n > 0 else None


def json_values(text):
    """Every JSON value in `text`: `gh api --paginate` prints one array per page, back to back."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        value, i = dec.raw_decode(text, i)
        yield value


def gh_api(*args, body=None):
    """`gh api ARGS` (with a JSON request body from `body`), its stdout; raises on failure."""
    cmd = ["gh", "api", *args]
    tmp = None
    try:
        if body is not None:
            tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8")
            json.dump({"body": body}, tmp)
            tmp.close()
            cmd += ["--input", tmp.name]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    if out.returncode != 0:
        raise RuntimeError(f"gh api {args[0]} {args[1] if len(args) > 1 else ''}: {out.stderr.strip()}")
    return out.stdout


# Who a workflow's GITHUB_TOKEN posts as; `gh api user` refuses that token (HTTP 403).
ACTIONS_BOT = "github-actions[bot]"


def token_login():
    """The login the token posts as: `gh api user` for a personal or app user token, the
    Actions bot for the workflow's own token (which may not read /user)."""
    try:
        login = json.loads(gh_api("user")).get("login")
    except (RuntimeError, ValueError, AttributeError):
        return ACTIONS_BOT
    return login if isinstance(login, str) and login else ACTIONS_BOT


def find_comment(repo, pr, marker, login):
    """The id of the oldest comment by `login` whose first line is the marker, or None."""
    listing = gh_api("--paginate", f"repos/{repo}/issues/{pr}/comments?per_page=100")
    for page in json_values(listing):
        for c in page if isinstance(page, list) else []:
            first = str(c.get("body") or "").lstrip().split("\n", 1)[0].rstrip("\r")
            author = (c.get("user") or {}).get("login")
            if first == marker and author == login:
                return c.get("id")
    return None


def comment_body(marker, markdown, tail=""):
    """The marker, the report, then `tail` (the accept command of a regression); the report
    is cut at a line boundary when GitHub would refuse the whole, and the tail is never cut."""
    room = MAX_BODY - len(tail)
    if len(markdown) > room:
        cut = markdown.rfind("\n", 0, room)
        markdown = markdown[: cut if cut > 0 else room] + (
            f"\n\n… cut at {room:,} characters: the full report is in the job summary "
            "and the workflow artifact.\n"
        )
    return f"{marker}\n{markdown}{tail}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--marker", required=True)
    ap.add_argument("--body", required=True, help="markdown file to post")
    ap.add_argument("--tail", help="markdown file to post after the body, never cut")
    a = ap.parse_args()
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    pr = pr_number(os.environ.get("GITHUB_EVENT_PATH", ""))
    if not repo or pr is None:
        print("comment: no repository or pull-request number in the event", file=sys.stderr)
        return 1
    with open(a.body, encoding="utf-8") as f:
        markdown = f.read()
    tail = ""
    if a.tail:
        with open(a.tail, encoding="utf-8") as f:
            tail = f.read()[:MAX_BODY // 2]
    body = comment_body(a.marker, markdown, tail)
    try:
        cid = find_comment(repo, pr, a.marker, token_login())
        if cid is None:
            made = json.loads(gh_api("--method", "POST", f"repos/{repo}/issues/{pr}/comments", body=body))
            cid = made["id"]
            print(f"comment: created {made.get('html_url', cid)}", file=sys.stderr)
        else:
            gh_api("--method", "PATCH", f"repos/{repo}/issues/comments/{cid}", body=body)
            print(f"comment: updated comment {cid}", file=sys.stderr)
    except (RuntimeError, ValueError, KeyError) as e:
        print(f"comment: {e}", file=sys.stderr)
        return 1
    print(cid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
