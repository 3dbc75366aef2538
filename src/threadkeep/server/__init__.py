"""Thin layers over `threadkeep.api.KnowledgeBase`: an MCP server, an HTTP API and a web page.

No answer logic lives here. `service.Service` validates input, serialises one
`KnowledgeBase` between threads and turns its results into JSON-ready dicts;
`mcp` and `http` only expose those calls. The server modules are imported
lazily by the CLI (`threadkeep serve`, `threadkeep mcp`).
"""
