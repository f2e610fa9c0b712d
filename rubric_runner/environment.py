"""What rubric_runner takes from the environment: provider keys and what jobs elsewhere need."""

from __future__ import annotations

import os

API_KEY_ENV = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "google_genai": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "baseten": ("BASETEN_API_KEY",),
}
"""Environment variables that hold each provider's key (the first is the one to set)."""

POSTGRES_URL_ENV = "RUBRIC_RUNNER_POSTGRES_URL"
"""The PostgreSQL URL for ``run.checkpointer=postgres`` when ``run.checkpoint_url`` is null."""

PLUGINS_ENV = "RUBRIC_RUNNER_PLUGINS"
"""Comma-separated entry-point plugin names to load; unset loads all, empty loads none."""

JOB_ENV = (
    *(name for names in API_KEY_ENV.values() for name in names),
    "OLLAMA_HOST", POSTGRES_URL_ENV, "PGPASSWORD", PLUGINS_ENV,
)
"""What a job run on another machine takes from the submitting shell (Ray: ``${job_env:}``)."""


def job_env() -> dict[str, str]:
    """The variables of ``JOB_ENV`` set in this environment, by name."""
    return {name: os.environ[name] for name in JOB_ENV if name in os.environ}
