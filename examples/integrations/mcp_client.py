"""hanrag as an MCP server for agents (pip install 'hanrag[mcp]'): spawn `hanrag mcp INDEX` over stdio with the
mcp SDK's client, list its tools and call search, as an agent host would."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import anyio
from _sample import CONFIG, sample_index
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def ask(index_dir: Path) -> None:
    hanrag_bin = shutil.which("hanrag") or str(Path(sys.executable).with_name("hanrag"))
    server = StdioServerParameters(command=hanrag_bin, args=["mcp", str(index_dir), "--config", str(CONFIG)])
    async with Client(server) as client:
        for tool in (await client.list_tools()).tools:
            print(f"tool {tool.name}: {tool.description[:90]}...")
        result = await client.call_tool("search", {"query": "갑목 용신", "top_k": 3, "filters": {"lang": ["ko", "zh"]}})
        for hit in result.structured_content["hits"]:
            print(hit["citation"])


def main() -> None:
    anyio.run(ask, sample_index(__doc__))


if __name__ == "__main__":
    main()
