"""Auto-instrumentation: `agentbilling.integrations.openai`, `.anthropic` and `.litellm`. Each module imports
the SDK it instruments only where it must (the LiteLLM callback subclasses LiteLLM's CustomLogger)."""
