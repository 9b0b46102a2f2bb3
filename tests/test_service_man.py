"""Man pages: made from docs/*.md at build time (one text), installed
under share/man, rendered by man without a warning, a clean whatis line
each, and every option and command the programs have is in its page."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import BIN, BUILD, ROOT

MANDIR = os.path.join(BUILD, "share", "man")
PAGES = {"libception": 1, "hddsim": 1, "vidload": 1, "receptiond-profile": 1,
         "libception-watch": 7, "libception-security": 7, "receptiond": 8, "libception.so": 8}
pytestmark = pytest.mark.skipif(not shutil.which("man"), reason="man (man-db) not installed")


def render(name, section):
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8")
    return subprocess.run(["man", "--warnings", "-M", MANDIR, str(section), name],
                          capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_renders_without_warnings(name):
    section = PAGES[name]
    r = render(name, section)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "", r.stderr
    assert "NAME" in r.stdout and "SYNOPSIS" in r.stdout
    # the whatis line (apropos, mandb): "name - text", no formatting codes
    path = os.path.join(MANDIR, f"man{section}", f"{name}.{section}")
    what = subprocess.run(["lexgrog", path], capture_output=True, text=True).stdout
    m = re.search(r': "(.*)"$', what.strip())
    assert m and m.group(1).startswith(f"{name} - "), what
    assert not re.search(r"\\|f\[|\[dq\]|`", m.group(1)), what


def test_pages_are_their_docs():
    """The page is the doc: its text, not a copy that can drift."""
    for name, section in PAGES.items():
        with open(os.path.join(ROOT, "docs", f"{name}.md"), encoding="utf-8") as f:
            assert f.readline().strip() == f"# {name}({section})"
        # lines broken after a hyphen are joined again
        page = re.sub(r"-\s+", "-", " ".join(render(name, section).stdout.split()))
        with open(os.path.join(ROOT, "docs", f"{name}.md"), encoding="utf-8") as f:
            doc = f.read()
        # the description's first words, and the last section's, are the page's
        for part in (doc.split("## DESCRIPTION")[1], doc.split("\n## ")[-1].split("\n", 1)[1]):
            para = next(p for p in part.split("\n\n") if p.strip())
            words = [w for w in para.replace("`", "").replace("*", "").split() if w not in ("-", ":")]
            words = " ".join(words[:6])
            assert words in page, (name, words)


def options(cmd):
    out = subprocess.run(cmd + ["--help"], capture_output=True, text=True).stdout
    return sorted(set(re.findall(r"(--[a-z][a-z-]+)", out)) - {"--help"})


@pytest.mark.parametrize("prog,page", [("receptiond", ("receptiond", 8)),
                                       ("hddsim", ("hddsim", 1)),
                                       ("vidload", ("vidload", 1))])
def test_every_option_is_documented(prog, page):
    text = render(*page).stdout
    for opt in options([os.path.join(BIN, prog)]):
        assert opt in text, f"{prog} {opt} is missing from {page[0]}({page[1]})"


def test_every_command_is_in_libception_1():
    text = render("libception", 1).stdout
    here = os.path.join(ROOT, "harness", "libception")
    commands = sorted(f[4:-3] for f in os.listdir(here) if f.startswith("cmd_"))
    for c in commands:
        assert f"libception {c}" in text, c
