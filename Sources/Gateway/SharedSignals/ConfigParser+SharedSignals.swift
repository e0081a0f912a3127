import Foundation
import OAuth
import Yams

/// The `shared_signals` section (TransmitterConfig.swift), and the checks that need the
/// whole config: a push path no other endpoint or route answers, a revocation that outlives
/// the sessions it may end.
extension ConfigParser {
    static func sharedSignals(
        _ node: Node?, issuers: [String: IssuerConfig], clients: [String: ClientConfig], _ r: ConfigReader
    ) -> [String: TransmitterConfig] {
        guard let node, let m = r.mapping(node, path: "shared_signals", section: nil) else { return [:] }
        var all: [String: TransmitterConfig] = [:]
        for (name, entry) in m {
            let p = "shared_signals.\(name)"
            guard APIKeyEntry.isValidID(name) else {
                r.problem(p, entry, "a transmitter's name is 1 to 64 of A-Z a-z 0-9 _ -")
                continue
            }
            guard let f = r.mapping(entry, path: p, section: .transmitter) else { continue }
            var t = TransmitterConfig(name: name)
            TransmitterConfig.keyTable.read(f, into: &t, path: p, r)
            if t.profile == .googleRISC, f["issuer"] == nil { t.issuer = TransmitterConfig.Profile.googleIssuer }
            for key in ["issuer", "issuers"] where f[key] == nil && !(key == "issuer" && t.profile == .googleRISC) {
                r.problem("\(p).\(key)", entry, "is required")
            }
            if t.profile == .googleRISC, t.delivery == .poll {
                r.problem("\(p).delivery", f["delivery"], "Google's RISC delivers by push only")
            }
            switch t.delivery {
            case .push:
                if f["endpoint_url"] == nil { r.problem("\(p).endpoint_url", entry, "is required for push delivery") }
                if f["poll_interval"] != nil {
                    r.problem("\(p).poll_interval", f["poll_interval"], "goes with delivery: poll")
                }
            case .poll:
                // The transmitter names the poll endpoint; the SETs' `aud` has no URL to default to.
                if let n = f["endpoint_url"] { r.problem("\(p).endpoint_url", n, "goes with delivery: push") }
                if f["audience"] == nil { r.problem("\(p).audience", entry, "is required for poll delivery") }
            }
            if let n = f["issuers"] {
                for (i, issuer) in exchangeNames(n, path: "\(p).issuers", r).enumerated() {
                    guard let config = issuers[issuer] else {
                        r.problem(
                            "\(p).issuers[\(i)]", n,
                            "\"\(issuer)\" is not defined; defined: \(issuers.keys.sorted().joined(separator: ", "))")
                        continue
                    }
                    t.issuers.append(issuer)
                    for url in [config.issuer] + config.issuerAliases {
                        t.issuerURLs.insert(url)
                        t.issuerNames[url, default: []].append(issuer)
                    }
                }
            }
            if let n = f["auth"] {
                t.auth = transmitterAuth(n, path: "\(p).auth", issuers: issuers, clients: clients, r)
            }
            googleProfile(&t, f, path: p, issuers: issuers, r)
            all[name] = t
        }
        return all
    }

    private static func transmitterAuth(
        _ node: Node, path p: String, issuers: [String: IssuerConfig], clients: [String: ClientConfig],
        _ r: ConfigReader
    ) -> TransmitterConfig.TransmitterAuth {
        guard let f = r.mapping(node, path: p, section: .transmitterAuth) else { return .none }
        if let n = f["service_account_file"] {
            if f["bearer_file"] != nil || f["client"] != nil {
                r.problem(p, node, "give one of bearer_file, client and service_account_file")
            }
            guard let s = r.string(n, path: "\(p).service_account_file") else { return .none }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            switch GoogleServiceAccount.read(full) {
            case .success(let account): return .serviceAccount(account)
            case .failure(let e): r.problem("\(p).service_account_file", n, e.description)
            }
            return .none
        }
        switch (f["bearer_file"], f["client"]) {
        case (.some, .some):
            r.problem(p, node, "give bearer_file or client, not both")
        case (let b?, nil):
            for key in ["scope", "token_endpoint"] where f[key] != nil {
                r.problem("\(p).\(key)", f[key], "goes with client: NAME")
            }
            guard let s = r.string(b, path: "\(p).bearer_file") else { return .none }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard case .success = UpstreamSecretFile.read(full) else {
                r.problem("\(p).bearer_file", b, "cannot read \(full), or it holds no token")
                return .none
            }
            return .bearerFile(full)
        case (nil, .some):
            if let grant = credentialsGrant(f, node: node, clients: clients, issuers: issuers, path: p, r) {
                return .client(grant)
            }
        case (nil, nil):
            r.problem(p, node, "needs bearer_file: PATH, client: NAME or service_account_file: PATH")
        }
        return .none
    }

    /// The `aud` values a transmitter's SETs may carry. Google's RISC SETs name the app's
    /// OAuth client IDs, which are its `issuers`' audiences, and sign `iss` with a trailing
    /// slash its ID tokens lack: both spellings name the same issuer here.
    private static func googleProfile(
        _ t: inout TransmitterConfig, _ f: [String: Node], path p: String, issuers: [String: IssuerConfig],
        _ r: ConfigReader
    ) {
        guard t.profile == .googleRISC else {
            t.audiences = t.audience.isEmpty ? [] : [t.audience]
            return
        }
        if f["audience"] != nil {
            t.audiences = [t.audience]
        } else {
            t.audiences = Set(t.issuers.flatMap { issuers[$0]?.audiences ?? [] })
            if t.audiences.isEmpty, !t.issuers.isEmpty {
                r.problem(
                    "\(p).audience", f["issuers"],
                    "Google's SETs name the app's OAuth client IDs: give audience, or audiences on the issuers")
            }
        }
        for url in Array(t.issuerURLs) where !url.hasSuffix("/") {
            t.issuerURLs.insert(url + "/")
            t.issuerNames[url + "/"] = t.issuerNames[url]
        }
    }

    /// Each transmitter's push path is its own: no login endpoint, other transmitter or exact
    /// route has it (the gateway's own endpoints are answered before routing).
    static func checkSharedSignals(_ cfg: GatewayConfig, top: [String: Node], _ r: ConfigReader) {
        let login = cfg.login
        var taken: [String: String] = [
            login.startPath: "login.start_path", login.callbackPath: "login.callback_path",
            login.logoutPath: "login.logout_path", login.backchannelLogoutPath: "login.backchannel_logout_path",
            login.jwksPath: "login.jwks_path"
        ]
        for route in cfg.routes {
            if case .exact(let path) = route.match.path { taken[path] = taken[path] ?? "routes[\(route.index)]" }
        }
        for (name, t) in cfg.sharedSignals.sorted(by: { $0.key < $1.key }) where !t.endpointPath.isEmpty {
            let node = top["shared_signals"]?[name]?["endpoint_url"]
            if let owner = taken[t.endpointPath] {
                r.problem(
                    "shared_signals.\(name).endpoint_url", node,
                    "its path \(t.endpointPath) is \(owner)'s too; give the transmitter a path of its own")
            }
            taken[t.endpointPath] = "shared_signals.\(name)"
        }
        // With Redis, replicas share the revocations sealed under `session.keys` and accept
        // each other's push credential: a per-process key would make neither work.
        if case .redis = cfg.store, !cfg.sharedSignals.isEmpty, cfg.session.keys.isEmpty {
            r.problem(
                "shared_signals", top["shared_signals"],
                "with a redis store, session.keys must be set: every replica seals and opens the revocations with them")
        }
    }
}
