"""Policy on routes: `authorize` with an AuthZEN PDP, identities per issuer, route options and
`require` rules. Shared fixtures are in the root conftest.py."""
