import Foundation
import Logging
import Reactor

/// The certificates of every TLS listener: loaded at start, read again on SIGHUP and
/// whenever their files change, which a poll of the files' identity notices (`stat`
/// follows symlinks, so a Kubernetes Secret volume's `..data` swap counts as a change). A
/// pair that cannot be loaded is refused with a log line and a metric, and the last good
/// one keeps serving; new handshakes get a new pair, open connections keep theirs.
/// Lives on the main loop.
final class ListenerCertificates {
    struct Listener {
        let address: SocketAddress
        let context: TLSContext
        let files: [TLSCertificateFiles]
        /// Mutual TLS: the client CAs and CRLs, read again with the certificates.
        let clients: ClientCertificates?
        let watchInterval: Double?
        var served: [ServedCertificate]
        /// The files' identity when last loaded or tried: a change is tried once (a pair
        /// half-written is tried again when its other file lands).
        var stamp: [FileStamp]
    }

    private(set) var listeners: [Listener] = []
    private var timers: [LoopTimer] = []
    private var reloads = 0
    private var refusals = 0
    private let log: Logger

    /// Builds each TLS listener's context and loads its certificates; throws (naming the
    /// listener and the file) if one cannot be. `contexts` has nil for plain listeners.
    init(config: [ListenerConfig], log: Logger) throws {
        self.log = log
        for l in config {
            guard let tls = l.tls else { continue }
            do {
                let context = try TLSContext(profile: tls.profile, http2: l.http2)
                let stamp = Self.stamps(tls.certificates, tls.clients)
                let served = try context.serve(tls.certificates)
                if let clients = tls.clients {
                    try context.trustClients(caFile: clients.caFile, crlFile: clients.crlFile)
                    context.verifyClients(required: clients.required)
                }
                listeners.append(
                    Listener(
                        address: l.address, context: context, files: tls.certificates, clients: tls.clients,
                        watchInterval: tls.watchInterval, served: served, stamp: stamp))
            } catch {
                throw ReactorError("listen \(l.address): \(error)")
            }
        }
    }

    /// The context of the listener at `address`, if it has TLS.
    func context(for address: SocketAddress) -> TLSContext? {
        listeners.first { $0.address == address }?.context
    }

    /// Polls each listener's files at its `watch:` interval from now on.
    func watch(loop: EventLoop) {
        for (i, l) in listeners.enumerated() {
            guard let interval = l.watchInterval else { continue }
            timers.append(LoopTimer(loop: loop, seconds: interval, repeating: true) { [weak self] in self?.reload(i) })
        }
    }

    /// Loads every listener's certificates again (SIGHUP).
    func reloadAll() {
        for i in listeners.indices { reload(i, force: true) }
    }

    /// Loads a listener's certificates again if its files changed since they were last tried
    /// (or always, `force`).
    private func reload(_ i: Int, force: Bool = false) {
        let stamp = Self.stamps(listeners[i].files, listeners[i].clients)
        guard force || stamp != listeners[i].stamp else { return }
        listeners[i].stamp = stamp
        do {
            // The client CAs first: a CRL that cannot be read keeps the old certificates too,
            // so the log names one refusal and nothing half-changed.
            if let clients = listeners[i].clients {
                try listeners[i].context.trustClients(caFile: clients.caFile, crlFile: clients.crlFile)
            }
            let served = try listeners[i].context.serve(listeners[i].files)
            reloads += 1
            log.info(
                "TLS certificates loaded",
                metadata: [
                    "listen": .string("\(listeners[i].address)"),
                    "sha256": .array(served.map { .string($0.fingerprint) })
                ])
            listeners[i].served = served
        } catch {
            refusals += 1
            log.error(
                "TLS certificates refused; the last good ones keep serving",
                metadata: ["listen": .string("\(listeners[i].address)"), "error": .string("\(error)")])
        }
    }

    /// Certificates that expire within `window` seconds of `now`, as "file (date)".
    func expiring(now: Double, within window: Double = 7 * 86400) -> [String] {
        listeners.flatMap(\.served).filter { $0.notAfter - now < window }.map {
            "\($0.files.certFile) (\(Date(timeIntervalSince1970: $0.notAfter).formatted(.iso8601)))"
        }
    }

    var metricsText: String {
        guard !listeners.isEmpty else { return "" }
        var out = PrometheusText()
        out.family(
            "tokengate_tls_certificate_not_after_seconds", .gauge,
            help: "When each served listener certificate expires (notAfter, seconds since the epoch).")
        for l in listeners {
            for c in l.served {
                out.sample(
                    "tokengate_tls_certificate_not_after_seconds",
                    [("listen", "\(l.address)"), ("file", c.files.certFile)],
                    Int(c.notAfter))
            }
        }
        out.family(
            "tokengate_tls_certificate_reloads_total", .counter,
            help: "Listener certificate loads after start, by result (refused: the last good ones kept serving).")
        out.sample("tokengate_tls_certificate_reloads_total", [("result", "loaded")], reloads)
        out.sample("tokengate_tls_certificate_reloads_total", [("result", "refused")], refusals)
        return out.text
    }

    private static func stamps(_ files: [TLSCertificateFiles], _ clients: ClientCertificates?) -> [FileStamp] {
        let own = [clients?.caFile, clients?.crlFile].compactMap { $0 }.map(FileStamp.init(path:))
        return files.flatMap { [FileStamp(path: $0.certFile), FileStamp(path: $0.keyFile)] } + own
    }
}
