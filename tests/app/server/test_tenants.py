"""R1VOICE_API_KEYS: keys of tenants beside R1VOICE_API_KEY's "default"; a bad value
stops the server at its start, naming the variable and what to give."""

from __future__ import annotations

import pytest

from app.server.access import AccessPolicy, ClientSecrets
from app.server.tenants import tenant_keys
from app.settings import Settings


def test_each_key_names_its_tenant() -> None:
    settings = Settings(api_key="sk-main", api_keys='{"sk-a": "team-a", "sk-b": "team-b"}')
    assert tenant_keys(settings) == {"sk-main": "default", "sk-a": "team-a", "sk-b": "team-b"}
    assert tenant_keys(Settings(api_keys='{"sk-a": "team-a"}')) == {"sk-a": "team-a"}
    assert tenant_keys(Settings()) == {}
    # keys alone (no R1VOICE_API_KEY) still guard the routes
    assert AccessPolicy.from_settings(Settings(api_keys='{"sk-a": "a"}')).needs_key("/v1/models")


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("sk-a=team-a", "is not JSON"),
        ('["sk-a"]', "JSON object of key -> tenant"),
        ('{"sk-a": ""}', "non-empty string"),
        ('{"sk-a": 3}', "non-empty string"),
        ('{"sk-main": "x"}', "repeats R1VOICE_API_KEY"),
    ],
)
def test_a_bad_value_is_refused_naming_it(given: str, says: str) -> None:
    with pytest.raises(ValueError, match="R1VOICE_API_KEYS") as refused:
        AccessPolicy.from_settings(Settings(api_key="sk-main", api_keys=given))
    assert says in str(refused.value)


def test_a_client_secret_belongs_to_its_minting_keys_tenant() -> None:
    secrets = ClientSecrets()
    value, _ = secrets.mint(60, "team-b")
    assert secrets.tenant(value) == "team-b"
    assert secrets.tenant(value + "x") is None
    assert secrets.tenant(secrets.mint(60)[0]) == "default"
