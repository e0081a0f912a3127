import MessageSignatures

extension SignatureStage {
    /// The second part: a covered `Content-Digest` compared with the body read whole, before
    /// the upstream hears of it (RFC 9530 §2; FAPI 2.0 Message Signing §5.4). A body that
    /// streams (read as it comes) cannot be checked first, so it is refused rather than sent
    /// on unchecked.
    func checkDigest(_ request: RoutedRequest, _ admission: Admission) -> StageOutcome {
        guard let digest = request.context.state[VerifiedRequestSignature.Key.self]?.contentDigest else {
            return .proceed
        }
        let contexts = digest.contexts()
        let body = request.spooledBody ?? admission.body ?? request.exchange.body
        switch BodyBytes.scan(body, into: contexts) {
        case .read: break
        case .unreadable:
            return .answer(
                ErrorResponse.make(
                    503, error: "temporarily_unavailable", description: "the request body cannot be read back",
                    requestID: request.context.requestID, detail: "content digest: spool file unreadable"))
        case .streams:
            return .answer(
                refusal(
                    MessageSignatureError(
                        .digestMismatch, "the content digest cannot be checked on a body that streams"),
                    request))
        }
        guard digest.matches(contexts) else {
            return .answer(
                refusal(MessageSignatureError(.digestMismatch, "Content-Digest does not match the content"), request))
        }
        return .proceed
    }

    /// 401 with what the route wants signed (RFC 9421 §5.1), and the rule that failed. The
    /// challenge names the `Signature` scheme (RFC 9110 §15.5.2 wants one on every 401).
    func refusal(_ error: MessageSignatureError, _ request: RoutedRequest) -> GatewayResponse {
        let ctx = request.context
        refusals.refused(policy: policy.name, reason: error.reason.rawValue)
        return ErrorResponse.make(
            401, error: "invalid_signature", description: error.detail, requestID: ctx.requestID,
            headers: [
                ("WWW-Authenticate", "Signature error=\"invalid_signature\""),
                ("Accept-Signature", AcceptSignature.field(label: SignaturePolicy.acceptLabel, policy.requirements))
            ],
            detail: "verify_signature \(policy.name): \(error.reason.rawValue): \(error.detail)")
    }
}
