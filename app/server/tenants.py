"""Tenants: who a request's API key belongs to. `R1VOICE_API_KEY` is the "default"
tenant's key; `R1VOICE_API_KEYS` (JSON {"key": "tenant"}) adds keys of other tenants. The
access guard (access.py) names the tenant of the key, or of the client secret minted with
it, in the request's scope; a Live session belongs to its creator's tenant, and a
sideband attaches only with a key of that tenant (app/server/routes/live.py)."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from app.settings import Settings

DEFAULT = "default"
TENANT = "r1voice.tenant"  # the scope's entry: the tenant the request authenticated as
BY_SECRET = "r1voice.by_client_secret"  # ... with a client secret, not the key itself
EXAMPLE = '{"sk-team-a": "team-a", "sk-team-b": "team-b"}'


def tenant_keys(settings: Settings) -> dict[str, str]:
    """Every API key and its tenant; a bad R1VOICE_API_KEYS is refused naming it."""
    keys = {settings.api_key: DEFAULT} if settings.api_key else {}
    if not settings.api_keys.strip():
        return keys
    try:
        given = json.loads(settings.api_keys)
    except json.JSONDecodeError as exc:
        raise ValueError(f"R1VOICE_API_KEYS is not JSON ({exc}); give {EXAMPLE}") from None
    if not isinstance(given, dict):
        raise ValueError(f"R1VOICE_API_KEYS must be a JSON object of key -> tenant, like {EXAMPLE}")
    for key, tenant in given.items():
        if not key.strip() or not isinstance(tenant, str) or not tenant.strip():
            raise ValueError(
                f"R1VOICE_API_KEYS: each key and tenant must be a non-empty string, like {EXAMPLE}"
            )
        if key in keys:
            raise ValueError("R1VOICE_API_KEYS repeats R1VOICE_API_KEY: give each key once")
        keys[key] = tenant
    return keys


def tenant_of(scope: MutableMapping[str, Any]) -> str | None:
    """The tenant a request authenticated as (None: the server needs no key)."""
    tenant = scope.get(TENANT)
    return tenant if isinstance(tenant, str) else None


def by_key(scope: MutableMapping[str, Any]) -> bool:
    """Whether the request offered an API key itself (not a client secret)."""
    return TENANT in scope and not scope.get(BY_SECRET)
