import JOSE

/// The status page's Shared Signals transmitters: each stream as this process sees it (made,
/// verified, its last event, its last error), and the revocations standing. Never the push
/// credential. The process's hub holds all of it (`SharedSignals.statusSection`).
struct SharedSignalsSection {
    struct TransmitterRow: Sendable {
        var name: String
        var issuer: String
        var streamID: String?
        var status: String
        var verified: Bool
        var keysLoaded: Bool
        /// Wall-clock seconds of the last SET applied; nil: none since the start.
        var lastEventAt: Double?
        /// Seconds from the last SET's `iat` to its apply here.
        var deliveryLag: Double?
        /// `push`, `poll`, or `push (google-risc)`.
        var delivery: String
        var lastError: String?
    }

    let transmitters: [TransmitterRow]
    let revocationsStanding: Int

    /// No transmitter and no revocation: the section before the main loop has a hub to read.
    init() {
        transmitters = []
        revocationsStanding = 0
    }

    init(_ hub: SharedSignalsHub) {
        transmitters = Self.transmitterRows(hub.all)
        revocationsStanding = hub.revocations().table.count
    }

    var section: StatusSection { StatusSection(name: "shared_signals", json: json, html: html) }

    static func transmitterRows(_ all: [String: SharedSignalsHub.Transmitter]) -> [TransmitterRow] {
        all.keys.sorted().compactMap { name in
            guard let t = all[name] else { return nil }
            return TransmitterRow(
                name: name, issuer: t.config.issuer, streamID: t.streamID, status: t.status, verified: t.verified,
                keysLoaded: t.keys != nil, lastEventAt: t.lastEventAt, deliveryLag: t.deliveryLag,
                delivery: t.config.delivery.rawValue + (t.config.profile == .googleRISC ? " (google-risc)" : ""),
                lastError: t.lastError)
        }
    }

    var html: String {
        guard !transmitters.isEmpty else { return "" }
        let e = LoginPages.escape
        var out = "<h2>Shared Signals</h2><table id=\"shared-signals\"><tr><th>Transmitter</th><th>Issuer</th>"
        out += "<th>Delivery</th><th>Stream</th><th>Status</th><th>Verified</th><th>Keys</th><th>Last event</th>"
        out += "<th>Delivery lag</th><th>Last error</th></tr>"
        for t in transmitters {
            let last = t.lastEventAt.map { StatusReport.timestamp($0).string ?? "" } ?? "none since the start"
            let lag = t.deliveryLag.map { String(format: "%.1f s", $0) } ?? "—"
            out += "<tr><td>\(e(t.name))</td><td>\(e(t.issuer))</td><td>\(e(t.delivery))</td>"
            out += "<td>\(e(t.streamID ?? "—"))</td>"
            out += "<td\(t.streamID == nil ? " class=\"bad\"" : "")>\(e(t.status))</td>"
            out += "<td>\(t.verified ? "yes" : "no")</td><td>\(t.keysLoaded ? "loaded" : "not loaded")</td>"
            out += "<td>\(e(last))</td><td>\(lag)</td><td>\(e(t.lastError ?? "—"))</td></tr>"
        }
        return out + "</table><p>Revocations standing: \(revocationsStanding)</p>"
    }

    var json: JSONValue {
        .object(
            JSONObject([
                "transmitters": .array(
                    transmitters.map { t in
                        .object(
                            JSONObject([
                                "name": .string(t.name), "issuer": .string(t.issuer),
                                "stream_id": t.streamID.map(JSONValue.string) ?? .null, "status": .string(t.status),
                                "verified": .bool(t.verified), "keys_loaded": .bool(t.keysLoaded),
                                "last_event_at": StatusReport.timestamp(t.lastEventAt),
                                "delivery": .string(t.delivery),
                                "delivery_lag_seconds": t.deliveryLag.map { .number(String(format: "%.3f", $0)) }
                                    ?? .null,
                                "last_error": t.lastError.map(JSONValue.string) ?? .null
                            ]))
                    }),
                "revocations": StatusReport.number(revocationsStanding)
            ]))
    }
}

/// The workers hold no part of the section: the hub is the process's.
struct SharedSignalsWorkerStatus: ModuleStatus {
    mutating func add(_ other: SharedSignalsWorkerStatus) {}
    func section(_ config: GatewayConfig) -> StatusSection? { SharedSignalsSection().section }
}
