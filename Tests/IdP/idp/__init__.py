"""fingerseal's local OAuth2/OIDC identity provider for tests (django-oauth-toolkit 3.4.1).

Test-only code: never imported by the product. Started by scripts/local-idp.
"""
