"""Kept only until the proxy's settings import the one definition from :mod:`tokenlean.store`."""

from tokenlean.store import default_originals_dir

__all__ = ["default_originals_dir"]
