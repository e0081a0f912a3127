import Yams

/// One step that runs once every section of a config is read: what derives from several
/// sections, a profile's rewrites of the routes, or a check across sections. nginx runs the
/// same after its parse (`postconfiguration`), and Envoy validates a bootstrap as a whole.
struct ConfigStep: Sendable {
    enum Kind: Sendable {
        /// Fills in a field from the sections read (never reports a problem of its own).
        case derive
        /// Rewrites the routes as a profile (FAPI 2.0) requires, refusing what it forbids.
        case profile
        /// Reports what the sections, each valid alone, cannot be together.
        case check
    }

    let name: String
    let kind: Kind
    let run: @Sendable (_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader) -> Void

    init(
        _ name: String, _ kind: Kind,
        _ run: @escaping @Sendable (_ cfg: inout GatewayConfig, _ top: [String: Node], _ r: ConfigReader) -> Void
    ) {
        self.name = name
        self.kind = kind
        self.run = run
    }
}

extension ConfigParser {
    /// The steps after the sections, in the order they run: a later step sees what an earlier
    /// one derived or rewrote (the profiles before the checks of the whole). The modules'
    /// profile steps run after the core's, their checks after the core's.
    static func afterSections(_ modules: ModuleCatalog) -> [ConfigStep] {
        derivedAndProfiles + modules.steps(.derive) + modules.steps(.profile) + checks + modules.steps(.check)
            + last
    }

    private static let derivedAndProfiles: [ConfigStep] = [
        .init("protected resource metadata", .derive) { cfg, top, r in
            cfg.protectedResources = protectedResources(cfg, top: top, r)
        },
        .init("FAPI 2.0 token routes", .profile) { cfg, top, r in
            fapi2Routes(&cfg.routes, issuers: cfg.issuers, routesNode: top["routes"], r)
        }
    ]

    private static let checks: [ConfigStep] = [
        .init("multi-tenant issuers", .check) { cfg, top, r in templateIssuerUses(cfg, top: top, r) },
        .init("roles on login routes", .check) { cfg, _, r in rolesOnLoginRoutes(cfg, r) }
    ]

    /// What reads the whole, once every rewrite and check is done.
    private static let last: [ConfigStep] = [
        .init("warnings", .derive) { cfg, top, _ in cfg.warnings = warnings(cfg, top: top) },
        .init("default listener", .derive) { cfg, top, _ in
            if cfg.listeners.isEmpty && top["listen"] == nil {
                cfg.listeners = [ListenerConfig(address: SocketAddress(host: "0.0.0.0", port: 8080), tls: nil)]
            }
        },
        .init("the whole config", .check) { cfg, top, r in ConfigValidation.gateway(cfg, top: top, r) }
    ]
}
