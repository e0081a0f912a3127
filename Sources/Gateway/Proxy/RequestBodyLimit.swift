import Reactor

/// What bounds a proxied request body. Any body: `limits.max_body_size`, whole. A gRPC or
/// gRPC-Web call (`GRPCCall`, by its `content-type`): `limits.grpc_max_message_size` per
/// message instead, read from the body's framing as it streams — a client stream lasts as long
/// as the call and is never held whole, so its total says nothing of what it costs the gateway
/// (gRPC's own servers bound each message alike, and 4 MiB, their default, is then a message
/// the gateway takes whatever `max_body_size` says). A gRPC body the gateway reads whole
/// first (request buffering) keeps a total too: the larger of `max_body_size` and one message
/// at its limit.
enum RequestBodyLimit {
    /// `readWhole`: the body is read whole before it goes upstream (`RequestBufferingStage`).
    static func of(_ fields: HTTP1Fields, limits: Limits, readWhole: Bool) -> StreamedBodyLimit {
        let text: Bool
        switch GRPCCall(fields) {
        case nil: return .server
        case .grpc: text = false
        case .grpcWeb(let isText, _): text = isText
        }
        let messages = GRPCMessageLimit(maxMessage: limits.grpcMaxMessageSize, text: text)
        return StreamedBodyLimit(
            total: readWhole ? max(limits.maxBodySize, messages.wireBytes) : .max, messages: messages)
    }
}
