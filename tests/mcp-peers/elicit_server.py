"""A Python SDK server whose tool asks the user, for our MCP client's tests.

    python elicit_server.py

On stdio. Its `book` tool gets the answer from a resolver that returns `Elicit[Booking]`:
on protocol 2026-07-28 the SDK sends the question in an `InputRequiredResult` and the client
calls again with its answer; before, it sends `elicitation/create` during the call.
"""

from typing import Annotated

from pydantic import BaseModel, Field

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Elicit, MCPServer, Resolve

server = MCPServer("elicit-server")


class Booking(BaseModel):
    guests: int = Field(description="How many people")
    seating: str = Field(description="inside or outside")


def ask(restaurant: str) -> Elicit[Booking]:
    return Elicit(f"Book a table at {restaurant}?", Booking)


@server.tool()
def book(
    restaurant: str,
    answer: Annotated[ElicitationResult[Booking], Resolve(ask)],
) -> str:
    """Books a table, asking the user for the details."""
    if isinstance(answer, AcceptedElicitation):
        return f"booked {restaurant} for {answer.data.guests} {answer.data.seating}"
    return f"not booked: {answer.action}"


if __name__ == "__main__":
    server.run()
