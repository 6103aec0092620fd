"""Telling content kinds apart: listings (what an agent opens next)."""

from __future__ import annotations

import pytest

from tokenlean.shorten._detect import is_listing

LS_L = """total 788
drwxrwxr-x  19 randy randy   4096 Oct 31 18:49 .
drwxr-xr-x 362 randy randy  16384 Oct 27 08:15 ..
-rw-rw-r--   1 randy randy    146 Oct 27 18:11 .editorconfig
drwxrwxr-x   9 randy randy   4096 Oct 28 18:37 opk
-rw-rw-r--   1 randy randy    618 Oct 27 18:53 pyproject.toml
lrwxrwxrwx   1 randy randy     12 Oct 27 18:53 latest -> dist/v2
-rw-rw-r--   1 randy randy   3948 Oct 27 19:58 README.md"""
GIT_STATUS = """## main...origin/main [ahead 2]
 M api_service/main.py
M  api_service/api/schemas.py
MM moonmind/config/settings.py
R  docs/old.md -> docs/new.md
?? "notes with spaces.txt"
?? .codex/"""
GET_CHILD_ITEM = """
    Directory: C:\\Users\\me\\project

Mode                 LastWriteTime         Length Name
----                 -------------         ------ ----
d-----        22-09-2025     12:07                .cursor
d-----        17-09-2025     15:23                docs
d-----        17-09-2025     15:23                etl
d-----        17-09-2025     15:23                examples
d-----        17-09-2025     15:23                scripts
d-----        17-09-2025     15:23                tests
-a----        17-09-2025     15:23           1348 .dockerignore
-a----        17-09-2025     15:23           6531 .env.example
-a----        17-09-2025     15:23           4484 .gitignore
-a----        17-09-2025     15:23           1111 LICENSE
-a----        26-09-2025     12:12           9205 pixi.toml
-a----        17-09-2025     15:23           5286 README.md
"""
PROSE = """A dog ran across the field.
 A second dog followed it.
 M is the thirteenth letter.
Total 788 apples were counted.
-- The end of the story --
Nobody knew what came next."""


@pytest.mark.parametrize("text", [LS_L, GIT_STATUS, GET_CHILD_ITEM])
def test_long_listings_are_listings(text: str) -> None:
    assert is_listing(text.split("\n"))


def test_prose_is_no_listing() -> None:
    assert not is_listing(PROSE.split("\n"))
