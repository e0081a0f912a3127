import JOSE
import MessageSignatures
import Reactor
import Yams

/// A route's `sign_response` (FAPI 2.0 Message Signing §5.5): the upstream's answer is held
/// whole (up to `max_bytes`), then sent with a `Content-Digest` (RFC 9530) and the gateway's
/// signature over `@status`, `content-type`, `content-digest`, the request's `@method` and
/// `@target-uri` (`;req`), and the request's own signature (`"signature";req;key=…`) when a
/// `verify_signature` on the route verified one. Streams are never held: an event stream,
/// gRPC, an upgrade, and a HEAD, 204 or 304 (no content) go as they come, unsigned.
final class ResponseSigningStage: KeyedStage {
    static let routeKey = ConfigKey<RouteConfig, RouteKeyContext>(
        "sign_response", type: "mapping: `{ key_file, keyid, components, tag }`", default: "none: answers not signed"
    ) { route, node, path, context in
        ConfigParser.routeResponseSigning(&route, node, path: path, context)
    }
    /// A route's setting of this stage: how its answers are signed (`RouteOptions.settings`).
    enum Settings: RouteSettingKey { typealias Value = MessageSigningConfig }
    static let position = StagePosition.beforeUpstream
    static var judgesDecisions: Bool { false }

    static func make(_ plan: RoutePlan, _ services: WorkerServices) -> ResponseSigningStage? {
        guard let signing = plan.route.options.settings[Settings.self] else {
            return nil
        }
        return ResponseSigningStage(signing: signing)
    }

    let signing: MessageSigningConfig

    init(signing: MessageSigningConfig) {
        self.signing = signing
    }

    func run(_ request: RoutedRequest) -> StageOutcome {
        guard request.head.method != .HEAD else { return .proceed }
        let message = SignatureStage.clientMessage(request, request.services)
        request.context.response.install(
            ResponseSigner(
                signing: signing, request: message,
                requestLabel: request.context.state[VerifiedRequestSignature.Key.self]?.label))
        return .proceed
    }
}

extension ComponentIdentifier {
    /// `"signature";req;key="LABEL"`: the request's signature under `label` (RFC 9421 §2.4).
    /// A label is a Structured Field key (lowercase letters, digits, `_-.*`): safe in a string.
    static func requestSignature(_ label: String) throws -> ComponentIdentifier {
        try ComponentIdentifier(config: "\"signature\";req;key=\"\(label)\"")
    }
}

extension ConfigParser {
    /// A route's `sign_response`.
    static func routeResponseSigning(_ route: inout RouteConfig, _ node: Node, path: String, _ context: RouteKeyContext)
    {
        guard let signing = messageSigning(node, path: path, forResponse: true, context.r) else { return }
        route.options.settings[ResponseSigningStage.Settings.self] = signing
    }
}

extension GatewayConfig {
    /// The keys routes sign their answers with (`sign_response`), once each by `keyid`: the
    /// gateway's JWKS publishes them.
    var responseSigningKeys: [MessageSigningConfig] {
        var seen: Set<String> = []
        return routes.compactMap {
            $0.options.settings[ResponseSigningStage.Settings.self]
        }
        .filter { seen.insert($0.keyid).inserted }
    }
}
