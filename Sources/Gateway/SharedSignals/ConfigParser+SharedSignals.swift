import Foundation
import OAuth
import Yams

/// The `shared_signals` section (TransmitterConfig.swift), and the checks that need the
/// whole config: a push path no other endpoint or route answers, a revocation that outlives
/// the sessions it may end.
extension ConfigParser {
    static func sharedSignals(_ node: Node?, _ cfg: GatewayConfig, _ r: ConfigReader) -> [String: TransmitterConfig] {
        guard let node, let m = r.mapping(node, path: "shared_signals", section: nil) else { return [:] }
        let context = ConfigContext(cfg: cfg, r: r)
        var all: [String: TransmitterConfig] = [:]
        for (name, entry) in m {
            let p = "shared_signals.\(name)"
            guard APIKeyEntry.isValidID(name) else {
                r.problem(p, entry, "a transmitter's name is 1 to 64 of A-Z a-z 0-9 _ -")
                continue
            }
            guard let f = r.mapping(entry, path: p, section: .transmitter) else { continue }
            var d = TransmitterDraft(t: TransmitterConfig(name: name), node: entry)
            TransmitterConfig.keyTable.read(f, into: &d, path: p, context)
            transmitter(&d, path: p, issuers: cfg.issuers, r)
            all[name] = d.t
        }
        return all
    }

    /// The checks between a transmitter's keys: what its delivery needs and refuses, what its
    /// profile defaults.
    private static func transmitter(
        _ d: inout TransmitterDraft, path p: String, issuers: [String: IssuerConfig], _ r: ConfigReader
    ) {
        if d.t.profile == .googleRISC, d.issuer == nil { d.t.issuer = TransmitterConfig.Profile.googleIssuer }
        if d.issuer == nil && d.t.profile != .googleRISC { r.problem("\(p).issuer", d.node, "is required") }
        if d.issuers == nil { r.problem("\(p).issuers", d.node, "is required") }
        if d.t.profile == .googleRISC, d.t.delivery == .poll {
            r.problem("\(p).delivery", d.delivery, "Google's RISC delivers by push only")
        }
        switch d.t.delivery {
        case .push:
            if d.endpointURL == nil { r.problem("\(p).endpoint_url", d.node, "is required for push delivery") }
            if let n = d.pollInterval { r.problem("\(p).poll_interval", n, "goes with delivery: poll") }
        case .poll:
            // The transmitter names the poll endpoint; the SETs' `aud` has no URL to default to.
            if let n = d.endpointURL { r.problem("\(p).endpoint_url", n, "goes with delivery: push") }
            if d.audience == nil { r.problem("\(p).audience", d.node, "is required for poll delivery") }
        }
        googleProfile(&d, path: p, issuers: issuers, r)
    }

    /// `auth:` — one of a bearer file, a client credentials grant, a Google service account.
    static func transmitterAuth(_ node: Node, path p: String, _ c: ConfigContext) -> TransmitterConfig.TransmitterAuth {
        let r = c.r
        guard let f = r.mapping(node, path: p, section: .transmitterAuth) else { return .none }
        var d = TransmitterAuthDraft()
        TransmitterConfig.authKeyTable.read(f, into: &d, path: p, r)
        if let account = d.serviceAccountFile {
            if d.bearerFile != nil || d.grant.client != nil {
                r.problem(p, node, "give one of bearer_file, client and service_account_file")
            }
            guard let s = account.value else { return .none }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            switch GoogleServiceAccount.read(full) {
            case .success(let account): return .serviceAccount(account)
            case .failure(let e): r.problem("\(p).service_account_file", account.node, e.description)
            }
            return .none
        }
        switch (d.bearerFile, d.grant.client) {
        case (.some, .some):
            r.problem(p, node, "give bearer_file or client, not both")
        case (let b?, nil):
            for (key, n) in [("scope", d.grant.scopeNode), ("token_endpoint", d.grant.tokenEndpoint?.node)] {
                guard let n else { continue }
                r.problem("\(p).\(key)", n, "goes with client: NAME")
            }
            guard let s = b.value else { return .none }
            let full = s.hasPrefix("/") ? s : "\(r.baseDirectory)/\(s)"
            guard case .success = UpstreamSecretFile.read(full) else {
                r.problem("\(p).bearer_file", b.node, "cannot read \(full), or it holds no token")
                return .none
            }
            return .bearerFile(full)
        case (nil, .some):
            if let grant = credentialsGrant(
                d.grant, node: node, clients: c.cfg.clients, issuers: c.cfg.issuers, path: p, r)
            {
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
        _ d: inout TransmitterDraft, path p: String, issuers: [String: IssuerConfig], _ r: ConfigReader
    ) {
        guard d.t.profile == .googleRISC else {
            d.t.audiences = d.t.audience.isEmpty ? [] : [d.t.audience]
            return
        }
        if d.audience != nil {
            d.t.audiences = [d.t.audience]
        } else {
            d.t.audiences = Set(d.t.issuers.flatMap { issuers[$0]?.audiences ?? [] })
            if d.t.audiences.isEmpty, !d.t.issuers.isEmpty {
                r.problem(
                    "\(p).audience", d.issuers,
                    "Google's SETs name the app's OAuth client IDs: give audience, or audiences on the issuers")
            }
        }
        for url in Array(d.t.issuerURLs) where !url.hasSuffix("/") {
            d.t.issuerURLs.insert(url + "/")
            d.t.issuerNames[url + "/"] = d.t.issuerNames[url]
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
            if let owner = taken[t.endpointPath] {
                let path = "shared_signals.\(name).endpoint_url"
                r.problem(
                    path, ConfigKeyPath.node(at: path, in: top),
                    "its path \(t.endpointPath) is \(owner)'s too; give the transmitter a path of its own")
            }
            taken[t.endpointPath] = "shared_signals.\(name)"
        }
        // With Redis, replicas share the revocations sealed under `session.keys` and accept
        // each other's push credential: a per-process key would make neither work.
        if case .redis = cfg.store, !cfg.sharedSignals.isEmpty, cfg.session.keys.isEmpty {
            r.problem(
                "shared_signals", ConfigKeyPath.node(at: "shared_signals", in: top),
                "with a redis store, session.keys must be set: every replica seals and opens the revocations with them")
        }
    }
}
