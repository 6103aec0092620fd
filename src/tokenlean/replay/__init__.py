"""Replay recorded agent trajectories through middleware and measure what it saves.

Needs the ``replay`` extra (LangChain, LangGraph and tiktoken).
"""
