"""Old module paths still import, warn, and give the very objects of the new ones."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from tokenlean._moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_names_the_new_module(old: str) -> None:
    new = MOVED[old]
    assert importlib.util.find_spec(new) is not None, new  # every target exists
    assert importlib.util.find_spec(old) is not None  # and the old path is found


def test_an_old_import_warns_and_gives_the_same_objects() -> None:
    code = (
        "import warnings\n"
        "warnings.simplefilter('error')\n"
        "import tokenlean\n"
        "try:\n"
        "    from tokenlean.shorten.options import ShortenOptions\n"
        "except DeprecationWarning as w:\n"
        "    print('warned:', w)\n"
        "warnings.simplefilter('ignore')\n"
        "from tokenlean.shorten.options import ShortenOptions\n"
        "from tokenlean.shorten import firstsight\n"
        "from tokenlean.raw.build import body\n"
        "import tokenlean.shorten, tokenlean.testing.bodies as b\n"
        "from tokenlean.shorten import ShortenSettings, OutputShorteningSettings\n"
        "assert ShortenOptions is ShortenSettings\n"
        "assert firstsight.OutputShorteningPolicy is OutputShorteningSettings\n"
        "assert body is b.body\n"
        "print('same')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "warned: tokenlean.shorten.options has moved to tokenlean.shorten._options" in out.stdout
    assert out.stdout.strip().endswith("same")


def test_a_path_that_never_existed_still_fails() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tokenlean.shorten.no_such_module")
