"""What the integration tests run against and talk with: upstreams, a real authorization
server, clients, fault proxies, ingress proxies, a PKI. Imported as `support.x`; pytest puts
IntegrationTests/ on the path, and so do the bench scripts that borrow from here."""
