"""The Python SDK's client against our MCP server; prints what it saw as one JSON object.

    python client.py stdio COMMAND [ARGS...]
    python client.py http URL
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters


async def main() -> None:
    kind, *rest = sys.argv[1:]
    if kind == "stdio":
        server = StdioServerParameters(command=rest[0], args=rest[1:])
    else:
        server = rest[0]
    report = {}
    async with Client(server) as client:
        tools = await client.list_tools()
        report["tools"] = {
            tool.name: {
                "read_only": bool(tool.annotations and tool.annotations.read_only_hint),
                "input_schema": tool.input_schema,
                "output_schema": tool.output_schema,
            }
            for tool in tools.tools
        }
        good = await client.call_tool("add", {"a": 2, "b": 3})
        report["add"] = {"is_error": bool(good.is_error), "text": good.content[0].text}
        bad = await client.call_tool("add", {"a": "two"})
        report["bad_add"] = {"is_error": bool(bad.is_error), "text": bad.content[0].text}
        progress = []

        async def on_progress(value, total, message):
            progress.append(message)

        slow = await client.call_tool("count_slowly", {"to": 3}, progress_callback=on_progress)
        report["count"] = {"text": slow.content[0].text, "progress": progress}
        for name in ["panic_now", "hang"]:
            result = await client.call_tool(name, {})
            report[name] = {"is_error": bool(result.is_error), "text": result.content[0].text}
        # The SDK checks structured content against the output schema itself.
        for name, args in [("forecast", {"city": "Oslo"}), ("primes", {"below": 10})]:
            result = await client.call_tool(name, args)
            report[name] = {
                "is_error": bool(result.is_error),
                "text": result.content[0].text,
                "structured": result.structured_content,
            }
        # The SDK parses each block into its type (ResourceLink, EmbeddedResource...).
        result = await client.call_tool("resources", {})
        report["resources"] = [
            {
                "class": type(block).__name__,
                **block.model_dump(mode="json", by_alias=True, exclude_none=True),
            }
            for block in result.content
        ]
        after = await client.call_tool("add", {"a": 1, "b": 1})
        report["after"] = {"is_error": bool(after.is_error), "text": after.content[0].text}
    print(json.dumps(report))


asyncio.run(main())
