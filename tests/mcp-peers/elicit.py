"""The Python SDK's client answers our server's elicitations; prints what it saw as JSON.

    python elicit.py MODE COMMAND [ARGS...]

MODE is the client's `mode`: `legacy` (the initialize handshake) or `auto`.
"""

import asyncio
import json
import sys

from mcp import Client, StdioServerParameters, types


async def main() -> None:
    mode, command, *args = sys.argv[1:]
    server = StdioServerParameters(command=command, args=args)
    report = {"asked": []}

    async def answer(context, params):
        asked = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        report["asked"].append(asked)
        if asked.get("mode") == "url":
            return types.ElicitResult(action="accept")
        if "Decline" in asked["message"]:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(
            action="accept", content={"guests": 3, "seating": "inside", "note": "a window"}
        )

    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        report["protocol"] = client.protocol_version
        for name, arguments in [
            ("book", {"restaurant": "Chez Nous"}),
            ("book", {"restaurant": "Decline Diner"}),
            ("sign_in", {}),
        ]:
            result = await client.call_tool(name, arguments)
            report.setdefault(name, []).append(
                {"is_error": bool(result.is_error), "text": result.content[0].text}
            )
    # A client without an elicitation callback declares no elicitation capability.
    async with Client(server, mode=mode) as client:
        result = await client.call_tool("book", {"restaurant": "Chez Nous"})
        report["unable"] = {"is_error": bool(result.is_error), "text": result.content[0].text}
    print(json.dumps(report))


asyncio.run(main())
