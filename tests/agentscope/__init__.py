"""Tests of the AgentScope adapter; all skip where the ``agentscope`` extra is not installed
(pytest imports this package before any of its modules, so the skip comes first)."""

import pytest

pytest.importorskip(
    "agentscope", reason="needs the agentscope extra (pip install 'tokenlean[agentscope]')"
)
