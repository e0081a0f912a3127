@testable import Gateway

/// The configs the stage tests route on: one route per kind of chain.
enum PipelineConfigs {
    static let yaml = """
        listen: 127.0.0.1:1
        admin_listen: "off"
        workers: 1
        public_url: https://app.example
        limits: { max_body_size: 1024 }
        session:
          keys: ["q2GrNq1J0Ai8sZt4Ix0SbZnq3uMfvKdGJ8Yy6uGc2eE="]
        issuers:
          one: { issuer: "https://idp.one", jwks_file: "/dev/null", audiences: [api] }
          corp: { issuer: "http://idp.example", discovery: true, audiences: [api] }
        clients:
          web: { issuer: corp, client_id: web, auth: client_secret_post, secret: "0123456789abcdef0123456789abcdef", request_mode: plain }
          ext: { issuer: corp, client_id: ext, auth: client_secret_post, secret: "fedcba9876543210fedcba9876543210", request_mode: plain }
        upstreams:
          app: { url: "http://127.0.0.1:9", max_connections: 1, max_pending: 0 }
        routes:
          - name: public
            match: { path_prefix: /public/ }
            upstream: app
            auth: none
          - name: api
            match: { path_prefix: /api/ }
            upstream: app
            auth: bearer
            issuers: [one]
            cors_preflight: allow
            headers: { X-User: sub }
          - name: mcp
            match: { path_prefix: /mcp }
            upstream: app
            auth: bearer
            issuers: [one]
            mcp: { default: allow }
          - name: web
            match: { path_prefix: /web/ }
            upstream: app
            auth: login
            clients: [web, ext]
        """
}
