import Foundation
import Reactor

@testable import Gateway

/// One request routed on a test worker and stopped before its route's chain runs, so a
/// single stage can be run on it and its outcome read (`run`), or the chain resumed from any
/// point. The answer, if any, is read back from the in-memory transport.
struct StageHarness {
    let worker: Worker
    let request: RoutedRequest
    let transport: InMemoryTransport

    /// Routes `target` on `worker` (its route's proxied chain; `decision` for a verdict's).
    init(
        _ worker: Worker, _ method: String = "GET", _ target: String,
        fields: [(name: String, value: String)] = [("Host", "app.example")], body: [UInt8]? = nil
    ) throws {
        self.worker = worker
        let (exchange, transport) = InMemoryTransport.exchange(method, target, fields: fields, body: body)
        let services = worker.services
        worker.metrics.inflight += 1
        exchange.responder.observer = worker
        // The host as the request pipeline normalizes it from the request's Host.
        let host = fields.first { $0.name.lowercased() == "host" }.flatMap { HostNormalizer.normalize($0.value) }
        let ctx = TrustEntry(services: services).context(exchange, trusted: false, host: host ?? "a", start: 0)
        guard
            case .forward(let plan, let path, let query, let forwarding) = RouteResolver.prepare(
                exchange.head, peerTrusted: false, policy: services.requestPolicy)
        else { throw HarnessError.notRouted }
        ctx.place(path: path, route: plan.name, routeID: plan.metricID, parameters: plan.parameters(in: path))
        request = RoutedRequest(
            exchange: exchange, context: ctx, path: path, query: query, forwarding: forwarding, services: services)
        self.transport = transport
    }

    enum HarnessError: Error { case notRouted }

    /// The route's first stage of type `S`.
    func stage<S: Stage>(_ type: S.Type) -> S? {
        request.plan.proxyStages.lazy.compactMap { $0 as? S }.first
    }

    /// The names of the route's stages, in order.
    var chain: [String] { request.plan.proxyStages.map { String(describing: type(of: $0)) } }
    var decisionChain: [String] { request.plan.decisionStages.map { String(describing: type(of: $0)) } }

    /// A stage's outcome, with an answer it returned written to the transport as the chain
    /// would write it. The chain goes on from the stage after it when the stage resumes it.
    @discardableResult
    func run(_ stage: some Stage) -> StageOutcome {
        if let index = request.plan.proxyStages.firstIndex(where: { $0 === stage }) { request.next = index + 1 }
        let outcome = stage.run(request)
        if case .answer(let response, let close) = outcome { request.answer(response, close: close) }
        return outcome
    }

    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(transport.body))) as? [String: Any] ?? [:]
    }
}

extension StageOutcome {
    var proceeds: Bool {
        if case .proceed = self { return true }
        return false
    }
    var suspends: Bool {
        if case .suspend = self { return true }
        return false
    }
    var answerStatus: Int? {
        if case .answer(let r, _) = self { return r.status }
        return nil
    }
}
