import Reactor
import Yams

extension DecisionConfig {
    /// `secret` or `secret_file`: what the ingress sends in `X-Tokengate-Decision-Secret`.
    static let sharedSecret = ConfigKeyGroup<DecisionConfig, ConfigReader>.secret("secret") { d, secret, node, p, r in
        // A header value the ingress can send as it is, long enough not to be guessed.
        if secret.utf8.count < 16 || !secret.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            r.problem(
                "\(p).secret", node,
                "must be at least 16 visible ASCII characters (no spaces), e.g. `openssl rand -hex 32`")
        } else {
            d.secret = Array(secret.utf8)
        }
    }

    /// The keys of `decision:` as a mapping, each said once: its reference row (type and
    /// default, checked against `DecisionConfig()` by ConfigReferenceTests) and its reader.
    /// `secret` and `secret_file` (one or the other) are read together, the others each alone,
    /// in this order. The endpoints against each other are ConfigValidation's.
    static let keyTable = ConfigKeyTable<DecisionConfig, ConfigReader>([
        .init("enabled", type: "bool", default: "`true` once `decision` is present") { d, n, p, r in
            if let b = r.bool(n, path: p) { d.enabled = b }
        },
        .init(
            "path", type: "normalized path, or `off`", default: "`/_tokengate/auth`",
            checkedBy: ConfigDefault.text(DecisionConfig().path ?? "off")
        ) { d, n, p, r in
            if let v = endpoint(n, p, r) { d.path = v }
        },
        .init(
            "forward_auth_path", type: "normalized path, or `off`", default: "`/_tokengate/forward-auth`",
            checkedBy: ConfigDefault.text(DecisionConfig().forwardAuthPath ?? "off")
        ) { d, n, p, r in
            if let v = endpoint(n, p, r) { d.forwardAuthPath = v }
        },
        .init(
            "ext_authz_prefix", type: "normalized path, or `off`", default: "`/_tokengate/ext_authz`",
            checkedBy: ConfigDefault.text(DecisionConfig().extAuthzPrefix ?? "off")
        ) { d, n, p, r in
            if let v = endpoint(n, p, r) { d.extAuthzPrefix = v }
        },
        .init(
            "allow_status", type: "`200` or `202`", default: "`200`",
            checkedBy: ConfigDefault.number(DecisionConfig().allowStatus)
        ) { d, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if v == "200" || v == "202" {
                d.allowStatus = v == "200" ? 200 : 202
            } else {
                r.problem(p, n, "must be 200 or 202")
            }
        },
        .init(
            "login_response", type: "`auto`, `401` or `302`", default: "`auto`",
            checkedBy: ConfigDefault.text(DecisionConfig().loginResponse.rawValue)
        ) { d, n, p, r in
            guard let v = r.string(n, path: p) else { return }
            if let l = DecisionConfig.LoginResponse(rawValue: v) {
                d.loginResponse = l
            } else {
                r.problem(p, n, "must be auto, 401 (nginx: error_page 401 redirects) or 302 (Traefik, Caddy)")
            }
        },
        .init(
            "secret", type: "string, at least 16 visible ASCII characters", default: "none",
            reader: .group(sharedSecret)),
        .init("secret_file", type: "path", default: "none", reader: .group(sharedSecret)),
        .init(
            "ext_authz_grpc", type: "bool", default: "`false`",
            checkedBy: ConfigDefault.bool(DecisionConfig().extAuthzGRPC)
        ) { d, n, p, r in
            if let b = r.bool(n, path: p) { d.extAuthzGRPC = b }
        }
    ])

    /// An endpoint: `.some(nil)` when switched off (`off`: an ingress style not in use is then
    /// no endpoint at all), `.some(path)`, or nil with the problem.
    private static func endpoint(_ n: Node, _ key: String, _ r: ConfigReader) -> String?? {
        guard let v = r.string(n, path: key) else { return nil }
        if v == "off" { return .some(nil) }
        guard case .success(let norm) = PathNormalizer.normalize(target: v), norm.path == v, norm.query == nil,
            v.count > 1, !v.hasSuffix("/")
        else {
            r.problem(
                key, n,
                "must be a normalized path starting with / (such as /_tokengate/auth), not / itself and without a trailing /"
            )
            return nil
        }
        // The recipes route /oauth2/ to tokengate publicly: a decision endpoint there would
        // answer clients (and hand them the verdict's identity headers).
        if v == "/oauth2" || v.hasPrefix("/oauth2/") {
            r.problem(
                key, n,
                "must not lie under /oauth2/, which the ingress routes to tokengate for everyone; use /_tokengate/… and keep it internal"
            )
        }
        return .some(v)
    }
}
