import Reactor

/// One step of an upstream's answer on its way back to the client, installed by the request
/// stage that needs it (`RequestContext.response.install`): the retry of a DPoP nonce
/// challenge, an MCP `tools/list`'s filter, a signed route's signer, a listen's end. The
/// answer flows down the chain part by part (head, body, trailers, end); each stage passes
/// a part on to `next`, holds it and sends something later, or replaces it; the client
/// writer (`ClientWriter`, which spools when the client is behind) is last. The shape is
/// nginx's output header and body filters (`ngx_http_next_header_filter`) and Envoy's
/// encoder filters (`StopIterationAndBuffer`, then `continueEncoding()`). A request with no
/// response stage has the writer alone: the plain path pays one call per part.
///
/// A class, not a protocol: every stage has a place in a chain (`next`, `exchange`), and a
/// part passes on by one dynamic call. Each method's default passes the part on.
class ResponseStage {
    /// Where in the chain a stage goes, nearest the upstream first: a nonce challenge is
    /// never filtered or signed; what is signed is what the client gets, filtered; a
    /// stream's end is the last thing the stream carries.
    enum Position: Int, Comparable {
        case upstreamRetry, content, signature, streamEnd, writer

        static func < (a: Position, b: Position) -> Bool { a.rawValue < b.rawValue }
    }

    let position: Position
    /// The stage after this one (the writer last), set when the chain is linked. Unowned: the
    /// exchange holds every stage of its chain, and a stage only runs while it does.
    unowned(unsafe) var next: ResponseStage! = nil
    /// What the stage may ask of the exchange it is in, set when the chain is linked. A
    /// closure that outlives the call it was made in (a PDP's answer, a timer) holds the
    /// exchange itself, or is cancelled by `finished()`.
    unowned(unsafe) var exchange: (any ResponseControl)! = nil

    init(position: Position) {
        self.position = position
    }

    /// Before each upstream call the answer may come from (the first, and a second try):
    /// what the stage needs of the request (an `Accept-Encoding`, a bound on silences).
    func willSend(_ request: inout UpstreamCall.Request, to pool: UpstreamPool) {}

    /// The answer's head, with its body's length when known.
    func head(_ head: HTTPResponseHead, bodyLength: UInt64?) { next.head(head, bodyLength: bodyLength) }

    func body(_ chunk: BodyChunk) { next.body(chunk) }

    /// An HTTP/2 upstream's trailer section (gRPC's `grpc-status`).
    func trailers(_ fields: HTTP1Fields) { next.trailers(fields) }

    /// The answer is whole; `detail`: why it ends, if not because the upstream ended it (the
    /// access log's `reason`).
    func end(detail: String? = nil) { next.end(detail: detail) }

    /// The exchange has ended (answered, cut, or the client gone): timers stop here.
    func finished() {}

    /// Links `stages` (in chain order) to one another and to `last`, each answering to
    /// `control`; returns where an answer's parts go first.
    static func link(_ stages: [ResponseStage], to last: ResponseStage, control: any ResponseControl) -> ResponseStage {
        for (index, stage) in stages.enumerated() {
            stage.next = index + 1 < stages.count ? stages[index + 1] : last
            stage.exchange = control
        }
        return stages.first ?? last
    }
}

/// What a response stage may ask of the exchange whose answer it handles (`ProxyExchange`;
/// a recording stand-in in the unit tests).
protocol ResponseControl: AnyObject {
    var services: WorkerServices { get }
    var context: RequestContext { get }
    /// The exchange has ended: a late callback (a PDP's answer, a timer) does nothing.
    var isDone: Bool { get }
    /// The client has heard the head: a refusal can only cut the connection now.
    var headSent: Bool { get }
    /// Stops reading the upstream until `releaseUpstream()` (a stage waiting on a PDP).
    func holdUpstream()
    func releaseUpstream()
    /// Sends the request again, on `pool` (a DPoP nonce challenge answered): its answer
    /// comes down the same chain.
    func sendAgain(_ request: consuming UpstreamCall.Request, on pool: UpstreamPool)
    /// Leaves the upstream: no more of its answer is read (a stream the gateway ends).
    func leaveUpstream()
    /// Nothing has been sent: the upstream is left and the client gets `response` instead (a
    /// held answer that cannot go on: 502; a stream whose time is up: 504). `upstreamError`:
    /// the kind counted against the upstream, when it is to blame.
    func answerInstead(_ response: GatewayResponse, upstreamError: String?)
    /// The head is out: the upstream is left and the connection cut, the only honest signal
    /// left (`warning` logged, `upstreamError` counted, the log line's status 502).
    func cutAnswer(upstreamError: String, warning: String, detail: String)
}

/// What the gateway does to the upstream's answer on its way back, as the request's stages
/// set it (a fresh `DPoP-Nonce`, session cookies the upstream may not touch, the response
/// stages). Every proxied response reads it (`ClientWriter.clientFields`).
struct ResponseEdits {
    /// Fields the gateway adds after the upstream's.
    var added: [(String, String)] = []
    /// Upstream fields that must not reach the client: on a route where the gateway checks
    /// DPoP, the upstream's own `DPoP-Nonce` would send clients nonces it never issued.
    var dropped: [String] = []
    /// On session routes: the gateway's cookie names, which the upstream may not set.
    var ownCookies: Set<String> = []
    /// The response stages, in chain order (nearest the upstream first).
    private(set) var stages: [ResponseStage] = []

    /// Puts `stage` in the chain at its position (after those of the same position).
    mutating func install(_ stage: ResponseStage) {
        let at = stages.firstIndex { $0.position > stage.position } ?? stages.endIndex
        stages.insert(stage, at: at)
    }

    /// Hands the stages over to the exchange that runs them (the request keeps none).
    mutating func takeStages() -> [ResponseStage] {
        defer { stages = [] }
        return stages
    }
}
