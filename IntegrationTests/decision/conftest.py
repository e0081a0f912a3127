"""Decision mode behind real ingresses (nginx, Caddy) and Envoy's ext_authz (gRPC service,
protos, recipes). Shared fixtures are in the root conftest.py."""
