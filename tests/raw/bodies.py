"""Request bodies holding every kind of content each API carries, for the adapter tests.

Each has one long tool result and one long input of an answered call (the two things the rewrite
may change), and around them everything it must leave alone.
"""

from __future__ import annotations

import json
from typing import Any

from .conftest import long_log

LONG = long_log()
SCRIPT = "\n".join(f"print('step {i}: compute the partial sums for shard {i}')" for i in range(80))
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 40}
CACHE = {"type": "ephemeral"}


def anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet",
        "max_tokens": 1000,
        "stream": True,
        "system": [{"type": "text", "text": "You are a coding agent.", "cache_control": CACHE}],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "output_config": {"effort": "high"},
        "metadata": {"user_id": "u-1"},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Fix the failing nightly job."},
                    {"type": "image", "source": PNG},
                    {
                        "type": "document",
                        "source": {
                            "type": "text",
                            "media_type": "text/plain",
                            "data": "a document line\n" * 400,
                        },
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Run it first.", "signature": "c2ln" * 30},
                    {"type": "redacted_thinking", "data": "ZW5j" * 50},
                    {"type": "text", "text": "Running the job and searching the error."},
                    {
                        "type": "server_tool_use",
                        "id": "srvtoolu_1",
                        "name": "web_search",
                        "input": {"query": "disk quota exceeded " * 60},
                    },
                    {
                        "type": "web_search_tool_result",
                        "tool_use_id": "srvtoolu_1",
                        "content": [
                            {
                                "type": "web_search_result",
                                "url": "https://example.org",
                                "title": "quota",
                                "encrypted_content": "ZQ" * 400,
                            }
                        ],
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "Bash",
                        "input": {"command": SCRIPT, "timeout": 60},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": LONG},
                    {"type": "text", "text": "<system-reminder>keep going</system-reminder>"},
                ],
            },
            {"role": "system", "content": "A system message inside messages."},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "Read",
                        "input": {"file_path": "/tmp/chart.png"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [
                            {"type": "text", "text": LONG},
                            {"type": "image", "source": PNG},
                        ],
                        "cache_control": CACHE,
                    },
                ],
            },
        ],
    }


def chat_body() -> dict[str, Any]:
    arguments = json.dumps({"command": SCRIPT, "timeout": 60})
    return {
        "model": "gpt-x",
        "stream": True,
        "stream_options": {"include_usage": True},
        "prompt_cache_key": "session-1",
        "reasoning_effort": "low",
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "messages": [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Fix the failing nightly job."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "audio": {"id": "audio_1"},
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": arguments},
                    },
                    {
                        "id": "call_2",
                        "type": "custom",
                        "custom": {"name": "apply_patch", "input": "*** Begin Patch\n" * 3},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": LONG},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "ok"}]},
            {
                "role": "assistant",
                "content": "Still failing.",
                "tool_calls": [
                    {
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "bash", "arguments": "{not json"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": "short"},
        ],
    }


def responses_body() -> dict[str, Any]:
    arguments = json.dumps({"command": SCRIPT, "timeout": 60})
    return {
        "model": "gpt-x",
        "instructions": "You are a coding agent.",
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "session-1",
        "tools": [{"type": "function", "name": "shell", "parameters": {}}],
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Be brief."}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Fix the failing nightly job."},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"},
                ],
            },
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ZW5j" * 80},
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_1",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Running it.", "annotations": []}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "shell",
                "arguments": arguments,
            },
            {
                "type": "web_search_call",
                "id": "ws_1",
                "status": "completed",
                "action": {"type": "search", "query": "quota"},
            },
            {"type": "function_call_output", "call_id": "call_1", "output": LONG},
            {
                "type": "custom_tool_call",
                "call_id": "call_2",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** End Patch",
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "call_2",
                "output": [
                    {"type": "input_text", "text": LONG},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBOR"},
                ],
            },
            {"type": "item_reference", "id": "msg_0"},
        ],
    }


def gemini_body() -> dict[str, Any]:
    signature = "c2ln" * 30
    return {
        "systemInstruction": {"parts": [{"text": "You are a coding agent."}]},
        "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {}}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}, "temperature": 0},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "cachedContent": "cachedContents/abc123",
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "Fix the failing nightly job."},
                    {"inlineData": {"mimeType": "image/png", "data": PNG["data"]}},
                    {"fileData": {"mimeType": "text/plain", "fileUri": "gs://bucket/notes.txt"}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"thought": True, "text": "Run it first.", "thoughtSignature": signature},
                    {"text": "Running the job."},
                    {"executableCode": {"language": "PYTHON", "code": "print(1)\n" * 200}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": LONG}},
                    {
                        "functionCall": {"name": "run_shell_command", "args": {"command": SCRIPT}},
                        "thoughtSignature": signature,
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "run_shell_command",
                            "response": {"output": LONG},
                            "willContinue": False,
                        }
                    },
                    {"text": "keep going"},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {
                            "id": "read-1",
                            "name": "read_file",
                            "args": {"path": "a.png"},
                        }
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "read-1",
                            "name": "read_file",
                            "response": {"output": LONG},
                            "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBOR"}}],
                        }
                    }
                ],
            },
        ],
    }
