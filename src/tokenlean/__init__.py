"""tokenlean."""
