"""agent_sandbox.agent: entry points for agents (python -m agent_sandbox.agent.mcp)."""
