"""HTTP helpers every app may use: how a client wants its answer (``negotiation``) and the rate limits
(``ratelimit``). The lowest layer of the import contracts (pyproject [tool.importlinter]): it imports no app,
so worker pages and the project's own middleware share it without the apps importing the project package."""
